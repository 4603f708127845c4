"""Processes' CPU time and memory, read from /proc."""
import os
import time

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def cpu_ticks(pid):
    """utime + stime of a process, all threads, in clock ticks."""
    with open("/proc/%d/stat" % pid) as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])  # fields 14 and 15 of proc(5), counted after the comm


def cpu_ms(ticks):
    """Clock ticks in milliseconds of CPU."""
    return ticks * 1000.0 / CLOCK_TICKS


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


def status_kb(pid, key):
    """A figure of /proc/PID/status in kB (VmHWM, VmRSS), 0 when absent."""
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


def load_average():
    """The load average's three figures, as /proc/loadavg has them."""
    return " ".join(open("/proc/loadavg").read().split()[:3])
