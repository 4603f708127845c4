"""What an insert into `message` costs the database for each set of indexes the archive has had.

Run by scripts/bench-archive.sh, once per shape on a database of its own (a SecantusDB process slows as it holds
more, so shapes measured one after another in one process are not comparable). Inserts BENCH_ARCHIVE_INSERTS
documents of a message's shape (default 3,000) with `insert_one` from 16 clients into a collection with the shape's
indexes and prints the database process's CPU per insert.

Shapes: `legacy` (the legacy hub's: `_id` alone), `now` (msi-hub's: the five indexes history and catch-up read, and
the outbox's), `before` (those and the five partial indexes of the rare queues, which now live in `message_queues`).
"""
import os
import sys
import time

import bson
import pymongo

from support.proc import cpu_ms, cpu_ticks
from support.threads import run_threads

HISTORY = [
    ([("msi_key", 1)], {"unique": True, "name": "msi_key"}),
    ([("topic_key", 1), ("timestamp", -1), ("_id", -1)], {"name": "topic_key.timestamp"}),
    ([("timestamp", -1), ("_id", -1)], {"name": "timestamp"}),
    ([("to.persons", 1), ("timestamp", 1), ("_id", 1)], {"name": "to.persons.timestamp"}),
    ([("to.groups", 1), ("timestamp", 1), ("_id", 1)], {"name": "to.groups.timestamp"}),
    ([("relay.state", 1), ("relay.due_at", 1)],
     {"name": "relay.state.due_at", "partialFilterExpression": {"relay.state": "pending"}}),
]
QUEUES = [
    ([("ack.next_at", 1)], {"name": "ack.next_at.due", "partialFilterExpression": {"ack.next_at": {"$gt": 0}}}),
    ([("banner", 1), ("timestamp", -1), ("_id", -1)],
     {"name": "banner.timestamp", "partialFilterExpression": {"banner": True}}),
    ([("approval.requested_at", 1)],
     {"name": "approval.awaiting", "partialFilterExpression": {"relay.state": "awaiting_approval"}}),
    ([("override.at", -1)], {"name": "override.to_review", "partialFilterExpression": {"override.reviewed": False}}),
    ([("pending_correction.expires_at", 1)],
     {"name": "pending_correction.expires_at", "partialFilterExpression": {"pending_correction": {"$exists": True}}}),
]
SHAPES = {"legacy": [], "now": HISTORY, "before": HISTORY + QUEUES}


def document(i):
    now = int(time.time() * 1000)
    return {"_id": bson.ObjectId(), "msi_key": bson.ObjectId(), "title": "Library closed", "desc": "",
            "message": "The library is closed on Friday (%d)" % i, "topic_key": "chan-area-subject%d" % (i % 50),
            "distribution": "Information", "urgency": "normal", "sender": "bench", "timestamp": now,
            "relay": {"state": "direct", "due_at": now, "attempts": 0}}


def main():
    port, pid, shape = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    inserts, clients = int(os.environ.get("BENCH_ARCHIVE_INSERTS", "3000")), 16
    collection = pymongo.MongoClient(port=port, directConnection=True, maxPoolSize=32).bench_archive.message
    for keys, options in SHAPES[shape]:
        collection.create_index(keys, **options)
    collection.insert_one(document(0))
    time.sleep(1)
    before = cpu_ticks(pid)

    def client():
        for i in range(inserts // clients):
            collection.insert_one(document(i))

    elapsed = run_threads(client, clients)
    time.sleep(1)
    spent = cpu_ms(cpu_ticks(pid) - before)
    done = inserts // clients * clients
    print("%-7s %2d indexes: %.3f ms of database CPU an insert, %.0f inserts/s" %
          (shape, len(SHAPES[shape]) + 1, spent / done, done / elapsed), flush=True)


if __name__ == "__main__":
    main()
