"""The command line: each phase module lists its subcommands as `Command`s; `main` reads argv and runs one.

Arguments are positional, as scripts/bench.sh passes them; a command that runs another program takes that
program's arguments after `--`.
"""
import argparse
import sys


class Command:
    """A subcommand: its name, the function it calls with its arguments (strings, in order), the arguments'
    names, a line of help; `repeated` names arguments given any number of times (passed one by one), `rest` the
    arguments after `--` (passed as one list, last)."""

    def __init__(self, name, run, arguments, help, repeated=None, rest=None):
        self.name, self.run, self.help = name, run, help
        self.arguments = arguments.split()
        self.repeated, self.rest = repeated, rest

    def usage(self):
        words = ["bench.py", self.name] + self.arguments
        if self.repeated:
            words.append("[%s...]" % self.repeated)
        if self.rest:
            words.append("-- %s..." % self.rest)
        return " ".join(words)


def parser(commands, description):
    """An argument parser with one subparser a command (listed by name), so `bench.py COMMAND --help` shows its
    arguments."""
    result = argparse.ArgumentParser(prog="bench.py", description=description,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    subcommands = result.add_subparsers(dest="name", metavar="COMMAND", required=True)
    for command in sorted(commands, key=lambda command: command.name):
        sub = subcommands.add_parser(command.name, help=command.help, description=command.help,
                                     usage=command.usage())
        for index, name in enumerate(command.arguments):
            sub.add_argument("argument%d" % index, metavar=name)
        if command.repeated:
            sub.add_argument("repeated", metavar=command.repeated, nargs="*")
        sub.set_defaults(command=command, parser=sub)
    return result


def main(commands, description, argv):
    """Runs the command `argv` names with its arguments; the words after `--` go to a command that takes them."""
    words, rest = argv[1:], None
    if "--" in words:
        split = words.index("--")
        words, rest = words[:split], words[split + 1:]
    found = parser(commands, description)
    arguments = found.parse_args(words)
    command = arguments.command
    if (rest is None) != (command.rest is None):
        arguments.parser.error("%s after --" % command.rest if command.rest else "no arguments after --")
    values = [getattr(arguments, "argument%d" % index) for index in range(len(command.arguments))]
    values += getattr(arguments, "repeated", None) or []
    if command.rest:
        values.append(rest)
    command.run(*values)
