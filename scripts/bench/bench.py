#!/usr/bin/env python3
"""Helpers for scripts/bench.sh, scripts/bench-devices.sh and scripts/bench-fanout.sh (run with the test
database's venv, which has pymongo): one subcommand a step of a run, in the module of its phase family (phases/),
the table in report.py, what they share in support/. `bench.py --help` lists the commands, `bench.py COMMAND --help` their arguments.

A new phase is one new module in phases/: its COMMANDS and, for lines in the table, a `report` section.
"""
import sys

import phases
import report
from support import cli


def commands():
    """Every phase's commands, then the report's."""
    return [command for module in phases.modules() for command in module.COMMANDS] + report.COMMANDS


if __name__ == "__main__":
    cli.main(commands(), __doc__, sys.argv)
