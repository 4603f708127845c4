"""The results file: one JSON record a line, appended by each measurement and read by the report."""
import json


def append(results, record):
    """Appends `record` to the results file `results`."""
    with open(results, "a") as out:
        out.write(json.dumps(record) + "\n")


def percentile(values, fraction):
    """The value at `fraction` of the sorted `values` (nearest rank), None for none."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))] if ordered else None


class Results:
    """A results file as the report reads it: the records, the wrk runs by (label, server), the run's facts."""

    def __init__(self, path):
        self.rows = [json.loads(line) for line in open(path) if line.strip()]
        self.runs = {(row["label"], row["server"]): row for row in self.rows if "server" in row}
        self.meta = self.first("meta") or {}

    def first(self, label):
        """The first record of `label` (a measurement other than a wrk run), or None."""
        return next((row for row in self.rows if row.get("label") == label), None)

    def run(self, label, server):
        """The wrk run of `label` against `server` ("hub", "nginx"), or None."""
        return self.runs.get((label, server))


def number(value, form):
    """`value` in `form`, "-" for none."""
    return form % value if value is not None else "-"


def ratio(a, b):
    """a / b, None when either is missing (or b is 0)."""
    return a / b if a is not None and b else None


def verdict(ok):
    """A target's verdict."""
    return "PASS" if ok else "MISS"


def labelled_section(label, title, lines):
    """A phase's `section(results, add)`: under `title`, each row labelled `label` as `lines(row)` writes it."""
    def section(results, add):
        rows = [row for row in results.rows if row.get("label") == label]
        if not rows:
            return
        add("")
        add(title)
        for row in rows:
            for line in lines(row):
                add(line)
    return section


def section_table(section, results_path, out_path):
    """Prints one phase's `section(results, add)` of the results file and appends it to `out_path`: a phase's table
    when its script runs alone."""
    lines = []
    section(Results(results_path), lines.append)
    text = "\n".join(lines) + "\n"
    print(text)
    with open(out_path, "a") as out:
        out.write(text)
