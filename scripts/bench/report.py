"""The table: the run's facts, then each phase's section (phases/*.report, by REPORT_ORDER), then the targets of
issue 8; printed and written to a file."""
import phases
from support.cli import Command
from support.results import Results, ratio, verdict


def header(results, add):
    """The run's date, machine, nginx and cube."""
    meta = results.meta
    add("msi-hub make bench, %s" % meta.get("date", ""))
    add("machine: %s CPUs, %s; wrk 1 thread over loopback; nginx %s (worker_processes auto)"
        % (meta.get("cpus", "?"), meta.get("load", ""), meta.get("nginx", "")))
    add("cube: %s bytes as GET /channel serves it, %s bytes gzip; hub RELAY_CONCURRENCY=%s"
        % (meta.get("cube_bytes", "?"), meta.get("gzip_bytes", "?"), meta.get("relay_concurrency", "16")))
    add("")


def targets(results, add):
    """Issue 8's targets: GET /channel against nginx, the hub's memory, POST /message's latency and durability."""
    runs = results.runs
    durable_row = results.first("durable")
    peak = max((row["rss_peak_kb"] for row in results.rows if row.get("server") == "hub"), default=0)
    add("targets (issue 8), ratios within this run")

    def target(text, value, ok):
        add("  %-64s %-22s %s" % (text, value, verdict(ok)))

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


def sections():
    """The phases' report sections, in their order."""
    found = [module for module in phases.modules() if hasattr(module, "report")]
    return [module.report for module in sorted(found, key=lambda module: module.REPORT_ORDER)]


def table(results_path, out_path):
    """Prints the table of the results file and writes it to `out_path`."""
    results = Results(results_path)
    lines = []
    add = lines.append
    header(results, add)
    for section in sections():
        section(results, add)
    targets(results, add)
    text = "\n".join(lines) + "\n"
    print(text)
    with open(out_path, "w") as out:
        out.write(text)


COMMANDS = [
    Command("table", table, "RESULTS OUT", "print the table and write it to OUT"),
]
