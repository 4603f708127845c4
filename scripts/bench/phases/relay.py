"""The relay alone: messages stored by a hub that does not relay, then sent by a fresh hub to the fake FCM, timed
from its start; and the table's section on it."""
import http.client
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
import urllib.request

from support.cli import Command
from support.database import database
from support.fake import received
from support.proc import cpu_ms, cpu_ticks, status_kb
from support.results import append


def store(url, token, alert, info, count, connections=16):
    """POSTs `count` messages (alternating topics) over `connections` keep-alive connections."""
    count = int(count)
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
        "cpu_ms": cpu_ms(cpu_ticks(pid)), "rss_peak_kb": status_kb(pid, "VmHWM"),
        "db_cpu_ms": cpu_ms(cpu_ticks(int(db_pid)) - db_before),
        "fake_cpu_ms": cpu_ms(cpu_ticks(int(fake_pid)) - fake_before),
        "concurrency": int(os.environ.get("RELAY_CONCURRENCY", "16")),
    }
    result.update(outbox_metrics(hub_url))
    hub.send_signal(signal.SIGTERM)
    hub.wait(timeout=30)
    append(results, result)
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


COMMANDS = [
    Command("store", store, "URL TOKEN ALERT INFO COUNT", "POST COUNT messages over 16 connections"),
    Command("relay", relay, "RESULTS URI FAKE DB_PID FAKE_PID PIDFILE LOG TIMEOUT HUB_URL",
            "start a hub, time until the fake has every pending message's components, stop the hub",
            rest="HUB-COMMAND"),
]

REPORT_ORDER = 20


def report(results, add):
    """The relay's throughput end to end, its outbox's work and its CPU per message."""
    relay_row = results.first("relay")
    if not relay_row:
        return
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
