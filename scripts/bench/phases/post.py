"""POST /message beyond its wrk run: the database's own floor (POST's documents inserted straight by 16 clients),
every 201 durable, a message's database cost and relay lag until its outcome is on record, the drain before
the next phase; and the table's section comparing a message's cost with the floor (issue 14)."""
import json
import re
import threading
import time

from support.cli import Command
from support.database import database, unrelayed
from support.fake import arrivals, received
from support.proc import cpu_ms, cpu_ticks, load_average, settle
from support.results import append, number, percentile, ratio, verdict

LOREM = ("Buses on the 7 and 12 routes leave from the sports hall car park this afternoon because of "
         "roadworks on Station Road. Staff will be there from 15:05 to show the way; students who walk home "
         "are not affected. Please tell your parents or carers if they collect you by car.")


def floor_document(index, alert, info, legacy=False):
    """A document as POST /message stores it (see post-message.lua and RelayPlan), without a lease; `legacy`: as the
    legacy hub stored it (no `relay`)."""
    from bson import ObjectId
    distribution = "Alert" if index % 2 == 0 else "Information"
    now = int(time.time() * 1000)
    components = {"notification": {"state": "pending", "attempts": 0}} if distribution == "Alert" else {}
    components["data"] = {"state": "pending", "attempts": 0}
    document = {
        "_id": ObjectId(), "msi_key": ObjectId(), "title": "Bus stop moved today",
        "desc": "Buses leave from the sports hall car park at 15:15", "message": LOREM,
        "topic_key": alert if distribution == "Alert" else info, "distribution": distribution,
        "sender": "bench-sender", "timestamp": now,
    }
    if not legacy:
        document["relay"] = {"state": "pending", "due_at": now, "deadline_at": now + 6 * 3600 * 1000, "attempts": 0,
                             "components": components}
    return document


def floor(results, uri, db_pid, seconds, alert, info, kind="message", clients=16):
    """16 clients inserting POST's documents one insert_one each, straight into a copy of `message` (`kind`
    "message": its indexes), or the legacy hub's documents into a collection with the legacy's one index, `_id`
    (`kind` "legacy": what a message cost the legacy hub's database at least, issue 42).

    The copy stays until the bench's database is thrown away. Dropping it here made every insert after it cost the
    database five times as much: SecantusDB keeps every index in one WiredTiger table, and a later insert's
    unique-key checks then spent their time stepping the index cursor on from where the dropped entries had been
    (py-spy: 65 % of the database's time in `Storage._entry_taken`, at its `next()`, during the POST run). POST
    /message after the drop: 173-188 req/s, 7.1-7.4 ms of database CPU a message; without it: 496-507 req/s,
    1.8 ms; with no floor phase at all: 515 req/s, 1.6 ms."""
    import pymongo
    db = database(uri)
    legacy = kind == "legacy"
    name = "bench_legacy_floor" if legacy else "bench_floor"
    db[name].drop()
    for index_name, spec in ({} if legacy else db.message.index_information()).items():
        if index_name == "_id_":
            continue
        options = {"name": index_name, "unique": spec.get("unique", False)}
        if "partialFilterExpression" in spec:
            options["partialFilterExpression"] = spec["partialFilterExpression"]
        db[name].create_index(spec["key"], **options)
    latencies = []
    lock = threading.Lock()
    deadline = time.time() + float(seconds)

    def client(number):
        collection = pymongo.MongoClient(uri, maxPoolSize=1).get_default_database()[name]
        mine, index = [], number
        while time.time() < deadline:
            document = floor_document(index, alert, info, legacy=legacy)
            started = time.perf_counter()
            collection.insert_one(document)
            mine.append((time.perf_counter() - started) * 1000.0)
            index += clients
        with lock:
            latencies.extend(mine)

    threads = [threading.Thread(target=client, args=(number,)) for number in range(clients)]
    db_before, started = cpu_ticks(int(db_pid)), time.time()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    elapsed, db_acknowledged = time.time() - started, cpu_ticks(int(db_pid))
    settle(int(db_pid))
    db_after = cpu_ticks(int(db_pid))
    result = {"label": "legacy floor" if legacy else "floor", "inserts": len(latencies), "rps": len(latencies) / elapsed,
              "p50": percentile(latencies, 0.50), "p99": percentile(latencies, 0.99),
              "db_cpu_ms": cpu_ms(db_after - db_before),
              "db_cpu_ms_after": cpu_ms(db_after - db_acknowledged)}
    result["db_cpu_ms_per_insert"] = result["db_cpu_ms"] / max(len(latencies), 1)
    append(results, result)
    print("%s: %d insert_one by %d clients: %.0f inserts/s, p50 %.2f ms, p99 %.2f ms, "
          "database CPU %.3f ms per insert "
          "(%.0f ms of it after the last insert, until the database was quiet)"
          % (result["label"], len(latencies), clients, result["rps"], result["p50"], result["p99"], result["db_cpu_ms_per_insert"],
             result["db_cpu_ms_after"]), flush=True)


def ticks(pid):
    """Prints a process's CPU clock ticks (the database's, before the POST run)."""
    print(cpu_ticks(int(pid)))


def relaycost(results, uri, db_pid, ticks_before, fake, keys_path, wrk_started, timeout):
    """After the POST run: waits (polling the fake) until every component of every 201 has reached the fake
    and then until every outcome is on record (none pending, none past its hub's progress), then records the
    database's CPU per message from the POST run's start to here, the end-to-end relay rate and the lag from
    each message's timestamp (stored just before its 201) to its components' arrival at the fake."""
    messages = {}
    with open(keys_path) as keys:
        for line in keys:
            fields = line.split()
            if len(fields) == 3 and fields[0] != "?":
                messages[fields[0]] = (fields[1], int(fields[2]))
    components = sum(2 if kind == "Alert" else 1 for kind, _ in messages.values())
    deadline = time.time() + float(timeout)
    while received(fake) < components and time.time() < deadline:
        time.sleep(0.05)
    done = time.time()
    # A message's cost runs until its outcome is on record: wait for that too (one count a second, on the
    # outbox's partial index, then the direct messages past their hub's progress, is the only database work
    # this adds).
    db = database(uri)
    while unrelayed(db) and time.time() < deadline:
        time.sleep(1)
    recorded = time.time()
    recorded_ticks = cpu_ticks(int(db_pid))
    db_cpu_ms = cpu_ms(recorded_ticks - int(ticks_before))
    # What the database does once the outcomes are written is reported beside, not counted: on SecantusDB it is
    # WiredTiger's in-memory eviction (perf: __wt_rec_upd_select, __split_multi_inmem), from nothing to 50 s of it
    # from run to run, and none when the same POST run is made alone.
    quiet_started = time.time()
    settle(int(db_pid))
    quiet_ticks = cpu_ticks(int(db_pid))
    lags = []
    arrived = 0
    for arrival in arrivals(fake):
        stored = messages.get(arrival["msi_key"])
        if stored:
            arrived += 1
            lags.append(arrival["at_ms"] - stored[1])
    result = {"label": "relaycost", "messages": len(messages), "components": components, "arrived": arrived,
              "db_cpu_ms": db_cpu_ms, "db_cpu_ms_per_message": db_cpu_ms / max(len(messages), 1),
              "lag_p50_ms": percentile(lags, 0.50), "lag_p99_ms": percentile(lags, 0.99),
              "lag_max_ms": max(lags) if lags else None,
              "relay_rate": len(messages) / max(done - float(wrk_started), 1e-9),
              "recorded_s": recorded - float(wrk_started),
              "db_cpu_ms_after": cpu_ms(quiet_ticks - recorded_ticks),
              "quiet_after_s": time.time() - quiet_started,
              "load": "load average %s" % load_average()}
    append(results, result)
    print("POST run relayed: %d of %d components at the fake; database CPU %.3f ms per message (POST to outcome "
          "on record, %.1f s after the POST run started); lag from 201 to the fake p50 %s ms, p99 %s ms; "
          "%.0f messages/s "
          "end to end; then the database used %.0f ms of CPU in %.0f s before it was quiet (not counted)"
          % (arrived, components, result["db_cpu_ms_per_message"], result["recorded_s"], result["lag_p50_ms"],
             result["lag_p99_ms"], result["relay_rate"], result["db_cpu_ms_after"], result["quiet_after_s"]),
          flush=True)


def durable(results, uri, keys_path):
    """Every msi_key answered with 201 is stored in `message`."""
    with open(keys_path) as keys:
        acknowledged = [line.split()[0] for line in keys if line.strip()]
    from bson import ObjectId
    db = database(uri)
    stored = 0
    for start in range(0, len(acknowledged), 1000):
        batch = [ObjectId(key) for key in acknowledged[start:start + 1000] if re.fullmatch(r"[0-9a-f]{24}", key)]
        stored += db.message.count_documents({"msi_key": {"$in": batch}})
    total = db.message.count_documents({})
    result = {"label": "durable", "acknowledged": len(acknowledged), "stored": stored, "documents": total}
    append(results, result)
    print("POST /message: %d answered 201, %d of them found in `message` (%d documents in all)"
          % (len(acknowledged), stored, total), flush=True)


def drain(uri, timeout):
    """Waits until no message is pending relay (at most `timeout` seconds) and prints the relay states."""
    db = database(uri)
    deadline = time.time() + float(timeout)
    while True:
        pending = unrelayed(db)
        if pending == 0 or time.time() > deadline:
            break
        time.sleep(0.2)
    states = {state["_id"]: state["count"] for state in
              db.message.aggregate([{"$group": {"_id": "$relay.state", "count": {"$sum": 1}}}])}
    print("relay states after the POST run: %s" % json.dumps(states, sort_keys=True), flush=True)


COMMANDS = [
    Command("floor", floor, "RESULTS URI DB_PID SECONDS ALERT INFO",
            "the database's own floor: POST's documents inserted with insert_one by 16 threads into a copy of "
            "`message` (same indexes) for SECONDS; KIND legacy: the legacy's documents, `_id` index only",
            repeated="KIND"),
    Command("ticks", ticks, "PID", "print a process's CPU clock ticks"),
    Command("relaycost", relaycost, "RESULTS URI DB_PID TICKS FAKE KEYS WRK_STARTED TIMEOUT",
            "wait until the fake has every component of the POST run's 201s and every outcome is written, then "
            "record the database's CPU per message since TICKS and the lag from 201 to the fake (p50/p99)"),
    Command("durable", durable, "RESULTS URI KEYS", "check every 201 of the POST run is in `message`"),
    Command("drain", drain, "URI TIMEOUT", "wait until no message is pending relay"),
]

REPORT_ORDER = 30


def report(results, add):
    """A message's database cost and the POST run against the database's floor, with the targets of issue 14."""
    floor_row = results.first("floor")
    legacy_row = results.first("legacy floor")
    cost_row = results.first("relaycost")
    post = results.run("POST /message, 16 conn", "hub")
    if not (floor_row and cost_row and post):
        return
    add("a message's database cost against the database's floor (issue 14), %s after the POST run"
        % cost_row.get("load", ""))
    add("  floor: %d insert_one by 16 clients: %.0f inserts/s, p50 %.2f ms, p99 %.2f ms, database CPU %.3f ms/insert"
        % (floor_row["inserts"], floor_row["rps"], floor_row["p50"], floor_row["p99"],
           floor_row["db_cpu_ms_per_insert"]))
    if legacy_row:
        add("  legacy floor (the legacy's documents, `_id` index only): %.0f inserts/s, p99 %.2f ms, database CPU "
            "%.3f ms/insert" % (legacy_row["rps"], legacy_row["p99"], legacy_row["db_cpu_ms_per_insert"]))
    add("  POST /message: %.0f req/s, p99 %.2f ms; relayed %d/%d components, %.0f messages/s end to end; "
        "database CPU %.3f ms per message from POST to outcome on record (%.1f s); lag 201 -> fake p50 %s ms, p99 %s ms"
        % (post["rps"], post["p99"], cost_row["arrived"], cost_row["components"], cost_row["relay_rate"],
           cost_row["db_cpu_ms_per_message"], cost_row.get("recorded_s", 0), number(cost_row["lag_p50_ms"], "%.0f"),
           number(cost_row["lag_p99_ms"], "%.0f")))
    add("targets (issue 14), ratios within this run")

    def cost_target(text, value, ok):
        add("  %-64s %-22s %s" % (text, value, verdict(ok)))

    cpu = ratio(cost_row["db_cpu_ms_per_message"], floor_row["db_cpu_ms_per_insert"])
    cost_target("database CPU per relayed message <= 1.0x floor's per insert", "%.2fx" % cpu, cpu <= 1.0)
    if legacy_row:
        legacy = ratio(cost_row["db_cpu_ms_per_message"], legacy_row["db_cpu_ms_per_insert"])
        cost_target("database CPU per relayed message <= 1.0x legacy floor's (issue 42)", "%.2fx" % legacy,
                    legacy <= 1.0)
    rate = ratio(post["rps"], floor_row["rps"])
    cost_target("POST /message req/s >= 1.5x floor's inserts/s", "%.2fx" % rate, rate >= 1.5)
    p99 = ratio(post["p99"], floor_row["p99"])
    cost_target("POST /message p99 <= floor's p99 (16 conn)", "%.2fx" % p99, p99 <= 1.0)
    lag = cost_row["lag_p99_ms"]
    cost_target("relay lag p99, 201 to the fake FCM, <= 2 s", number(lag, "%.0f ms"),
                lag is not None and lag <= 2000 and cost_row["arrived"] >= cost_row["components"])
    add("")
