"""What scripts/bench-enrolment.sh asks of this helper: devices registered (POST /device) and bound to as many
persons (PUT /device/:deviceID/person with an HS256 assertion, as a school's sign-in makes one) through the API
from concurrent keep-alive connections, a block at a time, with each block's rates, p99s and the database's CPU; a
group of those persons made through the API (PUT /group/:groupID with the most a roster takes, then PUT
/group/:groupID/members/:personID for the rest); the fan-out to it beside the same fan-out to devices written
straight into the database (fanout.measure); and the table's section on them."""
import base64
import hashlib
import hmac
import http.client
import json
import os
import threading
import time
import urllib.parse

from phases import fanout
from support.cli import Command
from support.database import database
from support.proc import cpu_ms, cpu_ticks, load_average
from support.results import append, percentile, section_table, verdict

ROSTER_LIMIT = 10000  # GroupService.maximumMembers: the most person ids one PUT /group/:groupID takes
# The last block's rates at least 80 % of the first's (issue 42: flat within 20 %; a collection whose cost grows makes
# the later blocks slower, while a later block that is faster says only that the machine was less busy then).
FLAT_WITHIN = 0.20
FANOUT_WITHIN = 0.10  # the fan-out after enrolment within 10 % of the directly loaded one's (issue 42)


def person(index):
    """The person id of enrolment `index`."""
    return "person-%05d" % index


def encode(data):
    """base64url without padding, as JWTs have it."""
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def assertion(secret, issuer, audience, subject):
    """An HS256 person assertion for `subject`, as the school's sign-in signs one: issued a moment ago, good for five
    minutes, with a `jti` of its own (each binds once)."""
    now = int(time.time())
    claims = {"iss": issuer, "aud": audience, "sub": subject, "iat": now - 5, "exp": now + 300,
              "jti": os.urandom(12).hex()}
    signing_input = "%s.%s" % (encode(b'{"alg":"HS256","typ":"JWT"}'), encode(json.dumps(claims).encode()))
    signature = hmac.new(secret.encode(), signing_input.encode(), hashlib.sha256).digest()
    return signing_input + "." + encode(signature)


class Clients:
    """`count` keep-alive HTTP/1.1 connections to `hub`, one a thread; `run` shares jobs among them."""

    def __init__(self, hub, count):
        parsed = urllib.parse.urlsplit(hub)
        self.host, self.port = parsed.hostname, parsed.port
        self.connections = [self.connect() for _ in range(int(count))]

    def connect(self):
        return http.client.HTTPConnection(self.host, self.port, timeout=60)

    def run(self, jobs, request):
        """Calls `request(job)` -> (method, path, body, headers) for every job, from every connection at once; returns
        each job's (status, answer bytes, seconds), in the jobs' order (status None: the connection failed)."""
        answers = [None] * len(jobs)
        lock = threading.Lock()
        state = {"next": 0}

        def work(slot):
            while True:
                with lock:
                    index = state["next"]
                    state["next"] += 1
                if index >= len(jobs):
                    return
                method, path, body, headers = request(jobs[index])
                started = time.perf_counter()
                try:
                    self.connections[slot].request(method, path, body, headers)
                    response = self.connections[slot].getresponse()
                    answers[index] = (response.status, response.read(), time.perf_counter() - started)
                except (OSError, http.client.HTTPException) as error:
                    self.connections[slot].close()
                    self.connections[slot] = self.connect()
                    answers[index] = (None, type(error).__name__.encode(), time.perf_counter() - started)

        threads = [threading.Thread(target=work, args=(slot,)) for slot in range(len(self.connections))]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        return answers


def timed(clients, jobs, request, pids):
    """`clients.run` with the wall time and each process's CPU (ms) it took: (answers, seconds, {name: ms})."""
    ticks = {name: cpu_ticks(pid) for name, pid in pids.items()}
    client_before = os.times()
    started = time.perf_counter()
    answers = clients.run(jobs, request)
    seconds = time.perf_counter() - started
    spent = {name: cpu_ms(cpu_ticks(pid) - ticks[name]) for name, pid in pids.items()}
    client_after = os.times()
    spent["client"] = 1000.0 * (client_after.user + client_after.system - client_before.user - client_before.system)
    return answers, seconds, spent


def statuses(answers):
    """How many answers of each status ("failed": no answer)."""
    counts = {}
    for status, _, _ in answers:
        key = str(status) if status is not None else "failed"
        counts[key] = counts.get(key, 0) + 1
    return counts


def latencies(answers, quantile):
    """The answers' latency at `quantile`, in ms."""
    found = percentile([seconds for _, _, seconds in answers], quantile)
    return found * 1000.0 if found is not None else None


def enrol(results, uri, hub, secret, issuer, audience, db_pid, hub_pid, count, clients, block):
    """Registers `count` devices and binds each to its own person, `block` at a time from `clients` connections: a
    block's devices are registered (POST /device), then bound (PUT /device/:deviceID/person, each with its own
    assertion), so each block's rates, latencies and database CPU are those of its two routes on a collection that
    grows from block to block. Records a row a block and one for the whole enrolment."""
    count, block = int(count), int(block)
    pids = {"db": int(db_pid), "hub": int(hub_pid)}
    pool = Clients(hub, clients)
    load_before = load_average()
    started = time.time()
    blocks = []
    for first in range(0, count, block):
        indices = list(range(first, min(first + block, count)))

        def register(index):
            body = json.dumps({"registration": "bench-enrolment-%05d-%s" % (index, os.urandom(8).hex()),
                               "platform": "ios" if index % 2 == 0 else "android"})
            return "POST", "/device", body, {"Content-Type": "application/json"}

        registered, register_s, register_cpu = timed(pool, indices, register, pids)
        devices = []
        for index, (status, answer, _) in zip(indices, registered):
            if status == 201:
                stored = json.loads(answer)
                devices.append((index, stored["device_id"], stored["device_secret"]))

        def bind(device):
            index, device_id, device_secret = device
            body = json.dumps({"assertion": assertion(secret, issuer, audience, person(index))})
            return "PUT", "/device/%s/person" % device_id, body, {
                "Content-Type": "application/json", "Authorization": "Bearer " + device_secret}

        bound, bind_s, bind_cpu = timed(pool, devices, bind, pids)
        row = {
            "label": "enrolment block", "block": len(blocks) + 1, "first": first, "devices": len(indices),
            "registrations_per_s": len(indices) / register_s, "binds_per_s": len(devices) / max(bind_s, 1e-9),
            "register_p50_ms": latencies(registered, 0.5), "register_p99_ms": latencies(registered, 0.99),
            "bind_p50_ms": latencies(bound, 0.5), "bind_p99_ms": latencies(bound, 0.99),
            "register_statuses": statuses(registered), "bind_statuses": statuses(bound),
            "register_cpu_ms": register_cpu, "bind_cpu_ms": bind_cpu, "load": load_average(),
            "_registered": registered, "_bound": bound,
        }
        blocks.append(row)
        print(block_line(row), flush=True)
    seconds = time.time() - started
    registered = [answer for row in blocks for answer in row.pop("_registered")]
    bound = [answer for row in blocks for answer in row.pop("_bound")]
    for row in blocks:
        append(results, row)
    db = database(uri)
    summary = {
        "label": "enrolment", "devices": count, "clients": len(pool.connections), "block": block, "seconds": seconds,
        "enrolments_per_s": count / seconds,
        "register_p99_ms": latencies(registered, 0.99), "bind_p99_ms": latencies(bound, 0.99),
        "registered": sum(1 for status, _, _ in registered if status == 201),
        "bound": sum(1 for status, _, _ in bound if status == 200),
        "bound_in_database": db.devices.count_documents({"state": "active", "person": {"$exists": True}}),
        "cpu_ms": {name: sum(row["register_cpu_ms"][name] + row["bind_cpu_ms"][name] for row in blocks)
                   for name in ("db", "hub", "client")},
        "load_before": load_before, "load_after": load_average(),
    }
    append(results, summary)
    for line in summary_lines(summary):
        print(line, flush=True)


def group(results, hub, token, group_id, count, clients):
    """Makes group `group_id` of the enrolment's `count` persons through the API: PUT /group/:groupID with the first
    ROSTER_LIMIT (the most a roster takes), then PUT /group/:groupID/members/:personID for each of the rest from
    `clients` connections; records how long each took and checks the member count the hub answers."""
    count = int(count)
    persons = [person(index) for index in range(count)]
    headers = {"Content-Type": "application/json", "Authorization": "Bearer " + token}
    pool = Clients(hub, clients)
    roster = json.dumps({"name": "Bench enrolment", "members": persons[:ROSTER_LIMIT]})
    # A school's roster sync tries again after a 503 (the answer says so), as this does, twice at most: the table
    # shows every answer.
    roster_statuses = []
    while True:
        [(status, answer, roster_s)] = pool.run([roster], lambda body: ("PUT", "/group/" + group_id, body, headers))
        roster_statuses.append(status)
        if status in (200, 201) or len(roster_statuses) == 3:
            break
        print("PUT /group/%s answered %s: %s; trying again in 5 s" % (group_id, status, answer[:200]), flush=True)
        time.sleep(5)
    if status not in (200, 201):
        raise SystemExit("PUT /group/%s answered %s: %s" % (group_id, status, answer[:200]))
    added, added_s, _ = timed(pool, persons[ROSTER_LIMIT:], lambda member: (
        "PUT", "/group/%s/members/%s" % (group_id, urllib.parse.quote(member, safe="")), None, headers), {})
    [(status, answer, _)] = pool.run([None], lambda _: ("GET", "/group/" + group_id, None, headers))
    row = {"label": "enrolment group", "group": group_id, "persons": count, "roster": min(count, ROSTER_LIMIT),
           "roster_s": roster_s, "roster_statuses": roster_statuses, "added": len(added), "added_s": added_s,
           "adds_per_s": len(added) / added_s if added else None, "add_p99_ms": latencies(added, 0.99),
           "add_statuses": statuses(added),
           "member_count": json.loads(answer).get("member_count") if status == 200 else None}
    append(results, row)
    print(group_line(row), flush=True)


def fanout_run(results, label, uri, hub, token, fake, db_pid, hub_pid, fake_pid, group_id, count, timeout):
    """The default-rate fan-out of scripts/bench-fanout.sh (`fanout.measure`) to `group_id`, recorded as this phase's
    (`label`: how the database got its devices)."""
    row = fanout.measure(label, uri, hub, token, fake, db_pid, hub_pid, fake_pid, group_id, count, timeout, "-")
    row["label"] = "enrolment fanout"
    append(results, row)
    for line in fanout.run_lines(row):
        print(line, flush=True)


def block_line(row):
    """A block's figures, as one line."""
    per = lambda route, name: row[route + "_cpu_ms"][name] / max(row["devices"], 1)
    return ("  block %2d (devices %5d-%5d): %6.0f registrations/s (p99 %6.1f ms), %6.0f binds/s (p99 %6.1f ms); "
            "database CPU %.2f + %.2f ms; not 201/200: %d/%d; load %s"
            % (row["block"], row["first"], row["first"] + row["devices"] - 1, row["registrations_per_s"],
               row["register_p99_ms"], row["binds_per_s"], row["bind_p99_ms"], per("register", "db"),
               per("bind", "db"), row["devices"] - row["register_statuses"].get("201", 0),
               row["devices"] - row["bind_statuses"].get("200", 0), row["load"]))


def summary_lines(row):
    """The whole enrolment's figures, as lines."""
    devices = max(row["devices"], 1)
    return [
        "enrolment: %d devices registered and bound to %d persons through the API from %d connections, blocks of %d"
        % (row["devices"], row["devices"], row["clients"], row["block"]),
        "  %.1f s in all, %.0f enrolments/s; %d registered (201), %d bound (200), %d active and bound in `devices`"
        % (row["seconds"], row["enrolments_per_s"], row["registered"], row["bound"], row["bound_in_database"]),
        "  p99 registration %.1f ms, bind %.1f ms" % (row["register_p99_ms"], row["bind_p99_ms"]),
        "  CPU per enrolment (a registration and a bind): database %.2f ms, hub %.2f ms, the bench's clients %.2f ms"
        % (row["cpu_ms"]["db"] / devices, row["cpu_ms"]["hub"] / devices, row["cpu_ms"]["client"] / devices),
        "  load average before: %s, after: %s" % (row["load_before"], row["load_after"]),
    ]


def group_line(row):
    """The group's making, as one line."""
    return ("group %s through the API: PUT with %d members in %.2f s (answers %s), then %d PUT .../members/:personID in %.1f s "
            "(%s/s, p99 %s ms, statuses %s); member_count %s"
            % (row["group"], row["roster"], row["roster_s"], row.get("roster_statuses"), row["added"], row["added_s"],
               "%.0f" % row["adds_per_s"] if row["adds_per_s"] else "-",
               "%.1f" % row["add_p99_ms"] if row["add_p99_ms"] is not None else "-", row["add_statuses"],
               row["member_count"]))


def section(results, add):
    """The enrolment's blocks and whole, the group, the two fan-outs and issue 42's targets."""
    blocks = [row for row in results.rows if row.get("label") == "enrolment block"]
    summary = results.first("enrolment")
    if not blocks or not summary:
        return
    add("enrolment (issue 42): %s CPUs, devices registered and bound through the API" % os.cpu_count())
    for line in summary_lines(summary):
        add(line)
    for row in blocks:
        add(block_line(row))
    made = results.first("enrolment group")
    if made:
        add(group_line(made))
    runs = {row["run"]: row for row in results.rows if row.get("label") == "enrolment fanout"}
    for row in runs.values():
        for line in fanout.run_lines(row):
            add("%s%s" % (line, " [%s]" % row["run"] if line.startswith("fan-out") else ""))
    add("targets (issue 42)")

    def target(text, value, ok):
        add("  %-64s %-22s %s" % (text, value, verdict(ok)))

    first, last = blocks[0], blocks[-1]
    for name, key in (("registrations/s", "registrations_per_s"), ("binds/s", "binds_per_s")):
        share = last[key] / first[key] if first[key] else 0.0
        target("%s: the last block no slower than %d %% of the first" % (name, 100 * (1 - FLAT_WITHIN)),
               "%.0f -> %.0f (%.0f%%)" % (first[key], last[key], 100 * share), share >= 1 - FLAT_WITHIN)
    target("every device registered and bound", "%d/%d" % (summary["bound_in_database"], summary["devices"]),
           summary["registered"] == summary["bound"] == summary["bound_in_database"] == summary["devices"])
    if made:
        target("PUT /group/:groupID with %d members: 2xx at the first try" % made["roster"],
               " then ".join(str(status) for status in made["roster_statuses"]),
               made["roster_statuses"][0] in (200, 201))
        target("the group through the API holds every person", "%s/%d" % (made["member_count"], made["persons"]),
               made["member_count"] == made["persons"])
    enrolled, direct = runs.get("after enrolment"), runs.get("directly loaded")
    if enrolled and direct:
        share = enrolled["sends_per_s"] / direct["sends_per_s"] if direct["sends_per_s"] else 0.0
        target("fan-out after enrolment no slower than %d %% of the directly loaded one" % (100 * (1 - FANOUT_WITHIN)),
               "%.0f vs %.0f/s (%.0f%%)" % (enrolled["sends_per_s"], direct["sends_per_s"], 100 * share),
               share >= 1 - FANOUT_WITHIN)
    for row in runs.values():
        target("%s: every device sent once, every outcome sent" % row["run"], "%d/%d" % (row["sends"], row["devices"]),
               row["sends"] == row["devices"] and row["complete"] and row["states"].get("sent", 0) == row["devices"])
    add("")


def table(results_path, out_path):
    """Prints the enrolment's section of the results file and appends it to `out_path`."""
    section_table(section, results_path, out_path)


COMMANDS = [
    Command("enrolment-run", enrol, "RESULTS URI HUB SECRET ISSUER AUDIENCE DB_PID HUB_PID COUNT CLIENTS BLOCK",
            "register COUNT devices and bind each to a person through the API, BLOCK at a time from CLIENTS "
            "connections"),
    Command("enrolment-group", group, "RESULTS HUB TOKEN GROUP COUNT CLIENTS",
            "make GROUP of the COUNT enrolled persons through the API (a roster, then single members)"),
    Command("enrolment-fanout", fanout_run,
            "RESULTS LABEL URI HUB TOKEN FAKE DB_PID HUB_PID FAKE_PID GROUP COUNT TIMEOUT",
            "the default-rate fan-out to GROUP, recorded as the enrolment's (LABEL: how its devices got there)"),
    Command("enrolment-table", table, "RESULTS OUT", "print the enrolment's section and append it to OUT"),
]

REPORT_ORDER = 45


def report(results, add):
    """The enrolment's section, when the run has one."""
    section(results, add)
