"""The wrk runs, each against the hub or nginx serving the same bytes (GET /channel plain, conditional and gzip,
POST /message, the mixed phase's GETs), and their rows in the table with the hub/nginx ratios."""
import subprocess
import sys
import time

from support.cli import Command
from support.proc import cpu_ms, cpu_ticks, processes, status_kb
from support.results import append, number, ratio
from support.wrk import parse_wrk


def run_wrk(results, label, server, pids, db_pid, arguments):
    """Runs wrk, reads the server's and the database's CPU and the server's memory from /proc before and after,
    appends one result to `results` and wrk's output to RESULTS.wrk.txt. `pids` is comma-separated; the first is
    the process whose peak RSS is reported, with its children (nginx's workers)."""
    pids = [int(pid) for pid in pids.split(",")]
    watched = processes(pids)
    before = sum(cpu_ticks(pid) for pid in watched)
    db_before = cpu_ticks(int(db_pid))
    started = time.time()
    completed = subprocess.run(["wrk"] + arguments, capture_output=True, text=True)
    elapsed = time.time() - started
    after = sum(cpu_ticks(pid) for pid in watched)
    db_after = cpu_ticks(int(db_pid))
    if completed.returncode != 0:
        sys.exit("wrk failed: " + completed.stderr)
    result = parse_wrk(completed.stdout)
    result.update({
        "label": label, "server": server, "wall_s": round(elapsed, 2),
        "cpu_ms": cpu_ms(after - before),
        "db_cpu_ms": cpu_ms(db_after - db_before),
        "rss_peak_kb": sum(status_kb(pid, "VmHWM") for pid in watched),
        "rss_now_kb": sum(status_kb(pid, "VmRSS") for pid in watched),
        "processes": len(watched),
    })
    result["cpu_ms_per_request"] = result["cpu_ms"] / result["requests"] if result["requests"] else None
    result["db_cpu_ms_per_request"] = result["db_cpu_ms"] / result["requests"] if result["requests"] else None
    append(results, result)
    summary = "%-34s %-5s %9.0f req/s  p50 %7.2f ms  p99 %7.2f ms  cpu %.3f ms/req" % (
        label, server, result["rps"], result["p50"] or 0, result["p99"] or 0, result["cpu_ms_per_request"] or 0)
    if result["errors"] or result["socket_errors"]:
        summary += "  (%d non-2xx/3xx, %d socket errors)" % (result["errors"], result["socket_errors"])
    print(summary, flush=True)
    with open(results + ".wrk.txt", "a") as raw:
        raw.write("== %s %s: wrk %s\n%s\n" % (label, server, " ".join(arguments), completed.stdout))


COMMANDS = [
    Command("wrk", run_wrk, "RESULTS LABEL SERVER PIDS DB_PID",
            "run wrk, read the server's and the database's CPU and the server's memory from /proc before and "
            "after, append one JSON result to RESULTS (PIDS: comma-separated, the first one's peak RSS is reported)",
            rest="WRK-ARGS"),
]

REPORT_ORDER = 10


def report(results, add):
    """One row a run, by scenario in the order they ran, the hub's above nginx's and their ratios below."""
    header = "%-30s %-11s %10s %9s %9s %12s %10s %14s" % (
        "scenario", "server", "req/s", "p50 ms", "p99 ms", "CPU ms/req", "peak RSS", "DB CPU ms/req")
    add(header)
    add("-" * len(header))
    labels = []
    for row in results.rows:
        if "server" in row and row["label"] not in labels:
            labels.append(row["label"])
    for label in labels:
        hub, nginx = results.run(label, "hub"), results.run(label, "nginx")
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
