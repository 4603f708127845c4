"""What scripts/bench-digest.sh asks of this helper (issue 45, item 6: holding and digesting is bulk work): persons
with a phone each, a share of them putting the legacy fixture's "New books" subject (Information, not Forced) in
digest mode through PUT /device/:deviceID/person/settings with one digest time a few minutes ahead, the day's
messages to that subject, then at the digest minute: the time from the due instant to the first and the last digest
at the fake FCM (one request per device), digests/s against the fan-out's rate, every digest once and exact, the
database's and the hub's CPU per digest and per held message, and what holding cost the messages' sends."""
import hashlib
import http.client
import json
import os
import threading
import time
import urllib.parse
import urllib.request

from support.cli import Command
from support.database import database, unrelayed
from support.fake import arrivals, received
from support.proc import cpu_ms, cpu_ticks, load_average, settle
from support.results import append, labelled_section, number, percentile, section_table, verdict

# The legacy fixture's "New books" (Information, level ""): its messages are held for a digest person.
TOPIC = "5a0b1c2d3e4f5a6b7c8d9e01-5a0b1c2d3e4f5a6b7c8d9e02-5a0b1c2d3e4f5a6b7c8d9e04"
FANOUT_REFERENCE = 1704  # deliveries/s: the README's fan-out to 20,000 devices, fake FCM answering after 50 ms
CONNECTIONS = 16  # the PUTs' keep-alive connections


def person(index):
    return "digest-person-%05d" % index


def secret(index):
    return "msd_bench-digest-%05d" % index


def load(uri, persons, share, out):
    """`persons` persons with one active phone each (secret `secret(index)`, stored hashed as registration stores
    it), straight into the database as DeviceDAO writes them, in bulk inserts of 2,000; the phones of every
    `share`-th person (those who will choose digests) written to `out` as "DEVICE_ID INDEX" lines."""
    import bson
    db, persons, share = database(uri), int(persons), int(share)
    started = time.time()
    now = int(started * 1000)
    devices, lines = [], []
    for index in range(persons):
        device = bson.ObjectId()
        devices.append({"_id": device, "registration": "bench-digest-%05d-%s" % (index, os.urandom(8).hex()),
                        "platform": "ios" if index % 2 == 0 else "android",
                        "secret_hash": hashlib.sha256(secret(index).encode()).hexdigest(),
                        "state": "active", "created_at": now, "updated_at": now, "person": person(index)})
        if index % share == 0:
            lines.append("%s %d\n" % (device, index))
    for start in range(0, len(devices), 2000):
        db.devices.insert_many(devices[start:start + 2000], ordered=False)
    with open(out, "w") as file:
        file.writelines(lines)
    print("loaded %d persons with a phone each in %.1f s; %d of them will choose digests"
          % (persons, time.time() - started, len(lines)), flush=True)


def object_id(value):
    """An ObjectId's hex from the hub's JSON (a string, or extended JSON's {"$oid": ...})."""
    return value.get("$oid") if isinstance(value, dict) else value


def put_settings(hub, jobs, body):
    """PUT /device/:deviceID/person/settings `body` for each (device, index) of `jobs` with the device's secret,
    from CONNECTIONS keep-alive connections; (seconds, latencies, refusals by status)."""
    parsed = urllib.parse.urlsplit(hub)
    lock = threading.Lock()
    state = {"next": 0, "latencies": [], "other": {}}
    data = json.dumps(body)

    def worker():
        connection = http.client.HTTPConnection(parsed.hostname, parsed.port, timeout=60)
        latencies, other = [], {}
        while True:
            with lock:
                at = state["next"]
                state["next"] += 1
            if at >= len(jobs):
                break
            device, index = jobs[at]
            started = time.perf_counter()
            try:
                connection.request("PUT", "/device/%s/person/settings" % device, data, {
                    "Content-Type": "application/json", "Authorization": "Bearer " + secret(index)})
                response = connection.getresponse()
                answer = response.read()
            except (OSError, http.client.HTTPException) as error:
                connection.close()
                connection = http.client.HTTPConnection(parsed.hostname, parsed.port, timeout=60)
                other[type(error).__name__] = other.get(type(error).__name__, 0) + 1
                continue
            latencies.append(time.perf_counter() - started)
            if response.status != 200:
                label = "%d %s" % (response.status, answer[:80].decode("utf-8", "replace"))
                other[label] = other.get(label, 0) + 1
        connection.close()
        with lock:
            state["latencies"] += latencies
            for label, n in other.items():
                state["other"][label] = state["other"].get(label, 0) + n

    started = time.time()
    threads = [threading.Thread(target=worker) for _ in range(CONNECTIONS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return time.time() - started, state["latencies"], state["other"]


def post(hub, token, number):
    """POSTs message `number` of the day to TOPIC as the admin; its _id (hex)."""
    body = json.dumps({"title": "New book %02d: %s" % (number, "A title of a usual length for a library notice"),
                       "desc": "", "message": "Book %d of the day is on the shelf." % number, "topic_key": TOPIC,
                       "distribution": "Information"}).encode()
    request = urllib.request.Request(hub + "/message", data=body, method="POST", headers={
        "Content-Type": "application/json", "Authorization": "Bearer " + token})
    with urllib.request.urlopen(request, timeout=60) as response:
        if response.status != 201:
            raise SystemExit("POST /message answered %d" % response.status)
        return object_id(json.load(response)["_id"])


def top(db):
    """The database's time (its `top`, microseconds) and commands per namespace so far."""
    totals = db.client.admin.command("top")["totals"]
    return {ns: {"time": value.get("total", {}).get("time", 0), "count": value.get("total", {}).get("count", 0)}
            for ns, value in totals.items() if ns != "note"}


def top_spent(before, after):
    """The database's time and commands per collection between two `top`s, the 10 largest by time."""
    spent = {ns.split(".", 1)[1]: {field: after[ns][field] - before.get(ns, {}).get(field, 0) for field in after[ns]}
             for ns in after if "." in ns}
    return dict(sorted(((name, value) for name, value in spent.items() if value["time"] > 0),
                       key=lambda item: -item[1]["time"])[:10])


def received_bodies(fake):
    """The bodies of the accepted messages:send requests, in order of arrival."""
    with urllib.request.urlopen(fake + "/_received", timeout=120) as response:
        return json.load(response)


def run(results, uri, hub, fake, token, db_pid, hub_pid, persons, devices_file, messages, put_rate):
    """The digest persons choose digests at one time ahead (their PUTs assumed to go at `put_rate`/s at least, the
    time rounded up to a minute with room for the messages), then `messages` messages to TOPIC, then the digests of
    that minute are timed at the fake and their CPU measured."""
    import bson
    db, persons, messages, put_rate = database(uri), int(persons), int(messages), float(put_rate)
    db_pid, hub_pid = int(db_pid), int(hub_pid)
    jobs = [(device, int(index)) for device, index in (line.split() for line in open(devices_file) if line.strip())]
    digesters = len(jobs)
    # The digest minute: after the PUTs (at `put_rate`), the held topics' subscriptions, the messages (about 1 s each
    # with the waits) and a minute's margin.
    due_s = int(time.time() + 60 + digesters / put_rate + 30 + messages * 1.0)
    due_s = (due_s // 60 + 1) * 60
    due_ms = due_s * 1000
    hour = time.strftime("%H:%M", time.gmtime(due_s))
    print("%d persons choose digests of New books at %s UTC (in %.0f s)" % (digesters, hour, due_s - time.time()),
          flush=True)

    # 1. The PUTs: digest mode and the digest time, each person through their phone.
    ticks = {"db": cpu_ticks(db_pid), "hub": cpu_ticks(hub_pid)}
    put_seconds, put_latencies, put_other = put_settings(
        hub, jobs, {"digest_hour": hour, "delivery": {"subjects": {TOPIC: "digest"}}})
    put_spent = {name: cpu_ms(cpu_ticks(pid) - ticks[name]) for name, pid in (("db", db_pid), ("hub", hub_pid))}
    planned = db.digest_schedule.count_documents({"due_at": due_ms})
    print("%d PUTs in %.1f s (%.0f/s, %d refused: %s); %d digests planned at %s"
          % (digesters, put_seconds, digesters / max(put_seconds, 1e-9), sum(put_other.values()),
             dict(list(put_other.items())[:3]), planned, hour), flush=True)
    # The held topic's subscriptions applied at the fake, then a quiet database.
    held = "held-" + TOPIC
    deadline = time.time() + 180
    while db.device_subscriptions.count_documents({"topic": held, "pending": True}) and time.time() < deadline:
        time.sleep(1)
    held_applied = db.device_subscriptions.count_documents({"topic": held, "applied": True})
    settle(db_pid, limit=60.0)

    # 2. The day's messages, one after another (each POST waits for its 201), until every one is relayed and the
    # database quiet: the send-side cost of holding.
    fake_before = received(fake)
    ticks = {"db": cpu_ticks(db_pid), "hub": cpu_ticks(hub_pid)}
    top_before = top(db)
    for number in range(messages):
        post(hub, token, number + 1)
    # Every one relayed (pending, or sent by this hub itself and not yet passed by its progress record), then quiet.
    deadline = time.time() + 60
    while unrelayed(db) and time.time() < deadline:
        time.sleep(0.5)
    settle(db_pid, limit=30.0)
    send_spent = {name: cpu_ms(cpu_ticks(pid) - ticks[name]) for name, pid in (("db", db_pid), ("hub", hub_pid))}
    send_top = top_spent(top_before, top(db))
    send_requests = received(fake) - fake_before
    print("%d messages sent to New books (%d FCM requests); the digests are due in %.0f s"
          % (messages, send_requests, due_s - time.time()), flush=True)
    if time.time() > due_s - 5:
        raise SystemExit("the setup ended %.0f s after the digest minute: raise the time (BENCH_DIGEST_PUT_RATE lower)"
                         % (time.time() - due_s))

    # 3. The digests of the minute: CPU from 1 s before the due instant until 1 s after the last one arrived; the
    # fake's count polled (no database query meanwhile).
    while time.time() < due_s - 1:
        time.sleep(0.1)
    base = received(fake)
    load_before = load_average()
    ticks = {"db": cpu_ticks(db_pid), "hub": cpu_ticks(hub_pid)}
    top_before = top(db)
    # At most a minute and a second a hundred digests (the fan-out's rate is 17 times that): what came by then.
    deadline = due_s + float(os.environ.get("BENCH_DIGEST_TIMEOUT") or 60 + digesters / 100.0)
    while received(fake) - base < digesters and time.time() < deadline:
        time.sleep(0.25)
    complete = received(fake) - base >= digesters
    time.sleep(1.0)
    spent = {name: cpu_ms(cpu_ticks(pid) - ticks[name]) for name, pid in (("db", db_pid), ("hub", hub_pid))}
    digest_top = top_spent(top_before, top(db))
    load_after = load_average()

    # Every request after `base`: the digests (audience "digest") by their own msi_key, joined to their arrivals.
    bodies = received_bodies(fake)[base:]
    at_ms = {arrival["msi_key"]: arrival["at_ms"] for arrival in arrivals(fake)[base:]}
    digests = [body["message"] for body in bodies
               if (body.get("message") or {}).get("data", {}).get("audience") == "digest"]
    tokens = {message.get("token") for message in digests}
    exact = sum(1 for message in digests if message["data"].get("count") == str(messages))
    listed = [int(message["data"].get("listed", 0)) for message in digests]
    times = sorted(at_ms[message["data"]["msi_key"]] for message in digests if message["data"].get("msi_key") in at_ms)
    first, last = (times[0], times[-1]) if times else (None, None)
    span = (last - first) / 1000.0 if times else None
    recorded = db.digest_schedule.count_documents({"last.count": messages})
    held_messages = len(digests) * messages
    row = {
        "label": "digest", "persons": persons, "digest_persons": digesters, "messages": messages, "hour": hour,
        "put_seconds": put_seconds, "puts_per_s": digesters / max(put_seconds, 1e-9),
        "put_refused": sum(put_other.values()), "put_other": put_other,
        "put_p50_ms": 1000 * (percentile(put_latencies, 0.5) or 0),
        "put_p99_ms": 1000 * (percentile(put_latencies, 0.99) or 0),
        "put_db_cpu_ms": put_spent["db"] / max(digesters, 1), "put_hub_cpu_ms": put_spent["hub"] / max(digesters, 1),
        "planned": planned, "held_subscriptions": held_applied,
        "send_db_cpu_ms_per_message": send_spent["db"] / max(messages, 1),
        "send_hub_cpu_ms_per_message": send_spent["hub"] / max(messages, 1), "send_requests": send_requests,
        "send_top_by_collection": send_top,
        "requests": len(bodies), "digests": len(digests), "distinct_tokens": len(tokens), "exact_count": exact,
        "listed_min": min(listed) if listed else None, "listed_max": max(listed) if listed else None,
        "recorded": recorded, "complete": complete, "waited_s": time.time() - due_s,
        "first_s": (first - due_ms) / 1000.0 if times else None, "last_s": (last - due_ms) / 1000.0 if times else None,
        "digests_per_s": len(times) / span if span else None,
        "db_cpu_ms": spent["db"], "hub_cpu_ms": spent["hub"],
        "db_cpu_ms_per_digest": spent["db"] / len(digests) if digests else None,
        "hub_cpu_ms_per_digest": spent["hub"] / len(digests) if digests else None,
        "db_cpu_ms_per_held": spent["db"] / held_messages if held_messages else None,
        "fanout_reference": FANOUT_REFERENCE, "load_before": load_before, "load": load_after,
        "top_by_collection": digest_top,
    }
    append(results, row)
    for line in lines(row):
        print(line, flush=True)


def per(row, key, form):
    """A figure per digest or per held message, "-" when no digest came (runs before the ones recording None)."""
    return number(row[key] if row["digests"] else None, form)


def lines(row):
    rate = row["digests_per_s"]
    once = row["digests"] == row["digest_persons"] == row["distinct_tokens"] == row["exact_count"] == row["recorded"]
    return [
        "digest: %d persons, %d of them (%d PUTs in %.0f s, %.0f/s, p99 %.0f ms, %d refused) with New books in digest"
        " mode at %s UTC; %d messages in the day"
        % (row["persons"], row["digest_persons"], row["digest_persons"], row["put_seconds"], row["puts_per_s"],
           row["put_p99_ms"], row["put_refused"], row["hour"], row["messages"]),
        "  from the due instant to the first digest at the fake %s s, to the last %s s%s; %s digests/s"
        " (fan-out reference %d/s: %s)"
        % (number(row["first_s"], "%.1f"), number(row["last_s"], "%.1f"),
           "" if row.get("complete", True) else " (incomplete: the bench stopped waiting %.0f s after the due instant)"
           % row.get("waited_s", 0), number(rate, "%.0f"),
           row["fanout_reference"], number(rate and rate / row["fanout_reference"], "%.2fx")),
        "  %d digest pushes of %d persons: %d distinct tokens, %d with count %d (listed %s-%s), %d recorded with last.count"
        " %d: %s"
        % (row["digests"], row["digest_persons"], row["distinct_tokens"], row["exact_count"], row["messages"],
           number(row["listed_min"], "%d"), number(row["listed_max"], "%d"), row["recorded"], row["messages"],
           verdict(once)),
        "  CPU over the digests: database %.0f ms (%s ms a digest, %s ms a held message), hub %.0f ms"
        " (%s ms a digest)"
        % (row["db_cpu_ms"], per(row, "db_cpu_ms_per_digest", "%.2f"), per(row, "db_cpu_ms_per_held", "%.4f"),
           row["hub_cpu_ms"], per(row, "hub_cpu_ms_per_digest", "%.2f")),
        "  a held message's send (topic message, %d FCM requests for %d): database %.1f ms, hub %.1f ms;"
        " a PUT: database %.2f ms, hub %.2f ms"
        % (row["send_requests"], row["messages"], row["send_db_cpu_ms_per_message"],
           row["send_hub_cpu_ms_per_message"], row["put_db_cpu_ms"], row["put_hub_cpu_ms"]),
        "  the database's busiest collections over the digests (its `top`: commands): %s"
        % (", ".join("%s %d" % (name, value["count"]) for name, value in
                     list(row.get("top_by_collection", {}).items())[:4]) or "-"),
        "  load %s before the digests, %s after" % (row["load_before"], row["load"]),
    ]


section = labelled_section("digest", "Digests (issue 45): the digests of one minute, a person's day held", lines)


def table(results_path, out_path):
    section_table(section, results_path, out_path)


COMMANDS = [
    Command("digest-load", load, "URI PERSONS SHARE OUT", "write persons with a phone each; list every SHARE-th"),
    Command("digest-run", run, "RESULTS URI HUB FAKE TOKEN DB_PID HUB_PID PERSONS DEVICES MESSAGES PUT_RATE",
            "digest mode through the API, the day's messages, then the digests of one minute: times, counts, CPU"),
    Command("digest-table", table, "RESULTS OUT", "print the digest's section and append it to OUT"),
]

REPORT_ORDER = 44


def report(results, add):
    """The digest's section, when the run has one."""
    section(results, add)
