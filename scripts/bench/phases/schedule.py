"""What scripts/bench-schedule.sh asks of this helper: events made through POST /event whose reminders all fall due
within one minute, each to one person's phone: how long after its due time each reminder's message is stored for the
relay (the reminder worker's lag, p50, p99, max), none stored twice or lost, and the database's and the hub's CPU per
reminder over that minute."""
import hashlib
import json
import os
import threading
import time
import urllib.request
from datetime import datetime, timezone

from support.cli import Command
from support.database import database
from support.proc import cpu_ms, cpu_ticks, load_average
from support.results import append, labelled_section, number, percentile, section_table, verdict
from phases.receipts import TOPIC

LAG_TARGET_MS = 1000  # issue 44: every reminder handed to the relay within 1 s of its due time, at p99
LEADS = (("PT1M", 60), ("PT30S", 30))


def person(index):
    return "sched-person-%04d" % index


def load(uri, persons):
    """`persons` persons with an active phone each, straight into the database as DeviceDAO writes them."""
    import bson
    db, persons = database(uri), int(persons)
    now = int(time.time() * 1000)
    db.devices.insert_many([
        {"_id": bson.ObjectId(), "registration": "bench-schedule-%04d-%s" % (index, os.urandom(8).hex()),
         "platform": "android", "secret_hash": hashlib.sha256(("msd_bench-sched-%04d" % index).encode()).hexdigest(),
         "state": "active", "created_at": now, "updated_at": now, "person": person(index)}
        for index in range(persons)], ordered=False)
    print("loaded %d persons with a phone each" % persons, flush=True)


def top(db):
    """The database's time (microseconds) and commands per namespace so far (its `top`)."""
    totals = db.client.admin.command("top")["totals"]
    operations = ("queries", "getmore", "insert", "update", "remove", "commands")
    return {ns: dict({"time": value.get("total", {}).get("time", 0), "count": value.get("total", {}).get("count", 0)},
                     **{"%s_%s" % (operation, field): value.get(operation, {}).get(field, 0)
                        for operation in operations for field in ("time", "count")})
            for ns, value in totals.items() if ns != "note"}


def event_commands(db):
    """The commands on `events` so far (the database's `top`): the reminder worker's claims and reads."""
    totals = db.client.admin.command("top")["totals"]
    return totals.get("%s.events" % db.name, {}).get("total", {}).get("count", 0)


def post(hub, token, body):
    request = urllib.request.Request(hub + "/event", data=json.dumps(body).encode(), method="POST", headers={
        "Content-Type": "application/json", "Authorization": "Bearer " + token})
    with urllib.request.urlopen(request, timeout=60) as response:
        return response.status


def run(results, uri, hub, token, db_pid, hub_pid, persons, events):
    db, persons, events, db_pid, hub_pid = database(uri), int(persons), int(events), int(db_pid), int(hub_pid)
    # The minute in which every reminder falls: after the events are made (about 150 a second, with margin).
    minute_start = int(time.time()) + 30 + events // 100
    errors, made = [], [0]
    lock = threading.Lock()
    started = time.time()

    def maker(worker, workers):
        for index in range(worker, events, workers):
            # Starts from 60 to 89 s into the minute: PT1M falls in its first half, PT30S in its second.
            start = minute_start + 60 + index % 30
            local = datetime.fromtimestamp(start, timezone.utc).strftime("%Y-%m-%dT%H:%M:%S")
            # Half to a person's phone (a fan-out each), half to the legacy fixture's subject (one topic send).
            audience = {"to": {"persons": [person(index % persons)]}} if index % 2 else {"topic_key": TOPIC}
            body = dict({"title": "Event %d" % index, "message": "Bench event.", "starts_at": local, "tz": "UTC",
                         "reminders": [lead for lead, _ in LEADS]}, **audience)
            try:
                status = post(hub, token, body)
                if status != 201:
                    raise RuntimeError("status %d" % status)
                with lock:
                    made[0] += 1
            except Exception as error:  # noqa: BLE001 - counted and shown
                with lock:
                    errors.append(str(error))
    threads = [threading.Thread(target=maker, args=(worker, 16)) for worker in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    made_seconds = time.time() - started
    print("made %d events in %.1f s (%d refused); the minute starts in %.0f s"
          % (made[0], made_seconds, len(errors), minute_start - time.time()), flush=True)
    # Idle: the worker's claims a second while nothing is due (the database's command count over 10 s).
    idle_from = max(time.time(), minute_start - 15)
    while time.time() < idle_from:
        time.sleep(0.2)
    before_idle = event_commands(db)
    time.sleep(min(10, max(0, minute_start - time.time() - 1)))
    idle_window = time.time() - idle_from
    idle_commands = event_commands(db) - before_idle
    while time.time() < minute_start - 1:
        time.sleep(0.1)
    before = {"db": cpu_ticks(db_pid), "hub": cpu_ticks(hub_pid)}
    top_before = top(db)
    # The minute, then 15 s for the last reminders to be stored (no query meanwhile: a count of the archive would
    # cost the database what the bench measures).
    expected = made[0] * len(LEADS)
    while time.time() < minute_start + 75:
        time.sleep(0.5)
    spent = {name: cpu_ms(cpu_ticks(pid) - before[name]) for name, pid in (("db", db_pid), ("hub", hub_pid))}
    top_after = top(db)
    spent_top = {ns.split(".", 1)[1]: {field: top_after[ns][field] - top_before.get(ns, {}).get(field, 0)
                                       for field in top_after[ns]}
                 for ns in top_after if "." in ns}
    lags, seen = [], {}
    for message in db.message.find({"data.event": {"$exists": True}},
                                   {"timestamp": 1, "data": 1, "_id": 0}):
        data = message.get("data", {})
        lead = dict(LEADS).get(data.get("reminder"))
        key = (data.get("event"), data.get("reminder"))
        seen[key] = seen.get(key, 0) + 1
        if lead is None or "starts_at" not in data:
            continue
        due_ms = int(data["starts_at"]) - lead * 1000
        lags.append(message["timestamp"] - due_ms)
    twice = sum(1 for count in seen.values() if count > 1)
    row = {
        "label": "schedule", "events": made[0], "refused": len(errors), "persons": persons,
        "made_seconds": made_seconds, "reminders": expected, "stored": sum(seen.values()), "distinct": len(seen),
        "twice": twice, "missing": expected - len(seen),
        "lag_p50_ms": percentile(lags, 0.5), "lag_p99_ms": percentile(lags, 0.99), "lag_max_ms": max(lags) if lags else None,
        "db_cpu_ms_per_reminder": spent["db"] / max(len(seen), 1), "hub_cpu_ms_per_reminder": spent["hub"] / max(len(seen), 1),
        "idle_commands_per_second": idle_commands / idle_window if idle_window > 0 else None,
        "load": load_average(),
        # The database's time (its `top`, microseconds) and commands per collection during the minute, largest first.
        "top_by_collection": dict(sorted(((name, value) for name, value in spent_top.items() if value["time"] > 0),
                                         key=lambda item: -item[1]["time"])[:10]),
    }
    append(results, row)
    for line in lines(row):
        print(line, flush=True)
    if errors:
        print("errors (the first 3 of %d): %s" % (len(errors), errors[:3]), flush=True)


def lines(row):
    return [
        "schedule: %d events (%d refused) made through POST /event in %.0f s, half to one of %d persons, half to a topic;"
        " %d reminders due in one minute"
        % (row["events"], row["refused"], row["made_seconds"], row["persons"], row["reminders"]),
        "  from its due time to its message stored for the relay: p50 %s ms, p99 %s ms (target %d ms: %s), max %s ms"
        % (number(row["lag_p50_ms"], "%.0f"), number(row["lag_p99_ms"], "%.0f"), LAG_TARGET_MS,
           verdict(row["lag_p99_ms"] is not None and row["lag_p99_ms"] <= LAG_TARGET_MS),
           number(row["lag_max_ms"], "%.0f")),
        "  stored twice: %d, missing: %d (target 0: %s); CPU per reminder: database %.2f ms, hub %.2f ms"
        % (row["twice"], row["missing"], verdict(row["twice"] == 0 and row["missing"] == 0),
           row["db_cpu_ms_per_reminder"], row["hub_cpu_ms_per_reminder"]),
        "  commands on events a second while nothing was due (the worker's claims and reads): %s; load %s"
        % (number(row["idle_commands_per_second"], "%.1f"), row["load"]),
    ]


section = labelled_section("schedule", "Schedules (issue 44): reminders of many events due in one minute", lines)


def table(results_path, out_path):
    section_table(section, results_path, out_path)


COMMANDS = [
    Command("schedule-load", load, "URI PERSONS", "write persons with a phone each"),
    Command("schedule-run", run, "RESULTS URI HUB TOKEN DB_PID HUB_PID PERSONS EVENTS",
            "events through POST /event, their reminders due in one minute: lag, duplicates, CPU"),
    Command("schedule-table", table, "RESULTS OUT", "print the schedule's section and append it to OUT"),
]

REPORT_ORDER = 43


def report(results, add):
    """The schedule's section, when the run has one."""
    section(results, add)
