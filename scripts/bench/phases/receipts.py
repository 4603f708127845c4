"""What scripts/bench-receipts.sh asks of this helper: 20,000 devices subscribed to one topic, one message to it,
every device POSTing a `received` receipt and half of them an `acknowledged` one (each with its own secret, from
concurrent keep-alive connections); the receipts/s the hub stored, the database's and the hub's CPU per receipt, the
counts checked exact, then the reach report's latency (GET /message/:msiKey/receipts) against issue 30's 100 ms."""
import hashlib
import http.client
import json
import os
import threading
import time
import urllib.parse

from support.cli import Command
from support.database import database
from support.proc import cpu_ms, cpu_ticks, load_average, settle
from support.threads import run_threads
from support.results import append, percentile, section_table, verdict

TARGET_REPORT_MS = 100  # p99 of the reach report (issue 30)
TOPIC = "5a0b1c2d3e4f5a6b7c8d9e01-5a0b1c2d3e4f5a6b7c8d9e02-5a0b1c2d3e4f5a6b7c8d9e03"  # the legacy fixture's hours


def cube(uri, fixture):
    """Puts the legacy channel fixture (its subject "Opening hours" is TOPIC) into `icube`, before the hub starts."""
    from bson import json_util
    with open(fixture) as source:
        channel = json_util.loads(source.read())
    database(uri).icube.replace_one({"_id": channel["_id"]}, channel, upsert=True)


def load(uri, count, secrets):
    """Puts `count` active devices into `devices`, as DeviceDAO.register writes them, each with a secret of its own
    (stored as SHA-256 hex, as Secret.hash) written with its id to the file `secrets`, and each one's wish for TOPIC
    applied in `device_subscriptions` (as the reconciler leaves it). Platforms alternate ios/android. Bulk inserts of 2,000."""
    import bson
    db, count = database(uri), int(count)
    started = time.time()
    now = int(started * 1000)
    devices, wishes, lines = [], [], []
    for index in range(count):
        device, secret = bson.ObjectId(), "msd_bench-receipts-%05d-%s" % (index, os.urandom(12).hex())
        registration, platform = "bench-receipts-%05d-%s" % (index, os.urandom(8).hex()), \
            "ios" if index % 2 == 0 else "android"
        devices.append({"_id": device, "registration": registration, "platform": platform,
                        "secret_hash": hashlib.sha256(secret.encode()).hexdigest(), "state": "active",
                        "created_at": now, "updated_at": now})
        wishes.append({"_id": bson.ObjectId(), "device": device, "registration": registration, "platform": platform,
                       "topic": TOPIC, "want": True, "applied": True, "pending": False, "due_at": 0, "attempts": 0,
                       "updated_at": now})
        lines.append("%s %s\n" % (device, secret))
    for documents, collection in ((devices, db.devices), (wishes, db.device_subscriptions)):
        for start in range(0, len(documents), 2000):
            collection.insert_many(documents[start:start + 2000], ordered=False)
    with open(secrets, "w") as out:
        out.writelines(lines)
    print("loaded %d devices subscribed to %s in %.1f s" % (count, TOPIC, time.time() - started), flush=True)


def send(hub, token, out):
    """POSTs an Alert to TOPIC as the admin token, waits (60 s at most) until GET /message/:msiKey says it was sent,
    and writes its msi_key to `out`."""
    body = json.dumps({"title": "Are you safe?", "desc": "Receipts benchmark", "distribution": "Alert",
                       "message": "A message every device reports received, and half acknowledge.",
                       "topic_key": TOPIC}).encode()
    status, answer = request(hub, "POST", "/message", body, {"Authorization": "Bearer " + token})
    if status != 201:
        raise SystemExit("POST /message answered %d: %s" % (status, answer[:200]))
    stored = json.loads(answer)
    key = stored["msi_key"]["$oid"] if isinstance(stored["msi_key"], dict) else stored["msi_key"]
    deadline = time.time() + 60
    while time.time() < deadline:
        status, answer = request(hub, "GET", "/message/" + key, None, {"Authorization": "Bearer " + token})
        if status == 200 and json.loads(answer).get("relay", {}).get("state") == "sent":
            break
        time.sleep(0.2)
    else:
        raise SystemExit("the message was not sent within 60 s")
    with open(out, "w") as file:
        file.write(key)
    print("message %s sent to %s" % (key, TOPIC), flush=True)


def request(hub, method, path, body, headers):
    """One request on a connection of its own; (status, body bytes)."""
    parsed = urllib.parse.urlsplit(hub)
    connection = http.client.HTTPConnection(parsed.hostname, parsed.port, timeout=60)
    try:
        connection.request(method, path, body, dict(headers, **({"Content-Type": "application/json"} if body else {})))
        response = connection.getresponse()
        return response.status, response.read()
    finally:
        connection.close()


def run(results, uri, hub, secrets, key_file, db_pid, hub_pid, connections):
    """Every device of `secrets` POSTs `received` for the message, and every other one then `acknowledged` (two POSTs,
    as an app reports arrival at once and the person's answer later), from `connections` keep-alive connections in
    threads; records the receipts/s stored, each process's CPU per receipt, the POSTs' latency, and checks every
    answer and the message's counts."""
    db_pid, hub_pid, connections = int(db_pid), int(hub_pid), int(connections)
    key = open(key_file).read().strip()
    devices = [line.split() for line in open(secrets) if line.strip()]
    at = int(time.time() * 1000)
    # Interleaved: a device acknowledges a while after it reported the message received (LAG devices later), while
    # the others' receipts still arrive.
    lag, jobs = 1000, []
    for index, (device, secret) in enumerate(devices):
        jobs.append((device, secret, "received"))
        if index >= lag and (index - lag) % 2 == 0:
            jobs.append(tuple(devices[index - lag]) + ("acknowledged",))
    jobs += [tuple(devices[index]) + ("acknowledged",)
             for index in range(max(len(devices) - lag, 0), len(devices)) if index % 2 == 0]
    parsed = urllib.parse.urlsplit(hub)
    lock = threading.Lock()
    state = {"next": 0, "stored": 0, "other": {}, "latencies": []}

    def worker():
        connection = http.client.HTTPConnection(parsed.hostname, parsed.port, timeout=60)
        latencies, other, stored = [], {}, 0
        while True:
            with lock:
                index = state["next"]
                state["next"] += 1
            if index >= len(jobs):
                break
            device, secret, event = jobs[index]
            entry = {"msi_key": key, "event": event, "at": at}
            if event == "acknowledged":
                entry["response"] = "Seen"
            body = json.dumps([entry])
            started = time.perf_counter()
            try:
                connection.request("POST", "/device/%s/receipts" % device, body, {
                    "Content-Type": "application/json", "Authorization": "Bearer " + secret})
                response = connection.getresponse()
                answer = response.read()
            except (OSError, http.client.HTTPException) as error:
                connection.close()
                connection = http.client.HTTPConnection(parsed.hostname, parsed.port, timeout=60)
                other[type(error).__name__] = other.get(type(error).__name__, 0) + 1
                continue
            latencies.append(time.perf_counter() - started)
            statuses = [result.get("status") for result in json.loads(answer).get("results", [])] \
                if response.status == 200 else []
            if statuses == ["stored"]:
                stored += 1
            else:
                label = "%d %s" % (response.status, ",".join(map(str, statuses)) or answer[:80].decode("utf-8", "replace"))
                other[label] = other.get(label, 0) + 1
        with lock:
            state["latencies"] += latencies
            state["stored"] += stored
            for label, n in other.items():
                state["other"][label] = state["other"].get(label, 0) + n

    load_before = load_average()
    ticks = {"db": cpu_ticks(db_pid), "hub": cpu_ticks(hub_pid), "bench": cpu_ticks(os.getpid())}
    took = run_threads(worker, connections)
    spent = {name: cpu_ms(cpu_ticks(pid) - ticks[name]) for name, pid in
             (("db", db_pid), ("hub", hub_pid), ("bench", os.getpid()))}
    # What the storage engine still does after the last answer is the receipts' cost too.
    settle(db_pid, limit=60.0)
    db_after = cpu_ms(cpu_ticks(db_pid) - ticks["db"])
    db = database(uri)
    message = db.message.find_one({"msi_key": __import__("bson").ObjectId(key)}, {"_id": 1})["_id"]
    counts = db.receipt_counts.find_one({"_id": message}) or {}
    receipts = len(jobs)
    latencies = state["latencies"]
    row = {
        "label": "receipts", "devices": len(devices), "posts": receipts, "stored": state["stored"],
        "other": state["other"], "connections": connections, "seconds": took,
        "receipts_per_s": state["stored"] / max(took, 1e-9),
        "db_cpu_ms": spent["db"], "db_cpu_ms_settled": db_after, "hub_cpu_ms": spent["hub"],
        "bench_cpu_ms": spent["bench"],
        "db_cpu_ms_per_receipt": db_after / max(state["stored"], 1),
        "hub_cpu_ms_per_receipt": spent["hub"] / max(state["stored"], 1),
        "post_p50_ms": 1000 * (percentile(latencies, 0.5) or 0), "post_p99_ms": 1000 * (percentile(latencies, 0.99) or 0),
        "counted": {event: (counts.get("events") or {}).get(event, 0) for event in ("received", "acknowledged")},
        "pending_batches": len(counts.get("pending") or []), "load_before": load_before,
        "load_after": load_average(), "msi_key": key,
    }
    append(results, row)
    for line in run_lines(row):
        print(line, flush=True)


def report_latency(results, hub, token, key_file, requests, when):
    """GETs the message's reach report `requests` times, one after another, and records p50 and p99 against
    TARGET_REPORT_MS, with the report's figures; `when` is "first" (right after the send, before any receipt: it
    counts the audience and stores it) or "after" (after the load)."""
    key, requests = open(key_file).read().strip(), int(requests)
    parsed = urllib.parse.urlsplit(hub)
    connection = http.client.HTTPConnection(parsed.hostname, parsed.port, timeout=60)
    latencies, body, statuses = [], None, {}
    for _ in range(requests):
        started = time.perf_counter()
        connection.request("GET", "/message/%s/receipts" % key, headers={"Authorization": "Bearer " + token})
        response = connection.getresponse()
        answer = response.read()
        latencies.append(time.perf_counter() - started)
        statuses[str(response.status)] = statuses.get(str(response.status), 0) + 1
        if response.status == 200:
            body = json.loads(answer)
    body = body or {}
    row = {"label": "receipts report " + when, "requests": requests, "statuses": statuses,
           "first_ms": 1000 * latencies[0], "p50_ms": 1000 * percentile(latencies, 0.5),
           "p99_ms": 1000 * percentile(latencies, 0.99), "max_ms": 1000 * max(latencies),
           "figures": {name: body.get(name) for name in ("audience", "fcm_accepted", "received", "acknowledged",
                                                          "not_answered")},
           "page": len(body.get("not_answered_devices") or []), "load": load_average()}
    append(results, row)
    for line in report_lines(row):
        print(line, flush=True)


def run_lines(row):
    """The load run as lines of the table."""
    other = ", ".join("%s: %d" % item for item in sorted(row["other"].items())) or "none"
    return [
        "receipts: %d devices, %d POSTs of one receipt (every device received, every other acknowledged) from %d "
        "connections in %.1f s: %.0f receipts/s stored (load average before %s, after %s)"
        % (row["devices"], row["posts"], row["connections"], row["seconds"], row["receipts_per_s"],
           row["load_before"], row["load_after"]),
        "  POST latency p50 %.1f ms, p99 %.1f ms; answers other than stored: %s"
        % (row["post_p50_ms"], row["post_p99_ms"], other),
        "  CPU per receipt: database %.2f ms (%.0f ms until quiet; %.0f ms during the POSTs), hub %.2f ms, the "
        "bench's clients %.0f ms in all" % (row["db_cpu_ms_per_receipt"], row["db_cpu_ms_settled"], row["db_cpu_ms"],
                                            row["hub_cpu_ms_per_receipt"], row["bench_cpu_ms"]),
        "  counted: received %d, acknowledged %d; batches left pending %d"
        % (row["counted"]["received"], row["counted"]["acknowledged"], row["pending_batches"]),
    ]


def report_lines(row):
    """The report's latency as lines of the table."""
    figures = row["figures"]
    if row["label"].endswith("first"):
        return ["reach report right after the send (counts the audience once and stores it): %.1f ms; audience %s"
                % (row["first_ms"], row["figures"]["audience"])]
    return ["reach report GET /message/:msiKey/receipts, %d requests one after another: first %.1f ms, p50 %.1f ms, "
            "p99 %.1f ms, max %.1f ms (load average %s); statuses %s"
            % (row["requests"], row["first_ms"], row["p50_ms"], row["p99_ms"], row["max_ms"], row["load"],
               row["statuses"]),
            "  audience %s, accepted %s, received %s, acknowledged %s, not answered %s; a page of %d not answered"
            % (figures["audience"], figures["fcm_accepted"], figures["received"], figures["acknowledged"],
               figures["not_answered"], row["page"])]


def section(results, add):
    """The receipts' section: the load run, the report's latency, issue 30's targets."""
    load_row, first_row = results.first("receipts"), results.first("receipts report first")
    report_row = results.first("receipts report after")
    if not load_row and not report_row:
        return
    add("receipts and the reach report (issue 30): %s CPUs" % os.cpu_count())
    for row, lines in ((first_row, report_lines), (load_row, run_lines), (report_row, report_lines)):
        for line in (lines(row) if row else []):
            add(line)
    add("targets (issue 30)")

    def target(text, value, ok):
        add("  %-64s %-22s %s" % (text, value, verdict(ok)))

    if load_row:
        expected = load_row["devices"] + (load_row["devices"] + 1) // 2
        target("every receipt stored and counted exactly once", "%d/%d, counted %d+%d"
               % (load_row["stored"], expected, load_row["counted"]["received"], load_row["counted"]["acknowledged"]),
               load_row["stored"] == expected and sum(load_row["counted"].values()) == expected
               and load_row["pending_batches"] == 0)
        target("%d devices' receipts within a minute" % load_row["devices"], "%.1f s" % load_row["seconds"],
               load_row["seconds"] <= 60)
    if report_row:
        target("reach report p99 < %d ms" % TARGET_REPORT_MS, "%.1f ms" % report_row["p99_ms"],
               report_row["p99_ms"] < TARGET_REPORT_MS and report_row["statuses"].get("200") == report_row["requests"])
    add("")


def table(results_path, out_path):
    """Prints the receipts' section of the results file and appends it to `out_path`."""
    section_table(section, results_path, out_path)


COMMANDS = [
    Command("receipts-cube", cube, "URI FIXTURE", "put the legacy channel fixture into the database"),
    Command("receipts-load", load, "URI COUNT SECRETS",
            "put COUNT active devices subscribed to the fixture's hours topic into the database, secrets to SECRETS"),
    Command("receipts-send", send, "HUB TOKEN OUT", "POST an Alert to the hours topic, wait until sent, msi_key to OUT"),
    Command("receipts-run", run, "RESULTS URI HUB SECRETS KEY_FILE DB_PID HUB_PID CONNECTIONS",
            "every device POSTs received, every other acknowledged; receipts/s and CPU per receipt"),
    Command("receipts-report", report_latency, "RESULTS HUB TOKEN KEY_FILE REQUESTS WHEN",
            "GET the reach report REQUESTS times: p50, p99 against 100 ms (WHEN: first or after)"),
    Command("receipts-table", table, "RESULTS OUT", "print the receipts' section and append it to OUT"),
]

REPORT_ORDER = 50


def report(results, add):
    """The receipts' section, when the run has one."""
    section(results, add)
