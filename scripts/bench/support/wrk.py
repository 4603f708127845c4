"""wrk's output, read into a result record."""
import re

UNITS = {"us": 0.001, "ms": 1.0, "s": 1000.0, "m": 60000.0}


def milliseconds(text):
    """One of wrk's durations ("1.23ms", "850.00us") in milliseconds."""
    match = re.fullmatch(r"([\d.]+)(us|ms|s|m)", text.strip())
    return float(match.group(1)) * UNITS[match.group(2)]


def parse_wrk(output):
    """Requests/s, requests, latency percentiles, errors, and post-message.lua's status counts of a wrk run."""
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
