"""What scripts/bench-devices.sh asks of this helper: a quiet database between its phases."""
import time

from support.cli import Command
from support.proc import cpu_ms, cpu_ticks, settle


def quiet(pid):
    """Waits until the database `pid` is quiet (`settle`) and says how long that took and what it cost."""
    started, before = time.time(), cpu_ticks(int(pid))
    settle(int(pid), limit=120.0)
    print("the database was quiet %.0f s later, after %.0f ms of CPU"
          % (time.time() - started, cpu_ms(cpu_ticks(int(pid)) - before)))


COMMANDS = [
    Command("quiet", quiet, "PID", "wait until the database PID is quiet, say how long it took and what it cost"),
]
