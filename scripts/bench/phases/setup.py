"""Before the measurements: the cube in the database, the topics the POSTs use, the run's facts."""
import json

from support.cli import Command
from support.database import database
from support.results import append


def load(uri, cube_path):
    """Replaces the icube collection with the cube file (extended JSON)."""
    from bson import json_util
    with open(cube_path) as cube:
        documents = json_util.loads(cube.read())
    db = database(uri)
    db.icube.delete_many({})
    db.icube.insert_many(documents)
    print("loaded %d channels into %s" % (db.icube.count_documents({}), db.name))


def topics(cube_path, sender):
    """The first Alert and the first Information subject whose access lists all admit `sender`."""
    with open(cube_path) as cube:
        channels = json.load(cube)
    found = {}
    for channel in channels:
        for area in channel["areas"]:
            for subject in area["subjects"]:
                lists = (channel["access"], area["access"], subject["access"])
                if all(not names or sender in names for names in lists):
                    found.setdefault(subject["opt"]["distribution"], subject["topic_key"])
    print(found["Alert"], found["Information"])


def prefill(uri, count):
    """Grows the message archive to `count` more messages: copies of the one stored (a new _id and msi_key each,
    relay state `sent`, so no relay sends them), as a school's archive after months of use."""
    import copy
    import time
    import bson
    db = database(uri)
    for _ in range(100):
        stored = db.message.find_one({})
        if stored:
            break
        time.sleep(0.2)
    else:
        raise SystemExit("prefill: no message is stored to copy")
    stored["relay"]["state"] = "sent"
    stored["relay"].pop("lease_owner", None)
    batch = []
    for index in range(int(count)):
        message = copy.deepcopy(stored)
        message["_id"], message["msi_key"] = bson.ObjectId(), bson.ObjectId()
        message["relay"]["seq"] = 1_000_000 + index
        batch.append(message)
        if len(batch) == 1000:
            db.message.insert_many(batch)
            batch = []
    if batch:
        db.message.insert_many(batch)
    print("the archive holds %d messages" % db.message.count_documents({}))


def meta(results, *pairs):
    """Records facts about the run (KEY=VALUE) for the table's header."""
    record = {"label": "meta"}
    record.update(pair.split("=", 1) for pair in pairs)
    append(results, record)


COMMANDS = [
    Command("load", load, "URI CUBE", "replace the icube collection with the cube file"),
    Command("topics", topics, "CUBE SENDER", "an Alert and an Information topic SENDER may send to"),
    Command("prefill", prefill, "URI COUNT", "grow the message archive by COUNT copies of the stored message"),
    Command("meta", meta, "RESULTS", "record facts about the run for the table", repeated="KEY=VALUE"),
]
