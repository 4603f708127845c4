"""What scripts/bench-fanout.sh asks of this helper: a message to a group of persons, each with one device, sent
device by device to the fake FCM over HTTP/2; the fake's own ceiling measured with h2load at the hub's connections
and streams; the same fan-out paced by FCM_SEND_RATE; and the table's section on them."""
import base64
import json
import os
import re
import subprocess
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request

from support.cli import Command
from support.database import database
from support.fake import arrivals, received
from support.proc import cpu_ms, cpu_ticks, load_average, status_kb
from support.results import Results, append, section_table, verdict

TARGET_RATE = 5000  # sends/s (issue 29)


def load(uri, count, group):
    """Puts `count` active devices bound to as many persons (person-00000...) straight into `devices`, in the shape
    DeviceDAO.register and bind write them (platform alternating ios/android), and group `group` of all those persons
    in `groups` (with its member ranges' marks) and `group_members` as GroupDAO.replace writes them. Bulk inserts of 2,000 documents, as GroupDAO
    writes members: SecantusDB holds its lock for a whole command."""
    import bson
    db, count = database(uri), int(count)
    started = time.time()
    now = int(started * 1000)
    persons = ["person-%05d" % index for index in range(count)]
    devices = [{"_id": bson.ObjectId(), "registration": "bench-fanout-%05d-%s" % (index, os.urandom(8).hex()),
                "platform": "ios" if index % 2 == 0 else "android", "secret_hash": os.urandom(32).hex(),
                "state": "active", "created_at": now, "updated_at": now, "person": person}
               for index, person in enumerate(persons)]
    sync = bson.ObjectId()
    members = [{"group": group, "person": person, "sync": sync} for person in persons]
    for documents, collection in ((devices, db.devices), (members, db.group_members)):
        for start in range(0, len(documents), 2000):
            collection.insert_many(documents[start:start + 2000], ordered=False)
    # GroupDAO.rangeMarks: the ids the member ranges begin at (the fan-out reads a range at a time), in the
    # database's order (UTF-8 bytes, which is Python's order of str).
    marks = sorted(persons)[128::1024]
    db.groups.update_one({"_id": group}, {"$set": {"name": "Bench fan-out", "access": [], "updated_at": now,
                                                   "member_count": count, "member_marks": marks},
                                          "$setOnInsert": {"created_at": now}}, upsert=True)
    print("loaded %d devices bound to %d persons and group %s of them in %.1f s"
          % (count, count, group, time.time() - started), flush=True)


def object_id(value):
    """An ObjectId's hex from the hub's JSON (a string, or extended JSON's {"$oid": ...})."""
    return value.get("$oid") if isinstance(value, dict) else value


def post(hub, token, group, title):
    """POSTs an Alert to group `group`; returns the stored message's msi_key and _id (hex) and when the 201 came."""
    body = json.dumps({"title": title, "desc": "Fan-out benchmark", "distribution": "Alert",
                       "message": "A message to every member of a group, sent device by device.",
                       "to": {"groups": [group]}}).encode()
    request = urllib.request.Request(hub + "/message", data=body, method="POST", headers={
        "Content-Type": "application/json", "Authorization": "Bearer " + token})
    with urllib.request.urlopen(request, timeout=60) as response:
        if response.status != 201:
            raise SystemExit("POST /message answered %d" % response.status)
        stored = json.load(response)
    return object_id(stored["msi_key"]), object_id(stored["_id"]), time.time()


def run(results, label, uri, hub, token, fake, db_pid, hub_pid, fake_pid, group, count, timeout, rate):
    """One fan-out (`measure`), recorded in `results` and printed."""
    row = measure(label, uri, hub, token, fake, db_pid, hub_pid, fake_pid, group, count, timeout, rate)
    append(results, row)
    for line in run_lines(row):
        print(line, flush=True)


def measure(label, uri, hub, token, fake, db_pid, hub_pid, fake_pid, group, count, timeout, rate):
    """One fan-out: POSTs an Alert to `group`, waits until the fake has accepted `count` sends more and the hub has
    recorded every delivery's outcome (or `timeout` seconds); returns its row: the rate from the 201 to the last send
    accepted, the most sends accepted in any one second, the CPU each process spent, the hub's peak RSS and how long
    the outcomes took to be recorded. `rate` is the hub's FCM_SEND_RATE ("-": the default)."""
    db, count, timeout = database(uri), int(count), float(timeout)
    db_pid, hub_pid, fake_pid = int(db_pid), int(hub_pid), int(fake_pid)
    base = received(fake)
    stats_before = stats(fake)
    load_before = load_average()
    ticks = {"db": cpu_ticks(db_pid), "hub": cpu_ticks(hub_pid), "fake": cpu_ticks(fake_pid)}
    posted = time.time()
    msi_key, message_id, created = post(hub, token, group, "Fan-out %s" % label)
    deadline = created + timeout
    import bson
    message = bson.ObjectId(message_id)
    polls = 0  # each look at the fake is one HTTP/1.1 connection of its own, told apart from the hub's
    pids = {"db": db_pid, "hub": hub_pid, "fake": fake_pid}
    sending = None  # when the first send was seen, and each process's ticks then
    while True:
        seen = received(fake) - base
        if seen > 0 and sending is None:
            sending = (time.time(), {name: cpu_ticks(pid) for name, pid in pids.items()})
        if seen >= count or time.time() >= deadline:
            break
        polls += 1
        time.sleep(0.05)
    sent = (time.time(), {name: cpu_ticks(pid) for name, pid in pids.items()})
    sending = sending or sent
    # Each process's share of one core while the sends went out: which one held them back.
    busy = {name: cpu_ms(sent[1][name] - sending[1][name]) / 10.0 / max(sent[0] - sending[0], 1e-3)
            for name in pids}
    # The last outcomes are written in bulk after the last answer (a delivery is stored once answered), and the relay
    # marks the message sent once they are: its state is read by _id every 0.1 s, and the deliveries are counted once
    # it is sent (then at most every second; every 5 s should it never be) until every device has an answer for good.
    # Not a count every half second: SecantusDB answers a range of the deliveries' _id index by reading the whole
    # collection (about 20 us a delivery stored, under its lock), so those counts cost the database more than the
    # outcomes they waited for, and more the longer the outcomes took.
    hex_id = str(message)
    counted = time.time()
    while time.time() < deadline:
        stored = db.message.find_one({"_id": message}, {"relay.state": 1}) or {}
        since = time.time() - counted
        if (stored.get("relay", {}).get("state") == "sent" and since >= 1.0) or since >= 5.0:
            counted = time.time()
            answered = db.deliveries.count_documents({"_id": {"$gt": hex_id + "/", "$lt": hex_id + "0"},
                                                      "state": {"$in": ["sent", "failed", "unregistered"]}})
            if answered >= count:
                break
        time.sleep(0.1)
    recorded = time.time()
    spent = {name: cpu_ms(cpu_ticks(pid) - ticks[name])
             for name, pid in (("db", db_pid), ("hub", hub_pid), ("fake", fake_pid))}
    times = sorted(arrival["at_ms"] / 1000.0 for arrival in arrivals(fake) if arrival["msi_key"] == msi_key)
    states = {row["_id"]: row["n"] for row in db.deliveries.aggregate([
        {"$match": {"_id": {"$gt": hex_id + "/", "$lt": hex_id + "0"}}}, {"$group": {"_id": "$state", "n": {"$sum": 1}}}])}
    last = times[-1] if times else created
    stats_after = stats(fake)
    row = {
        "label": "fanout", "run": label, "rate_cap": None if rate == "-" else int(rate), "devices": count,
        "msi_key": msi_key, "message": message_id, "post_s": created - posted, "sends": len(times),
        "first_send_s": (times[0] - created) if times else None, "last_send_s": last - created,
        "sends_per_s": len(times) / max(last - created, 1e-9),
        "peak_sliding": peak_window(times), "peak_calendar": peak_calendar(times),
        "recorded_s": recorded - created, "complete": recorded < deadline, "states": states,
        "db_cpu_ms": spent["db"], "hub_cpu_ms": spent["hub"], "fake_cpu_ms": spent["fake"],
        "busy_percent": busy,
        "hub_rss_peak_kb": status_kb(hub_pid, "VmHWM"), "load_before": load_before,
        # The bench's own connections to the fake (the polls, the arrivals, /_stats) left out.
        "fake_connections_opened": stats_after.get("connections_opened", 0) - stats_before.get("connections_opened", 0)
        - polls - 3,
        "fake_most_sends_in_flight": stats_after.get("most_sends_in_flight"),
        "fake_sends_over_http2": stats_after.get("sends_over_http2", 0) - stats_before.get("sends_over_http2", 0),
    }
    return row


def delete(hub, token, msi_key):
    """DELETEs the message `msi_key` (a withdrawal); returns the status."""
    request = urllib.request.Request(hub + "/message/" + msi_key + "?reason=False%20alarm", method="DELETE",
                                     headers={"Authorization": "Bearer " + token})
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status
    except urllib.error.HTTPError as error:
        return error.code


def bodies(fake, msi_key):
    """The bodies the fake accepted for `msi_key`: (originals, withdrawals), each a list of tokens."""
    with urllib.request.urlopen(fake + "/_received", timeout=120) as response:
        found = json.load(response)
    originals, withdrawals = [], []
    for body in found:
        message = (body or {}).get("message", {})
        data = message.get("data", {})
        if data.get("msi_key") != msi_key or not message.get("token"):
            continue
        (withdrawals if data.get("withdrawn") == "1" else originals).append(message["token"])
    return originals, withdrawals


def withdraw(results, label, uri, hub, token, fake, group, count, after, timeout, in_flight):
    """A false alarm withdrawn mid fan-out: POSTs an Alert to `group`, DELETEs it `after` seconds after the first
    send reached the fake, and records how many sends of the message the fake had when the DELETE answered, how many
    came after that (target: at most what was in flight, `in_flight` the hub's FANOUT in-flight bound), and the
    withdrawals: one to each device reached, none to another, and how long after the answer the last one came."""
    db, count, after, timeout = database(uri), int(count), float(after), float(timeout)
    base = received(fake)
    msi_key, message_id, created = post(hub, token, group, "Fan-out %s" % label)
    deadline = created + timeout
    first = None
    while time.time() < deadline:
        seen = received(fake) - base
        if seen > 0 and first is None:
            first = time.time()
        if first is not None and time.time() - first >= after:
            break
        time.sleep(0.01)
    asked = time.time()
    status = delete(hub, token, msi_key)
    answered = time.time()
    at_answer = received(fake) - base
    import bson
    message = bson.ObjectId(message_id)
    # Sent once the withdrawal went to every device reached.
    while time.time() < deadline:
        stored = db.message.find_one({"_id": message}, {"relay.state": 1}) or {}
        if stored.get("relay", {}).get("state") == "sent":
            break
        time.sleep(0.25)
    settled = time.time()
    time.sleep(1.0)
    originals, withdrawals = bodies(fake, msi_key)
    times = sorted(arrival["at_ms"] / 1000.0 for arrival in arrivals(fake) if arrival["msi_key"] == msi_key)
    row = {
        "label": "fanout withdrawal", "run": label, "devices": count, "msi_key": msi_key, "status": status,
        "withdrawn_after_s": asked - (first or asked), "delete_s": answered - asked, "at_answer": at_answer,
        "originals": len(originals), "after_answer": len(originals) - at_answer, "in_flight": int(in_flight),
        "withdrawals": len(withdrawals), "withdrawn_devices": len(set(withdrawals)),
        "reached_devices": len(set(originals)), "same_devices": set(withdrawals) == set(originals),
        "settled_s": settled - answered, "last_request_s": (times[-1] - answered) if times else None,
        "load": load_average(),
    }
    append(results, row)
    for line in withdrawal_lines(row):
        print(line, flush=True)


def withdrawal_lines(row):
    """A withdrawal run's figures, as lines."""
    return [
        "withdrawn mid fan-out (%s), a group of %d; load average after: %s" % (row["run"], row["devices"], row["load"]),
        "  DELETE %.2f s after the first send answered %d in %.3f s; the fake had %d sends of the message then"
        % (row["withdrawn_after_s"], row["status"], row["delete_s"], row["at_answer"]),
        "  sends after the answer: %d (in flight at most: %d); %d devices reached in all, %d never sent to"
        % (row["after_answer"], row["in_flight"], row["reached_devices"], row["devices"] - row["reached_devices"]),
        "  withdrawals: %d to %d devices, the same devices as reached: %s; message sent (withdrawal done) %.2f s "
        "after the answer" % (row["withdrawals"], row["withdrawn_devices"], row["same_devices"], row["settled_s"]),
    ]


def stats(fake):
    """The fake's GET /_stats (connections, sends in flight), {} when it has none."""
    try:
        with urllib.request.urlopen(fake + "/_stats", timeout=5) as response:
            return json.load(response)
    except OSError:
        return {}


def peak_window(times):
    """The most of `times` (seconds, sorted) in any one-second window [t, t + 1)."""
    best, start = 0, 0
    for end, at in enumerate(times):
        while at - times[start] >= 1.0:
            start += 1
        best = max(best, end - start + 1)
    return best


def peak_calendar(times):
    """The most of `times` within one Unix second."""
    counts = {}
    for at in times:
        counts[int(at)] = counts.get(int(at), 0) + 1
    return max(counts.values(), default=0)


def tokens(results, fake):
    """Whether each fan-out's device got exactly one request: the fake's accepted bodies (GET /_received) of each
    fan-out's msi_key, their distinct registration tokens against the devices."""
    with urllib.request.urlopen(fake + "/_received", timeout=120) as response:
        bodies = json.load(response)
    by_key = {}
    for body in bodies:
        message = (body or {}).get("message", {})
        key = message.get("data", {}).get("msi_key")
        if key and message.get("token"):
            by_key.setdefault(key, []).append(message["token"])
    for row in Results(results).rows:
        if row.get("label") != "fanout":
            continue
        found = by_key.get(row["msi_key"], [])
        record = {"label": "fanout tokens", "run": row["run"], "msi_key": row["msi_key"], "requests": len(found),
                  "distinct": len(set(found)), "devices": row["devices"]}
        append(results, record)
        print("%s: %d requests to %d distinct tokens for %d devices -> %s"
              % (row["run"], record["requests"], record["distinct"], record["devices"],
                 verdict(record["requests"] == record["distinct"] == record["devices"])), flush=True)


def access_token(fake, credentials):
    """An access token from the fake's /token, for a JWT signed (RS256, with openssl) by the service account the
    fake wrote, as the hub's AccessTokenProvider makes it."""
    account = json.load(open(credentials))

    def encode(data):
        return base64.urlsafe_b64encode(data).rstrip(b"=").decode()

    now = int(time.time())
    claims = {"iss": account["client_email"], "scope": "https://www.googleapis.com/auth/firebase.messaging",
              "aud": account["token_uri"], "iat": now, "exp": now + 3600}
    signing_input = "%s.%s" % (encode(json.dumps({"alg": "RS256", "typ": "JWT"}).encode()),
                               encode(json.dumps(claims).encode()))
    with tempfile.NamedTemporaryFile("w", suffix=".pem") as key:
        key.write(account["private_key"])
        key.flush()
        signature = subprocess.run(["openssl", "dgst", "-sha256", "-sign", key.name], input=signing_input.encode(),
                                   capture_output=True, check=True).stdout
    form = urllib.parse.urlencode({"grant_type": "urn:ietf:params:oauth:grant-type:jwt-bearer",
                                   "assertion": signing_input + "." + encode(signature)}).encode()
    with urllib.request.urlopen(urllib.request.Request(account["token_uri"], data=form), timeout=10) as response:
        return json.load(response)["access_token"]


def h2load(results, fake, credentials, requests, connections, streams, source):
    """The fake's ceiling: h2load POSTs `requests` valid messages:send bodies (an Alert to a token, as the hub's)
    with a valid bearer token over `connections` h2c connections of `streams` streams each; `source` says where
    those figures come from."""
    account = json.load(open(credentials))
    token = access_token(fake, credentials)
    body = {"message": {"token": "h2load-device-token", "notification": {"title": "Fan-out h2load",
                                                                         "body": "Fan-out benchmark"},
                        "data": {"msi_key": "h2load", "dist": "Alert", "title": "Fan-out h2load",
                                 "desc": "Fan-out benchmark", "message": "The fake's ceiling.",
                                 "timestamp": str(int(time.time() * 1000)), "audience": "group",
                                 "group": "bench-fanout"}}}
    url = "%s/v1/projects/%s/messages:send" % (fake, account["project_id"])
    with tempfile.NamedTemporaryFile("w", suffix=".json") as file:
        json.dump(body, file)
        file.flush()
        command = ["h2load", "-n", str(requests), "-c", str(connections), "-m", str(streams), "-d", file.name,
                   "-H", "Content-Type: application/json", "-H", "Authorization: Bearer " + token, url]
        output = subprocess.run(command, capture_output=True, text=True, timeout=600).stdout
    row = {"label": "fanout h2load", "requests": int(requests), "connections": int(connections),
           "streams": int(streams), "source": source, "rps": 0.0, "succeeded": 0, "status_2xx": 0}
    match = re.search(r"finished in ([\d.]+)(m?s), ([\d.]+) req/s", output)
    if match:
        row["rps"] = float(match.group(3))
        row["seconds"] = float(match.group(1)) / (1000.0 if match.group(2) == "ms" else 1.0)
    match = re.search(r"requests: \d+ total, \d+ started, \d+ done, (\d+) succeeded", output)
    row["succeeded"] = int(match.group(1)) if match else 0
    match = re.search(r"status codes: (\d+) 2xx", output)
    row["status_2xx"] = int(match.group(1)) if match else 0
    match = re.search(r"Application protocol: (\S+)", output)
    row["protocol"] = match.group(1) if match else "?"
    append(results, row)
    print("h2load, %d connections x %d streams (%s), %s: %d requests, %d answered 2xx, %.0f req/s"
          % (row["connections"], row["streams"], source, row["protocol"], row["requests"], row["status_2xx"],
             row["rps"]), flush=True)
    if row["status_2xx"] != row["requests"]:
        print(output, flush=True)


def run_lines(row):
    """A fan-out run's figures, as lines."""
    devices = max(row["devices"], 1)
    cap = " (FCM_SEND_RATE=%d)" % row["rate_cap"] if row["rate_cap"] else " (FCM_SEND_RATE default)"
    states = ", ".join("%s %d" % item for item in sorted(row["states"].items())) or "none"
    first = "%.2f s" % row["first_send_s"] if row["first_send_s"] is not None else "-"
    return [
        "fan-out%s, one Alert to a group of %d persons with a device each; load average before: %s"
        % (cap, row["devices"], row["load_before"]),
        "  POST answered 201 in %.3f s; first send %s after it, last send %.2f s after it: %d sends, %.0f sends/s"
        % (row["post_s"], first, row["last_send_s"], row["sends"], row["sends_per_s"]),
        "  most sends accepted in one second: %d (any window), %d (one Unix second)"
        % (row["peak_sliding"], row["peak_calendar"]),
        "  every outcome in `deliveries` %.2f s after the 201%s (%s)"
        % (row["recorded_s"], "" if row["complete"] else " -- NOT ALL within the run's time", states),
        "  CPU per delivery: database %.3f ms, hub %.3f ms, fake FCM %.3f ms; hub peak RSS %.1f MB"
        % (row["db_cpu_ms"] / devices, row["hub_cpu_ms"] / devices, row["fake_cpu_ms"] / devices,
           row["hub_rss_peak_kb"] / 1024.0),
        "  fake FCM: %d connections opened by the hub, %d sends over HTTP/2; at most %s sends in flight at once so far"
        % (row["fake_connections_opened"], row["fake_sends_over_http2"], row["fake_most_sends_in_flight"]),
    ] + (["  CPU while the sends went out (%% of one core): database %.0f%%, hub %.0f%%, fake FCM %.0f%%"
          % (row["busy_percent"]["db"], row["busy_percent"]["hub"], row["busy_percent"]["fake"])]
         if "busy_percent" in row else [])


def section(results, add):
    """The fan-out runs, h2load's ceiling and the targets of issue 29."""
    runs = [row for row in results.rows if row.get("label") == "fanout"]
    if not runs:
        return
    free = next((row for row in runs if not row["rate_cap"]), None)
    capped = next((row for row in runs if row["rate_cap"]), None)
    ceiling = results.first("fanout h2load")
    checks = {row["run"]: row for row in results.rows if row.get("label") == "fanout tokens"}
    add("fan-out (issue 29): %s CPUs, fake FCM over h2c with 50 ms per messages:send" % os.cpu_count())
    for row in runs:
        for line in run_lines(row):
            add(line)
        check = checks.get(row["run"])
        if check:
            add("  each device one request: %d requests, %d distinct tokens, %d devices"
                % (check["requests"], check["distinct"], check["devices"]))
    withdrawals = [row for row in results.rows if row.get("label") == "fanout withdrawal"]
    for row in withdrawals:
        for line in withdrawal_lines(row):
            add(line)
    for row in (row for row in results.rows if row.get("label") == "fanout h2load"):
        add("h2load against the same fake: %d connections x %d streams (%s), %d requests: %.0f req/s, %d answered 2xx"
            % (row["connections"], row["streams"], row["source"], row["requests"], row["rps"], row["status_2xx"]))
    add("targets (issue 29)")

    def target(text, value, ok):
        add("  %-64s %-22s %s" % (text, value, verdict(ok)))

    if free:
        target("fan-out sends/s from the 201 to the last send >= %d" % TARGET_RATE,
               "%.0f/s" % free["sends_per_s"], free["sends_per_s"] >= TARGET_RATE)
        if ceiling and ceiling["rps"]:
            share = free["sends_per_s"] / ceiling["rps"]
            target("fan-out sends/s >= half of h2load's (%.0f/s)" % ceiling["rps"], "%.0f%%" % (100 * share),
                   share >= 0.5)
    if capped:
        cap = capped["rate_cap"]
        share = capped["sends_per_s"] / cap
        target("FCM_SEND_RATE=%d: sends/s within 10 %% of the cap" % cap, "%.0f/s (%.0f%%)"
               % (capped["sends_per_s"], 100 * share), 0.9 <= share <= 1.0)
        target("FCM_SEND_RATE=%d: never more in any one second" % cap, "peak %d" % capped["peak_sliding"],
               capped["peak_sliding"] <= cap)
    for row in withdrawals:
        target("withdrawn mid fan-out: 200, sends after the answer <= in flight (%d)" % row["in_flight"],
               "%d after" % row["after_answer"], row["status"] == 200 and row["after_answer"] <= row["in_flight"])
        target("withdrawn mid fan-out: the withdrawal to each device reached, no other",
               "%d/%d" % (row["withdrawn_devices"], row["reached_devices"]),
               row["same_devices"] and row["withdrawals"] == row["reached_devices"])
    for row in runs:
        check = checks.get(row["run"])
        if check:
            ok = check["requests"] == check["distinct"] == check["devices"] and row["complete"] \
                and row["states"].get("sent", 0) == row["devices"]
            target("%s: one request a device, every outcome sent" % row["run"],
                   "%d/%d" % (check["distinct"], check["devices"]), ok)
    add("")


def table(results_path, out_path):
    """Prints the fan-out's section of the results file and appends it to `out_path`."""
    section_table(section, results_path, out_path)


COMMANDS = [
    Command("fanout-load", load, "URI COUNT GROUP",
            "put COUNT active devices bound to COUNT persons, and group GROUP of them, into the database"),
    Command("fanout-run", run, "RESULTS LABEL URI HUB TOKEN FAKE DB_PID HUB_PID FAKE_PID GROUP COUNT TIMEOUT RATE",
            "POST an Alert to GROUP, time its COUNT sends at the fake and its outcomes in the database"),
    Command("fanout-withdraw", withdraw, "RESULTS LABEL URI HUB TOKEN FAKE GROUP COUNT AFTER TIMEOUT IN_FLIGHT",
            "POST an Alert to GROUP, DELETE it AFTER seconds into its fan-out, count the sends after the answer"),
    Command("fanout-tokens", tokens, "RESULTS FAKE", "check each fan-out's device got exactly one request"),
    Command("fanout-h2load", h2load, "RESULTS FAKE CREDENTIALS REQUESTS CONNECTIONS STREAMS SOURCE",
            "the fake's messages:send ceiling with h2load"),
    Command("fanout-table", table, "RESULTS OUT", "print the fan-out's section and append it to OUT"),
]

REPORT_ORDER = 40


def report(results, add):
    """The fan-out's section, when the run has one."""
    section(results, add)
