#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""The plugin, loaded into the broker's process, links no libprotobuf; the companion does.

libprotobuf serves the companion's Connect codecs (proto/, mqc_connect_proto). In the broker it
would add a large library, its static initialisers and its global state to a process the
project keeps lean. The companion's own need shows that the check reads the right thing.

Usage: tests/check_plugin_libraries.py PLUGIN_SO COMPANION
"""

import re
import subprocess
import sys


def needed(binary):
    """The shared libraries `binary` names (DT_NEEDED)."""
    dump = subprocess.run(["objdump", "-p", binary], capture_output=True, text=True, check=True)
    return re.findall(r"^\s*NEEDED\s+(\S+)$", dump.stdout, re.M)


def main():
    plugin, companion = sys.argv[1:3]
    in_plugin = [lib for lib in needed(plugin) if lib.startswith("libprotobuf")]
    in_companion = [lib for lib in needed(companion) if lib.startswith("libprotobuf")]
    if in_plugin:
        print(f"{plugin} links {', '.join(in_plugin)}: libprotobuf belongs in the companion only")
        return 1
    if not in_companion:
        print(f"{companion} links no libprotobuf: the check did not read what it should")
        return 1
    print(f"plugin: no libprotobuf; companion: {', '.join(in_companion)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
