#!/usr/bin/env python3
"""Helpers for scripts/bench.sh (run with the test database's venv, which has pymongo).

    bench.py load URI CUBE                      replace the icube collection with the cube file
    bench.py topics CUBE SENDER                 an Alert and an Information topic SENDER may send to
    bench.py wrk RESULTS LABEL SERVER PIDS DB_PID -- WRK-ARGS...
                                                run wrk, read the server's and the database's CPU and
                                                the server's memory from /proc before and after,
                                                append one JSON result to RESULTS
    bench.py durable RESULTS URI KEYS           check every 201 of the POST run is in `message`
    bench.py drain URI TIMEOUT                  wait until no message is pending relay
    bench.py store URL TOKEN ALERT INFO COUNT   POST COUNT messages over 16 connections
    bench.py relay RESULTS URI FAKE DB_PID FAKE_PID PIDFILE LOG TIMEOUT HUB_URL -- HUB-COMMAND...
                                                start a hub, time until the fake has every pending
                                                message's components, stop the hub
    bench.py floor RESULTS URI DB_PID SECONDS ALERT INFO
                                                the database's own floor: POST's documents inserted
                                                with insert_one by 16 threads into a copy of
                                                `message` (same indexes) for SECONDS
    bench.py ticks PID                          print a process's CPU clock ticks
    bench.py relaycost RESULTS URI DB_PID TICKS FAKE KEYS WRK_STARTED TIMEOUT
                                                wait until the fake has every component of the POST
                                                run's 201s and every outcome is written, then record
                                                the database's CPU per message since TICKS and the lag
                                                from 201 to the fake (p50/p99)
    bench.py meta RESULTS KEY=VALUE...          record facts about the run for the table
    bench.py table RESULTS OUT                  print the table and write it to OUT

PIDS is a comma-separated list; the first is the process whose peak RSS is reported.
"""
import http.client
import json
import os
import re
import sys
import threading
import time
import urllib.request

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


# MARK: /proc

def cpu_ticks(pid):
    """utime + stime of a process, all threads, in clock ticks."""
    with open("/proc/%d/stat" % pid) as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])  # fields 14 and 15 of proc(5), counted after the comm


def settle(pid, quiet_ticks=4, limit=60.0):
    """Waits until the process `pid` (the database) is quiet: at most `quiet_ticks` clock ticks of CPU in a second
    (what the hub's own polling costs it), for at most `limit` seconds. A write's cost is not all paid while it
    is acknowledged: the storage engine evicts afterwards, on threads of its own. So the next phase starts on a
    quiet database, and the floor's inserts are counted until it is quiet again."""
    deadline = time.time() + limit
    before = cpu_ticks(pid)
    while time.time() < deadline:
        time.sleep(1)
        now = cpu_ticks(pid)
        if now - before <= quiet_ticks:
            return
        before = now


def quiet(pid):
    """Waits until the database `pid` is quiet (`settle`) and says how long that took and what it cost."""
    started, before = time.time(), cpu_ticks(int(pid))
    settle(int(pid), limit=120.0)
    print("the database was quiet %.0f s later, after %.0f ms of CPU"
          % (time.time() - started, (cpu_ticks(int(pid)) - before) * 1000.0 / CLOCK_TICKS))


def status_kb(pid, key):
    with open("/proc/%d/status" % pid) as status:
        for line in status:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return 0


def children(pid):
    """The direct children of `pid` (nginx's workers)."""
    try:
        with open("/proc/%d/task/%d/children" % (pid, pid)) as listing:
            return [int(child) for child in listing.read().split()]
    except OSError:
        return []


def processes(pids):
    """The pids and their children: nginx's master and workers."""
    result = []
    for pid in pids:
        result.append(pid)
        result.extend(children(pid))
    return result


# MARK: wrk

UNITS = {"us": 0.001, "ms": 1.0, "s": 1000.0, "m": 60000.0}


def milliseconds(text):
    match = re.fullmatch(r"([\d.]+)(us|ms|s|m)", text.strip())
    return float(match.group(1)) * UNITS[match.group(2)]


def parse_wrk(output):
    result = {}
    match = re.search(r"Requests/sec:\s+([\d.]+)", output)
    result["rps"] = float(match.group(1)) if match else 0.0
    match = re.search(r"(\d+) requests in ([\d.]+)(\w+)", output)
    result["requests"] = int(match.group(1)) if match else 0
    for percentile in ("50", "75", "90", "99"):
        match = re.search(r"^\s+%s%%\s+(\S+)" % percentile, output, re.MULTILINE)
        result["p" + percentile] = milliseconds(match.group(1)) if match else None
    match = re.search(r"Non-2xx or 3xx responses: (\d+)", output)
    result["errors"] = int(match.group(1)) if match else 0
    match = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", output)
    result["socket_errors"] = sum(int(value) for value in match.groups()) if match else 0
    match = re.search(r"statuses: created=(\d+) other=(\d+)", output)
    if match:
        result["created"], result["other"] = int(match.group(1)), int(match.group(2))
    return result


def run_wrk(results, label, server, pids, db_pid, arguments):
    pids = [int(pid) for pid in pids.split(",")]
    watched = processes(pids)
    before = sum(cpu_ticks(pid) for pid in watched)
    db_before = cpu_ticks(int(db_pid))
    started = time.time()
    completed = __import__("subprocess").run(["wrk"] + arguments, capture_output=True, text=True)
    elapsed = time.time() - started
    after = sum(cpu_ticks(pid) for pid in watched)
    db_after = cpu_ticks(int(db_pid))
    if completed.returncode != 0:
        sys.exit("wrk failed: " + completed.stderr)
    result = parse_wrk(completed.stdout)
    result.update({
        "label": label, "server": server, "wall_s": round(elapsed, 2),
        "cpu_ms": (after - before) * 1000.0 / CLOCK_TICKS,
        "db_cpu_ms": (db_after - db_before) * 1000.0 / CLOCK_TICKS,
        "rss_peak_kb": sum(status_kb(pid, "VmHWM") for pid in watched),
        "rss_now_kb": sum(status_kb(pid, "VmRSS") for pid in watched),
        "processes": len(watched),
    })
    result["cpu_ms_per_request"] = result["cpu_ms"] / result["requests"] if result["requests"] else None
    result["db_cpu_ms_per_request"] = result["db_cpu_ms"] / result["requests"] if result["requests"] else None
    with open(results, "a") as out:
        out.write(json.dumps(result) + "\n")
    summary = "%-34s %-5s %9.0f req/s  p50 %7.2f ms  p99 %7.2f ms  cpu %.3f ms/req" % (
        label, server, result["rps"], result["p50"] or 0, result["p99"] or 0, result["cpu_ms_per_request"] or 0)
    if result["errors"] or result["socket_errors"]:
        summary += "  (%d non-2xx/3xx, %d socket errors)" % (result["errors"], result["socket_errors"])
    print(summary, flush=True)
    with open(results + ".wrk.txt", "a") as raw:
        raw.write("== %s %s: wrk %s\n%s\n" % (label, server, " ".join(arguments), completed.stdout))


# MARK: the database

def database(uri):
    import pymongo
    client = pymongo.MongoClient(uri, serverSelectionTimeoutMS=5000)
    return client.get_default_database()


def load(uri, cube_path):
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
    with open(results, "a") as out:
        out.write(json.dumps(result) + "\n")
    print("POST /message: %d answered 201, %d of them found in `message` (%d documents in all)"
          % (len(acknowledged), stored, total), flush=True)


def unrelayed(db):
    """Messages whose relay is not over and on record: those pending, and those a hub stores and sends itself
    (`direct`) that its progress record (`relay_progress`) has not passed yet. The second part is looked for
    only once nothing is pending, bounded as the hub bounds it, by `timestamp` from the record's `since`."""
    count = db.message.count_documents({"relay.state": "pending"})
    if count:
        return count
    records = list(db.relay_progress.find({}, {"through": 1, "since": 1}))
    for record in records:
        count += db.message.count_documents({
            "timestamp": {"$gte": record.get("since", 0) - 60000}, "relay.state": "direct",
            "relay.lease_owner": record["_id"], "relay.seq": {"$gt": record.get("through", 0)}})
    return count


def drain(uri, timeout):
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


# MARK: the database's floor and a message's cost (issue 14)

LOREM = ("Buses on the 7 and 12 routes leave from the sports hall car park this afternoon because of "
         "roadworks on Station Road. Staff will be there from 15:05 to show the way; students who walk home "
         "are not affected. Please tell your parents or carers if they collect you by car.")


def floor_document(index, alert, info):
    """A document as POST /message stores it (see post-message.lua and RelayPlan), without a lease."""
    from bson import ObjectId
    distribution = "Alert" if index % 2 == 0 else "Information"
    now = int(time.time() * 1000)
    components = {"notification": {"state": "pending", "attempts": 0}} if distribution == "Alert" else {}
    components["data"] = {"state": "pending", "attempts": 0}
    return {
        "_id": ObjectId(), "msi_key": ObjectId(), "title": "Bus stop moved today",
        "desc": "Buses leave from the sports hall car park at 15:15", "message": LOREM,
        "topic_key": alert if distribution == "Alert" else info, "distribution": distribution,
        "sender": "bench-sender", "timestamp": now,
        "relay": {"state": "pending", "due_at": now, "deadline_at": now + 6 * 3600 * 1000, "attempts": 0,
                  "components": components},
    }


def percentile(values, fraction):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))] if ordered else None


def floor(results, uri, db_pid, seconds, alert, info, clients=16):
    """16 clients inserting POST's documents one insert_one each, straight into a copy of `message`."""
    import pymongo
    db = database(uri)
    db.bench_floor.drop()
    for name, spec in db.message.index_information().items():
        if name == "_id_":
            continue
        options = {"name": name, "unique": spec.get("unique", False)}
        if "partialFilterExpression" in spec:
            options["partialFilterExpression"] = spec["partialFilterExpression"]
        db.bench_floor.create_index(spec["key"], **options)
    latencies = []
    lock = threading.Lock()
    deadline = time.time() + float(seconds)

    def client(number):
        collection = pymongo.MongoClient(uri, maxPoolSize=1).get_default_database().bench_floor
        mine, index = [], number
        while time.time() < deadline:
            document = floor_document(index, alert, info)
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
    db.bench_floor.drop()
    settle(int(db_pid))
    result = {"label": "floor", "inserts": len(latencies), "rps": len(latencies) / elapsed,
              "p50": percentile(latencies, 0.50), "p99": percentile(latencies, 0.99),
              "db_cpu_ms": (db_after - db_before) * 1000.0 / CLOCK_TICKS,
              "db_cpu_ms_after": (db_after - db_acknowledged) * 1000.0 / CLOCK_TICKS}
    result["db_cpu_ms_per_insert"] = result["db_cpu_ms"] / max(len(latencies), 1)
    with open(results, "a") as out:
        out.write(json.dumps(result) + "\n")
    print("floor: %d insert_one by %d clients: %.0f inserts/s, p50 %.2f ms, p99 %.2f ms, database CPU %.3f ms per insert "
          "(%.0f ms of it after the last insert, until the database was quiet)"
          % (len(latencies), clients, result["rps"], result["p50"], result["p99"], result["db_cpu_ms_per_insert"],
             result["db_cpu_ms_after"]), flush=True)


def ticks(pid):
    print(cpu_ticks(int(pid)))


def arrivals(fake):
    with urllib.request.urlopen(fake + "/_received/arrivals", timeout=30) as response:
        return json.load(response)


def relaycost(results, uri, db_pid, ticks_before, fake, keys_path, wrk_started, timeout):
    """After the POST run: waits (polling the fake) until every component of every 201 has reached the fake
    and then until every outcome is on record (none pending, none past its hub's progress), then records the database's CPU per message from the POST run's start to here, the
    end-to-end relay rate and the lag from each message's timestamp (stored just before its 201) to its
    components' arrival at the fake."""
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
    db_cpu_ms = (recorded_ticks - int(ticks_before)) * 1000.0 / CLOCK_TICKS
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
              "db_cpu_ms_after": (quiet_ticks - recorded_ticks) * 1000.0 / CLOCK_TICKS,
              "quiet_after_s": time.time() - quiet_started,
              "load": "load average %s" % " ".join(open("/proc/loadavg").read().split()[:3])}
    with open(results, "a") as out:
        out.write(json.dumps(result) + "\n")
    print("POST run relayed: %d of %d components at the fake; database CPU %.3f ms per message (POST to outcome "
          "on record, %.1f s after the POST run started); lag from 201 to the fake p50 %s ms, p99 %s ms; %.0f messages/s "
          "end to end; then the database used %.0f ms of CPU in %.0f s before it was quiet (not counted)"
          % (arrived, components, result["db_cpu_ms_per_message"], result["recorded_s"], result["lag_p50_ms"],
             result["lag_p99_ms"], result["relay_rate"], result["db_cpu_ms_after"], result["quiet_after_s"]), flush=True)


# MARK: the relay

def store(url, token, alert, info, count, connections=16):
    """POSTs `count` messages (alternating topics) over `connections` keep-alive connections."""
    host, port = re.match(r"http://([^:/]+):(\d+)", url).groups()
    headers = {"Content-Type": "application/json", "Authorization": "Bearer " + token}
    bodies = [json.dumps({"title": "Relay %s" % kind, "desc": "Relay benchmark message", "topic_key": topic,
                          "message": "A message stored to measure the relay's throughput to FCM.",
                          "distribution": kind}) for kind, topic in (("Alert", alert), ("Information", info))]
    next_index = iter(range(count))
    lock = threading.Lock()
    failures = []

    def worker():
        connection = http.client.HTTPConnection(host, int(port), timeout=30)
        while True:
            with lock:
                index = next(next_index, None)
            if index is None:
                return
            connection.request("POST", "/message", bodies[index % 2], headers)
            response = connection.getresponse()
            response.read()
            if response.status != 201:
                failures.append(response.status)

    started = time.time()
    workers = [threading.Thread(target=worker) for _ in range(connections)]
    for thread in workers:
        thread.start()
    for thread in workers:
        thread.join()
    if failures:
        sys.exit("storing the relay's messages: %d answers were not 201 (%s)" % (len(failures), failures[:5]))
    print("stored %d messages in %.1f s (relay off)" % (count, time.time() - started), flush=True)


def received(fake):
    with urllib.request.urlopen(fake + "/_received/count", timeout=5) as response:
        return json.load(response)["count"]


def outbox_metrics(hub_url):
    """The outbox's counters from the hub's GET /metrics (an empty dict when it has none)."""
    try:
        with urllib.request.urlopen(hub_url + "/metrics", timeout=5) as response:
            text = response.read().decode()
    except OSError:
        return {}
    found = {}
    for name in ("msi_outbox_claims_total", "msi_outbox_claimed_messages_total", "msi_outbox_outcome_writes_total"):
        match = re.search(r"^%s(?:\{[^}]*\})? ([\d.e+]+)$" % name, text, re.MULTILINE)
        if match:
            found[name] = float(match.group(1))
    return found


def relay(results, uri, fake, db_pid, fake_pid, pidfile, log, timeout, hub_url, command):
    """Starts a hub with `command` (its pid in `pidfile` for the caller's clean-up, its output appended to
    `log`), times the relay of every pending message from its start until the fake has every component,
    and stops it. Gives up after `timeout` seconds and reports what was relayed by then."""
    import signal
    import subprocess
    db = database(uri)
    sent_before = db.message.count_documents({"relay.state": "sent"})
    alerts = db.message.count_documents({"relay.state": "pending", "distribution": "Alert"})
    messages = db.message.count_documents({"relay.state": "pending"})
    components = messages + alerts
    base = received(fake)
    db_before, fake_before = cpu_ticks(int(db_pid)), cpu_ticks(int(fake_pid))
    started = time.time()
    with open(log, "a") as output:
        hub = subprocess.Popen(command, stdout=output, stderr=subprocess.STDOUT)
    with open(pidfile, "w") as out:
        out.write(str(hub.pid))
    pid = hub.pid
    first = None
    deadline = started + float(timeout)
    while True:
        count = received(fake) - base
        now = time.time()
        if count > 0 and first is None:
            first = now
        if count >= components or now > deadline:
            break
        if hub.poll() is not None:
            sys.exit("the relaying hub exited with status %d" % hub.returncode)
        time.sleep(0.02)
    done = time.time()
    # The last outcomes are written in bulk after the last send: wait for them too.
    while db.message.count_documents({"relay.state": "pending"}) and time.time() < deadline + 5:
        time.sleep(0.05)
    recorded = time.time()
    sent = db.message.count_documents({"relay.state": "sent"}) - sent_before
    result = {
        "label": "relay", "messages": messages, "components": components, "received": received(fake) - base,
        "first_s": (first or done) - started, "span_s": done - (first or done),
        "total_s": done - started, "recorded_s": recorded - started, "sent": sent,
        "pending": db.message.count_documents({"relay.state": "pending"}),
        "cpu_ms": cpu_ticks(pid) * 1000.0 / CLOCK_TICKS, "rss_peak_kb": status_kb(pid, "VmHWM"),
        "db_cpu_ms": (cpu_ticks(int(db_pid)) - db_before) * 1000.0 / CLOCK_TICKS,
        "fake_cpu_ms": (cpu_ticks(int(fake_pid)) - fake_before) * 1000.0 / CLOCK_TICKS,
        "concurrency": int(os.environ.get("RELAY_CONCURRENCY", "16")),
    }
    result.update(outbox_metrics(hub_url))
    hub.send_signal(signal.SIGTERM)
    hub.wait(timeout=30)
    with open(results, "a") as out:
        out.write(json.dumps(result) + "\n")
    span = result["span_s"] or 1e-9
    done_messages = relayed_messages(result)
    print("relay: %d of %d messages (%d FCM requests) in %.2f s from the first send: %.0f messages/s, "
          "%.0f requests/s" % (done_messages, messages, result["received"], span, done_messages / span,
                               result["received"] / span), flush=True)


def relayed_messages(result):
    """The messages relayed: all of them, or when the run gave up, the requests received as messages."""
    if result["received"] >= result["components"]:
        return result["messages"]
    return result["received"] * result["messages"] / max(result["components"], 1)


# MARK: the table

def mixedposts(results, wrk_output):
    """Records the POST run of the mixed phase (its wrk output) for the table."""
    result = parse_wrk(open(wrk_output).read())
    result["label"] = "mixedposts"
    with open(results, "a") as out:
        out.write(json.dumps(result) + "\n")


def meta(results, *pairs):
    record = {"label": "meta"}
    record.update(pair.split("=", 1) for pair in pairs)
    with open(results, "a") as out:
        out.write(json.dumps(record) + "\n")


def table(results, out_path):
    rows = [json.loads(line) for line in open(results) if line.strip()]
    runs = {(row["label"], row["server"]): row for row in rows if "server" in row}
    meta = next((row for row in rows if row.get("label") == "meta"), {})
    lines = []
    add = lines.append
    add("msi-hub make bench, %s" % meta.get("date", ""))
    add("machine: %s CPUs, %s; wrk 1 thread over loopback; nginx %s (worker_processes auto)"
        % (meta.get("cpus", "?"), meta.get("load", ""), meta.get("nginx", "")))
    add("cube: %s bytes as GET /channel serves it, %s bytes gzip; hub RELAY_CONCURRENCY=%s"
        % (meta.get("cube_bytes", "?"), meta.get("gzip_bytes", "?"), meta.get("relay_concurrency", "16")))
    add("")
    header = "%-30s %-11s %10s %9s %9s %12s %10s %14s" % (
        "scenario", "server", "req/s", "p50 ms", "p99 ms", "CPU ms/req", "peak RSS", "DB CPU ms/req")
    add(header)
    add("-" * len(header))

    def number(value, form):
        return form % value if value is not None else "-"

    def ratio(a, b):
        return a / b if a is not None and b else None

    labels = []
    for row in rows:
        if "server" in row and row["label"] not in labels:
            labels.append(row["label"])
    for label in labels:
        hub, nginx = runs.get((label, "hub")), runs.get((label, "nginx"))
        for name, row in (("hub", hub), ("nginx", nginx)):
            if not row:
                continue
            note = ""
            if row.get("errors") or row.get("socket_errors"):
                note = "  (%d non-2xx/3xx, %d socket errors)" % (row["errors"], row["socket_errors"])
            if "created" in row:
                note += "  (%d answered 201, %d other)" % (row["created"], row["other"])
            add("%-30s %-11s %10.0f %9s %9s %12s %9.1fM %14s%s" % (
                label, name, row["rps"], number(row["p50"], "%.2f"), number(row["p99"], "%.2f"),
                number(row["cpu_ms_per_request"], "%.4f"), row["rss_peak_kb"] / 1024.0,
                number(row.get("db_cpu_ms_per_request") if name == "hub" else None, "%.4f"), note))
        if hub and nginx:
            add("%-30s %-11s %9.2fx %8.2fx %8.2fx %11.2fx %9.2fx" % (
                "", "hub/nginx", ratio(hub["rps"], nginx["rps"]) or 0, ratio(hub["p50"], nginx["p50"]) or 0,
                ratio(hub["p99"], nginx["p99"]) or 0,
                ratio(hub["cpu_ms_per_request"], nginx["cpu_ms_per_request"]) or 0,
                ratio(hub["rss_peak_kb"], nginx["rss_peak_kb"]) or 0))
        add("")

    relay_row = next((row for row in rows if row.get("label") == "relay"), None)
    if relay_row:
        span = relay_row["span_s"] or 1e-9
        relayed = relayed_messages(relay_row)
        complete = relay_row["received"] >= relay_row["components"]
        add("relay, end to end to the fake FCM (RELAY_CONCURRENCY=%d): %d messages stored = %d FCM requests"
            % (relay_row["concurrency"], relay_row["messages"], relay_row["components"]))
        add("  first send %.2f s after the hub started; %s %d requests received %.2f s later: "
            "%.0f messages/s, %.0f FCM requests/s"
            % (relay_row["first_s"], "all" if complete else "only (the run gave up)", relay_row["received"],
               span, relayed / span, relay_row["received"] / span))
        add("  from the hub's start: %.0f messages/s; outcomes recorded after %.2f s (%d sent, %d pending)"
            % (relayed / relay_row["total_s"], relay_row["recorded_s"], relay_row["sent"], relay_row["pending"]))
        per_message = max(relay_row["messages"], 1)
        if "msi_outbox_claims_total" in relay_row:
            add("  outbox: %d claims for %d messages (%.1f per claim), %d outcome writes"
                % (relay_row["msi_outbox_claims_total"], relay_row.get("msi_outbox_claimed_messages_total", 0),
                   relay_row.get("msi_outbox_claimed_messages_total", 0) / max(relay_row["msi_outbox_claims_total"], 1),
                   relay_row.get("msi_outbox_outcome_writes_total", 0)))
        add("  CPU per message (start-up included): hub %.2f ms, database %.2f ms, fake FCM %.2f ms; "
            "hub peak RSS %.1fM"
            % (relay_row["cpu_ms"] / per_message, relay_row["db_cpu_ms"] / per_message,
               relay_row["fake_cpu_ms"] / per_message, relay_row["rss_peak_kb"] / 1024.0))
        add("")

    floor_row = next((row for row in rows if row.get("label") == "floor"), None)
    cost_row = next((row for row in rows if row.get("label") == "relaycost"), None)
    post = runs.get(("POST /message, 16 conn", "hub"))
    if floor_row and cost_row and post:
        add("a message's database cost against the database's floor (issue 14), %s after the POST run"
            % cost_row.get("load", ""))
        add("  floor: %d insert_one by 16 clients: %.0f inserts/s, p50 %.2f ms, p99 %.2f ms, database CPU %.3f ms/insert"
            % (floor_row["inserts"], floor_row["rps"], floor_row["p50"], floor_row["p99"], floor_row["db_cpu_ms_per_insert"]))
        add("  POST /message: %.0f req/s, p99 %.2f ms; relayed %d/%d components, %.0f messages/s end to end; "
            "database CPU %.3f ms per message from POST to outcome on record (%.1f s); lag 201 -> fake p50 %s ms, p99 %s ms"
            % (post["rps"], post["p99"], cost_row["arrived"], cost_row["components"], cost_row["relay_rate"],
               cost_row["db_cpu_ms_per_message"], cost_row.get("recorded_s", 0), number(cost_row["lag_p50_ms"], "%.0f"), number(cost_row["lag_p99_ms"], "%.0f")))
        add("targets (issue 14), ratios within this run")

        def cost_target(text, value, ok):
            add("  %-64s %-22s %s" % (text, value, "PASS" if ok else "MISS"))

        cpu = ratio(cost_row["db_cpu_ms_per_message"], floor_row["db_cpu_ms_per_insert"])
        cost_target("database CPU per relayed message <= 1.0x floor's per insert", "%.2fx" % cpu, cpu <= 1.0)
        rate = ratio(post["rps"], floor_row["rps"])
        cost_target("POST /message req/s >= 1.5x floor's inserts/s", "%.2fx" % rate, rate >= 1.5)
        p99 = ratio(post["p99"], floor_row["p99"])
        cost_target("POST /message p99 <= floor's p99 (16 conn)", "%.2fx" % p99, p99 <= 1.0)
        lag = cost_row["lag_p99_ms"]
        cost_target("relay lag p99, 201 to the fake FCM, <= 2 s", number(lag, "%.0f ms"),
                    lag is not None and lag <= 2000 and cost_row["arrived"] >= cost_row["components"])
        add("")

    mixed_posts = next((row for row in rows if row.get("label") == "mixedposts"), None)
    mixed_labels = (("GET /channel, 16 conn", "mixed: GET /channel, 16 conn"),
                    ("conditional GET (304), 16 conn", "mixed: conditional GET, 16 conn"))
    mixed = [(runs.get((alone, "hub")), runs.get((beside, "hub")), runs.get((alone, "nginx")),
              runs.get((beside, "nginx"))) for alone, beside in mixed_labels]
    if any(row[1] for row in mixed):
        add("mixed phase (issue 14): GETs at 16 conn while POST /message runs at 16 conn beside them%s"
            % (" (POSTs: %.0f req/s, %d answered 201, %d other)" % (mixed_posts["rps"], mixed_posts.get("created", 0),
                                                                   mixed_posts.get("other", 0)) if mixed_posts else ""))
        for alone, beside, control_alone, control_beside in mixed:
            if not (alone and beside):
                continue
            p99 = ratio(beside["p99"], alone["p99"])
            errors = beside["errors"] + beside["socket_errors"]
            add("  %-64s %-22s %s" % ("%s p99 <= 2x without writes, zero errors" % beside["label"][7:],
                                      "%.2fx, %d errors" % (p99 or 0, errors),
                                      "PASS" if p99 is not None and p99 <= 2 and errors == 0 else "MISS"))
            if control_alone and control_beside:
                add("    control: nginx serving the same bytes beside the same POSTs: p99 %.2f ms -> %.2f ms, %.2fx"
                    % (control_alone["p99"], control_beside["p99"], ratio(control_beside["p99"], control_alone["p99"])))
        add("")

    durable_row = next((row for row in rows if row.get("label") == "durable"), None)
    peak = max((row["rss_peak_kb"] for row in rows if row.get("server") == "hub"), default=0)
    add("targets (issue 8), ratios within this run")

    def target(text, value, ok):
        add("  %-64s %-22s %s" % (text, value, "PASS" if ok else "MISS"))

    for connections in ("16", "128"):
        hub, nginx = runs.get(("GET /channel, %s conn" % connections, "hub")), \
            runs.get(("GET /channel, %s conn" % connections, "nginx"))
        if hub and nginx:
            share = hub["rps"] / nginx["rps"]
            target("GET /channel (%s conn) req/s >= 50%% of nginx's" % connections, "%.0f%%" % (100 * share),
                   share >= 0.5 and not hub["errors"])
            p99 = ratio(hub["p99"], nginx["p99"])
            target("GET /channel (%s conn) p99 <= 2x nginx's" % connections, "%.2fx" % p99, p99 <= 2)
    hub, nginx = runs.get(("conditional GET (304), 16 conn", "hub")), \
        runs.get(("conditional GET (304), 16 conn", "nginx"))
    if hub and nginx:
        share = hub["rps"] / nginx["rps"]
        target("conditional GET 304/s >= 50% of nginx's", "%.0f%%" % (100 * share), share >= 0.5)
    for label in ("GET /channel, 16 conn", "GET /channel, 128 conn", "gzip GET, 16 conn",
                  "conditional GET (304), 16 conn"):
        hub, nginx = runs.get((label, "hub")), runs.get((label, "nginx"))
        if hub and nginx:
            cpu = ratio(hub["cpu_ms_per_request"], nginx["cpu_ms_per_request"])
            target("hub CPU per request <= 3x nginx's (%s)" % label, "%.2fx" % cpu, cpu <= 3)
    target("hub peak RSS under load < 100 MB", "%.1f MB" % (peak / 1024.0), peak < 100 * 1024)
    post = runs.get(("POST /message, 16 conn", "hub"))
    if post:
        target("POST /message p99 < 20 ms at 16 conn", "%.2f ms" % post["p99"], post["p99"] < 20)
        if durable_row:
            ok = (post.get("other") == 0 and durable_row["stored"] == durable_row["acknowledged"]
                  == post.get("created") and not post["errors"] and not post["socket_errors"])
            target("POST /message: every answer 201, every 201 durable",
                   "%d/%d stored" % (durable_row["stored"], durable_row["acknowledged"]), ok)
    text = "\n".join(lines) + "\n"
    print(text)
    with open(out_path, "w") as out:
        out.write(text)


def main(argv):
    if len(argv) < 2:
        sys.exit(__doc__)
    command, args = argv[1], argv[2:]
    if command in ("wrk", "relay"):
        split = args.index("--")
        (run_wrk if command == "wrk" else relay)(*args[:split], args[split + 1:])
    elif command == "floor":
        floor(args[0], args[1], args[2], args[3], args[4], args[5])
    elif command == "store":
        store(args[0], args[1], args[2], args[3], int(args[4]))
    else:
        handlers = {"load": load, "topics": topics, "durable": durable, "drain": drain, "relay": relay,
                    "meta": meta, "table": table, "ticks": ticks, "relaycost": relaycost,
                    "mixedposts": mixedposts, "quiet": quiet}
        if command not in handlers:
            sys.exit(__doc__)
        handlers[command](*args)


if __name__ == "__main__":
    main(sys.argv)
