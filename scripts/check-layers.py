#!/usr/bin/env python3
"""Checks that the folders of a module refer to each other in one direction only (no cycle), as a map a newcomer
reads top-down: a folder uses the types of the folders below it, never of one above.

    scripts/check-layers.py Sources/Relay [...]

A folder refers to another when one of its files names, outside comments and string literals, a type declared at
the top level of a file in the other (`struct`, `class`, `enum`, `actor`, `protocol`, `typealias`; nested types and
extensions are not counted). Prints each folder's references and exits 1 naming the files behind a cycle."""
import os
import re
import sys

DECLARATION = re.compile(
    r"^(?:(?:public|package|internal|fileprivate|private|final|indirect)\s+)*"
    r"(?:struct|class|enum|actor|protocol|typealias)\s+([A-Z]\w*)", re.M)
COMMENT_OR_STRING = re.compile(r'//[^\n]*|/\*.*?\*/|#*"""(?:.|\n)*?"""#*|"(?:\\.|[^"\\\n])*"', re.S)


def folders_of(module):
    """{folder: [(file, code without comments and strings)]} of the module's top-level folders."""
    found = {}
    for folder in sorted(os.listdir(module)):
        path = os.path.join(module, folder)
        if not os.path.isdir(path):
            continue
        for directory, _, files in os.walk(path):
            for name in sorted(files):
                if name.endswith(".swift"):
                    with open(os.path.join(directory, name), encoding="utf-8") as source:
                        found.setdefault(folder, []).append((name, source.read()))
    return found


def check(module):
    folders = folders_of(module)
    declared = {}
    for folder, files in folders.items():
        for _, text in files:
            for match in DECLARATION.finditer(text):
                declared.setdefault(match.group(1), folder)
    uses, why = {folder: set() for folder in folders}, {}
    for folder, files in folders.items():
        for name, text in files:
            code = COMMENT_OR_STRING.sub(" ", text)
            for type_name, home in declared.items():
                if home != folder and re.search(r"\b%s\b" % re.escape(type_name), code):
                    uses[folder].add(home)
                    why.setdefault((folder, home), set()).add("%s names %s" % (name, type_name))

    def reaches(start, goal):
        seen, stack = set(), [start]
        while stack:
            current = stack.pop()
            if current == goal:
                return True
            if current not in seen:
                seen.add(current)
                stack.extend(uses.get(current, ()))
        return False

    for folder in sorted(uses):
        print("%s/%s -> %s" % (module, folder, ", ".join(sorted(uses[folder])) or "-"))
    cycles = sorted((a, b) for a in uses for b in uses[a] if reaches(b, a))
    for a, b in cycles:
        print("cycle: %s/%s uses %s (%s)" % (module, a, b, "; ".join(sorted(why[(a, b)]))), file=sys.stderr)
    return not cycles


if __name__ == "__main__":
    ok = all([check(module) for module in sys.argv[1:]])
    print("layers: no folder cycle in %s" % ", ".join(sys.argv[1:]) if ok else "layers: folder cycles found")
    sys.exit(0 if ok else 1)
