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


def meta(results, *pairs):
    """Records facts about the run (KEY=VALUE) for the table's header."""
    record = {"label": "meta"}
    record.update(pair.split("=", 1) for pair in pairs)
    append(results, record)


COMMANDS = [
    Command("load", load, "URI CUBE", "replace the icube collection with the cube file"),
    Command("topics", topics, "CUBE SENDER", "an Alert and an Information topic SENDER may send to"),
    Command("meta", meta, "RESULTS", "record facts about the run for the table", repeated="KEY=VALUE"),
]
