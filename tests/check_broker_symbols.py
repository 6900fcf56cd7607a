#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Every mosquitto_* name the plugin imports is exported by every broker it is tested against.

A broker resolves a plugin's undefined names against its own dynamic symbol table when it loads
the plugin; a name it does not export makes the load fail with "undefined symbol". What a
broker exports depends on how it was built (linker.syms alone, or everything with
-rdynamic / ENABLE_EXPORTS): Debian 12's 2.0.11 exports hundreds of names, Debian's 2.0.21 and
2.1's Makefile build only their src/linker.syms. So this reads the real files: the plugin's
undefined mosquitto_* names (`nm -D --undefined-only`) against each broker binary's defined
ones (`nm -D --defined-only`), and fails naming every name a broker lacks. A weak undefined
name (`w`) is one the plugin is ready to find absent, so it is not required.

The brokers come from MQC_BUILD_DIR/brokers/brokers.json (scripts/prepare-brokers.py); every
name given but `system` must be in it, else the check fails saying so.

Usage: tests/check_broker_symbols.py PLUGIN_SO BROKER_NAME...
"""

import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))
import brokers  # noqa: E402


def dynamic_symbols(binary, which):
    """{name: type letter} of `binary`'s dynamic symbols, `which` = defined or undefined."""
    out = subprocess.run(["nm", "-D", f"--{which}-only", binary], capture_output=True,
                         text=True, check=True).stdout
    symbols = {}
    for line in out.splitlines():
        match = re.match(r"^\s*(?:[0-9a-f]+\s+)?([A-Za-z])\s+(\S+?)(?:@\S*)?$", line)
        if match:
            symbols[match.group(2)] = match.group(1)
    return symbols


def main():
    if len(sys.argv) < 3:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    plugin, names = sys.argv[1], sys.argv[2:]
    imported = dynamic_symbols(plugin, "undefined")
    required = sorted(name for name, kind in imported.items()
                      if name.startswith("mosquitto_") and kind not in "wv")
    optional = sorted(name for name, kind in imported.items()
                      if name.startswith("mosquitto_") and kind in "wv")
    print(f"{os.path.basename(plugin)} imports {len(required)} mosquitto_* names"
          + (f" (and {len(optional)} weak: {', '.join(optional)})" if optional else "")
          + f": {', '.join(required)}")
    if not required:
        print("the plugin imports no mosquitto_* name: the check did not read what it should")
        return 1
    build_dir = os.environ.get("MQC_BUILD_DIR", "")
    failed = False
    for name in names:
        try:
            broker = brokers.load(name, build_dir)
        except LookupError as error:
            print(f"FAIL {error}")
            failed = True
            continue
        exported = set(dynamic_symbols(broker.mosquitto, "defined"))
        missing = [symbol for symbol in required if symbol not in exported]
        count = sum(1 for symbol in exported if symbol.startswith("mosquitto_"))
        if missing:
            failed = True
            print(f"FAIL {name} (Mosquitto {broker.version}, {broker.build}) exports "
                  f"{count} mosquitto_* names and lacks {len(missing)} the plugin imports: "
                  f"{', '.join(missing)}")
        else:
            print(f"ok   {name} (Mosquitto {broker.version}, {broker.build}) exports {count} "
                  "mosquitto_* names, every one the plugin imports among them")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
