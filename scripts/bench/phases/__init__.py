"""The bench's phase families, one module each. A module lists its subcommands in COMMANDS (`support.cli.Command`)
and, when it adds lines to the table, has `report(results, add)` and REPORT_ORDER (its section's place: the
sections are printed by increasing order, before the targets of issue 8). A new phase is a new module here."""
import importlib
import pkgutil


def modules():
    """Every phase module, by name."""
    return [importlib.import_module("%s.%s" % (__name__, info.name))
            for info in sorted(pkgutil.iter_modules(__path__), key=lambda info: info.name)]
