#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Fails when an #include crosses the floor plan of docs/architecture.md.

The two processes share only src/link/. So:
  src/broker/ (the plugin's library) never includes src/companion/,
  src/companion/ and companion/ never include src/broker/,
  src/link/ includes neither src/broker/ nor src/companion/,
  plugin/ never includes src/companion/ or companion/,
  the companion core (src/companion/ outside http/ and query/) never includes
  src/companion/http/,
  src/companion/query/ never includes src/companion/http/,
  nothing in src/companion/ outside fleet/ includes src/companion/fleet/.
The HTTP layer is on top, and the fleet (a client of other brokers' HTTP API) above it: only
they and companion/main.cc, where the parts are assembled, see them.
Every quoted or angled #include of src/, plugin/ and companion/ is resolved the way the
compiler would (first beside the including file, then from the include root src/) and, when it
names a file of the repository, checked against those rules. Each violation is printed as
`file:line: #include "x": rule`.

Usage: scripts/check-include-rules.py [ROOT]   (ROOT: the repository, by default this one)
Exit status: 0 no violation, 1 some.
"""

import os
import re
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s*[<"]([^>"]+)[>"]')
SCANNED = ("src", "plugin", "companion")
SOURCE_SUFFIXES = (".h", ".cc")

# (area of the including file, area it must not include, the rule it breaks)
FORBIDDEN = (
    ("broker", "companion", "broker never includes companion"),
    ("companion", "broker", "companion never includes broker"),
    ("link", "broker", "link includes neither broker nor companion"),
    ("link", "companion", "link includes neither broker nor companion"),
    ("plugin", "companion", "plugin never includes companion"),
    ("companion core", "companion http", "the companion core never includes http"),
    ("companion query", "companion http", "query never includes http"),
    ("companion core", "companion fleet", "only companion/main.cc and fleet/ include fleet"),
    ("companion query", "companion fleet", "only companion/main.cc and fleet/ include fleet"),
    ("companion http", "companion fleet", "only companion/main.cc and fleet/ include fleet"),
)


def areas(relative_path):
    """The parts of the plan a repository-relative path belongs to (a set, maybe empty): its
    process side, and for src/companion/ also its layer (core, query or http)."""
    parts = relative_path.split("/")
    if parts[0] == "src" and len(parts) > 2:
        if parts[1] in ("link", "broker"):
            return {parts[1]}
        if parts[1] == "companion":
            layer = parts[2] if len(parts) > 3 and parts[2] in ("http", "query", "fleet") else "core"
            return {"companion", "companion " + layer}
        return set()
    if parts[0] in ("plugin", "companion") and len(parts) > 1:
        return {parts[0]}
    return set()


def resolve(root, including, name):
    """The repository-relative path an include names, or None if it is not in the repository."""
    for base in (os.path.dirname(os.path.join(root, including)), os.path.join(root, "src")):
        candidate = os.path.normpath(os.path.join(base, name))
        if os.path.isfile(candidate):
            relative = os.path.relpath(candidate, root)
            if not relative.startswith(".."):
                return relative.replace(os.sep, "/")
    return None


def violations(root):
    """Yields (file, line number, included name, rule) for every include that breaks a rule."""
    for top in SCANNED:
        for directory, subdirectories, files in os.walk(os.path.join(root, top)):
            subdirectories.sort()
            for file_name in sorted(files):
                if not file_name.endswith(SOURCE_SUFFIXES):
                    continue
                path = os.path.relpath(os.path.join(directory, file_name), root)
                path = path.replace(os.sep, "/")
                source_areas = areas(path)
                with open(os.path.join(root, path), encoding="utf-8", errors="replace") as f:
                    for number, line in enumerate(f, 1):
                        match = INCLUDE.match(line)
                        if not match:
                            continue
                        target = resolve(root, path, match.group(1))
                        target_areas = areas(target) if target else set()
                        for from_area, to_area, rule in FORBIDDEN:
                            if from_area in source_areas and to_area in target_areas:
                                yield path, number, match.group(1), rule


def main(argv):
    here = os.path.dirname(os.path.abspath(__file__))
    root = argv[1] if len(argv) > 1 else os.path.dirname(here)
    found = list(violations(root))
    for path, number, name, rule in found:
        print(f'{path}:{number}: #include "{name}": {rule}')
    if found:
        print(f"{len(found)} include(s) break the rules of docs/architecture.md", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
