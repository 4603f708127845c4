"""The mixed phase: GET /channel (plain, then conditional) at 16 connections while POST /message runs at 16
connections beside it, against the same GETs without the writes; nginx beside the same POSTs is the control.
The GETs are wrk runs (phases/wrk.py); this records the POSTs' run and reads the lot into the table."""
from support.cli import Command
from support.results import append, ratio, verdict
from support.wrk import parse_wrk


def mixedposts(results, wrk_output):
    """Records the POST run of the mixed phase (its wrk output) for the table."""
    result = parse_wrk(open(wrk_output).read())
    result["label"] = "mixedposts"
    append(results, result)


COMMANDS = [
    Command("mixedposts", mixedposts, "RESULTS WRK_OUTPUT", "record the mixed phase's POST run (its wrk output)"),
]

REPORT_ORDER = 40

# Each GET run beside the writes, after the same run alone.
MIXED_LABELS = (("GET /channel, 16 conn", "mixed: GET /channel, 16 conn"),
                ("conditional GET (304), 16 conn", "mixed: conditional GET, 16 conn"))


def report(results, add):
    """The GETs' p99 beside the writes against without them (issue 14), with nginx's as the control."""
    mixed_posts = results.first("mixedposts")
    mixed = [(results.run(alone, "hub"), results.run(beside, "hub"), results.run(alone, "nginx"),
              results.run(beside, "nginx")) for alone, beside in MIXED_LABELS]
    if not any(row[1] for row in mixed):
        return
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
                                  verdict(p99 is not None and p99 <= 2 and errors == 0)))
        if control_alone and control_beside:
            add("    control: nginx serving the same bytes beside the same POSTs: p99 %.2f ms -> %.2f ms, %.2fx"
                % (control_alone["p99"], control_beside["p99"], ratio(control_beside["p99"], control_alone["p99"])))
    add("")
