"""The sustained phase (issue 28): POST /message for a minute at 16 and then 64 connections while the hub relays,
sampling every second how long the oldest message answered 201 has waited for the fake FCM; then the drain after
the load, the database's CPU per relayed message, and the table's section with the target (every accepted
message's components at FCM within 2 s of the load's end)."""
import os
import subprocess
import time

from support.cli import Command
from support.database import database, unrelayed
from support.fake import arrivals
from support.proc import cpu_ms, cpu_ticks, load_average
from support.results import append, number, percentile, verdict
from support.wrk import parse_wrk


def stored_keys(keys_path):
    """The 201s written so far by post-message.lua: msi_key -> (components expected, stored timestamp in ms)."""
    stored = {}
    try:
        with open(keys_path) as keys:
            for line in keys:
                fields = line.split()
                if len(fields) == 3 and fields[0] != "?":
                    stored[fields[0]] = (2 if fields[1] == "Alert" else 1, int(fields[2]))
    except FileNotFoundError:
        pass
    return stored


def waiting(stored, fake):
    """The messages of `stored` not yet complete at the fake, by key, and the arrival time of the last component
    that came (ms)."""
    counts, last = {}, 0
    for arrival in arrivals(fake):
        key = arrival["msi_key"]
        if key in stored:
            counts[key] = counts.get(key, 0) + 1
            last = max(last, arrival["at_ms"])
    return {key: at for key, (components, at) in stored.items() if counts.get(key, 0) < components}, last


def sustained(results, uri, hub, db_pid, fake, seconds, connections, keys_path, lua, timeout=120):
    """POSTs for `seconds` at `connections` (wrk, post-message.lua writing its 201s to `keys_path`), sampling the
    oldest unsent age every second; then waits (at most `timeout` s) until the fake has every component and every
    outcome is on record."""
    seconds, connections = int(seconds), int(connections)
    if os.path.exists(keys_path):
        os.remove(keys_path)
    ticks_before = cpu_ticks(int(db_pid))
    started = time.time()
    wrk = subprocess.Popen(["wrk", "-t1", "-c%d" % connections, "-d%ds" % seconds, "--latency", "-s", lua,
                            hub + "/message"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                           env=dict(os.environ, BENCH_KEYS_FILE=keys_path))
    samples = []  # (seconds since the start, messages waiting, age of the oldest in s)
    while wrk.poll() is None:
        time.sleep(1)
        now_ms = time.time() * 1000
        unsent, _ = waiting(stored_keys(keys_path), fake)
        samples.append((time.time() - started, len(unsent),
                        (now_ms - min(unsent.values())) / 1000 if unsent else 0.0))
    output = wrk.communicate()[0]
    ended = time.time()
    stored = stored_keys(keys_path)
    deadline = ended + float(timeout)
    while True:
        unsent, last_arrival = waiting(stored, fake)
        if not unsent or time.time() > deadline:
            break
        time.sleep(0.1)
    drained = max(0.0, last_arrival / 1000 - ended) if not unsent else None
    db = database(uri)
    while unrelayed(db) and time.time() < deadline:
        time.sleep(0.5)
    db_cpu_ms = cpu_ms(cpu_ticks(int(db_pid)) - ticks_before)
    post = parse_wrk(output)
    relayed = len(stored) - len(unsent)
    result = {"label": "sustained", "connections": connections, "seconds": seconds, "stored": len(stored),
              "stored_rps": len(stored) / seconds, "relayed": relayed,
              "relayed_rps": relayed / max((last_arrival / 1000 - started) if last_arrival else seconds, 1e-9),
              "p99": post.get("p99"), "other": post.get("other", 0) + post.get("errors", 0),
              "oldest_max_s": max((age for _, _, age in samples), default=0.0),
              "oldest_p50_s": percentile([age for _, _, age in samples], 0.50),
              "series": [(round(at), count, round(age, 2)) for at, count, age in samples[4::5]],
              "drain_s": drained, "unsent": len(unsent), "db_cpu_ms_per_message": db_cpu_ms / max(relayed, 1),
              "load": "load average %s" % load_average()}
    append(results, result)
    print("sustained, %d conn, %d s: %d stored (%.0f/s, p99 %s ms, %d other answers), %d relayed (%.0f/s); oldest "
          "unsent: max %.2f s, median %s s; the last component at FCM %s after the load's end; database CPU %.2f ms "
          "per relayed message; %s"
          % (connections, seconds, len(stored), result["stored_rps"], number(result["p99"], "%.1f"), result["other"],
             relayed, result["relayed_rps"], result["oldest_max_s"], number(result["oldest_p50_s"], "%.2f"),
             number(drained, "%.2f s"), result["db_cpu_ms_per_message"], result["load"]), flush=True)
    print("  every 5 s (s since the start, messages waiting, oldest age in s): %s" % result["series"], flush=True)


COMMANDS = [
    Command("sustained", sustained, "RESULTS URI HUB DB_PID FAKE SECONDS CONNECTIONS KEYS LUA",
            "POST /message for SECONDS at CONNECTIONS while the hub relays; the oldest unsent age every second, "
            "the drain after the load and the database's CPU per relayed message"),
]

REPORT_ORDER = 35


def report(results, add):
    """Each sustained run against issue 28's target."""
    rows = [row for row in results.rows if row.get("label") == "sustained"]
    if not rows:
        return
    add("sustained load (issue 28): POST /message while the hub relays, %s" % rows[0].get("load", ""))
    for row in rows:
        add("  %d conn, %d s: stored %.0f/s (p99 %s ms, %d other answers), relayed %.0f/s; oldest unsent max %.2f s; "
            "database CPU %.2f ms per relayed message"
            % (row["connections"], row["seconds"], row["stored_rps"], number(row["p99"], "%.1f"), row["other"],
               row["relayed_rps"], row["oldest_max_s"], row["db_cpu_ms_per_message"]))
        add("  %-64s %-22s %s" % ("%d conn: every 201's components at FCM <= 2 s after the load" % row["connections"],
                                  number(row["drain_s"], "%.2f s") + ("" if not row["unsent"] else
                                                                      ", %d unsent" % row["unsent"]),
                                  verdict(row["drain_s"] is not None and row["drain_s"] <= 2 and not row["unsent"])))
    add("")
