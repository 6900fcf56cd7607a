# SPDX-License-Identifier: BSD-3-Clause
"""The Mosquitto builds the tests can run against, as scripts/prepare-brokers.py records them.

The manifest is <build>/brokers/brokers.json: for each broker name, where its `mosquitto`
binary is, which LD_LIBRARY_PATH it needs, the folder of its own plugins
(mosquitto_dynamic_security.so and, from 2.1, mosquitto_acl_file.so ...), and the
mosquitto_passwd / mosquitto_ctrl that make files this broker reads. `system` (Debian 12's
/usr/sbin/mosquitto) is known without a manifest, so that a build tree that never ran
prepare-brokers still tests against it; any other name needs the manifest.

Used by integration/harness.py, tests/check_broker_symbols.py and scripts/prepare-brokers.py.
"""

import json
import os
import re
import subprocess
from dataclasses import dataclass

SYSTEM = "system"
SYSTEM_MOSQUITTO = "/usr/sbin/mosquitto"
SYSTEM_PLUGIN_DIR = "/usr/lib/x86_64-linux-gnu"  # Debian's multiarch folder of its plugins


@dataclass(frozen=True)
class BrokerBuild:
    name: str
    version: str  # "2.1.2"
    build: str  # "system", "debian", "make" or "cmake"
    mosquitto: str
    library_path: str  # "" when the broker needs none
    plugin_dir: str
    passwd: str
    ctrl: str
    package: str = ""  # the Debian package (and version) it came from, if any

    @property
    def version_tuple(self):
        return tuple(int(part) for part in self.version.split("."))

    def environment(self, base=None):
        """`base` (os.environ by default) with this broker's LD_LIBRARY_PATH put first."""
        env = dict(os.environ if base is None else base)
        if self.library_path:
            env["LD_LIBRARY_PATH"] = os.pathsep.join(
                p for p in (self.library_path, env.get("LD_LIBRARY_PATH", "")) if p)
        return env

    def exports(self, symbol):
        """Whether the broker's executable exports `symbol` (its dynamic symbol table)."""
        if not hasattr(self, "_exports"):
            result = subprocess.run(["nm", "-D", "--defined-only", self.mosquitto],
                                    capture_output=True, text=True, timeout=60, check=True)
            names = {line.split()[-1] for line in result.stdout.splitlines() if line.strip()}
            object.__setattr__(self, "_exports", names)
        return symbol in self._exports

    def plugin(self, file_name):
        """The path of one of the broker's own plugins, e.g. mosquitto_dynamic_security.so."""
        return os.path.join(self.plugin_dir, file_name)


def broker_version(mosquitto, env=None):
    """The version `mosquitto -h` prints on its first line ("mosquitto version 2.0.11")."""
    result = subprocess.run([mosquitto, "-h"], capture_output=True, text=True, timeout=30,
                            env=env)
    match = re.search(r"mosquitto version (\d+\.\d+\.\d+)", result.stdout + result.stderr)
    if not match:
        raise RuntimeError(f"`{mosquitto} -h` printed no version:\n{result.stdout}{result.stderr}")
    return match.group(1)


def system_entry():
    """Debian 12's own broker and tools, as installed by scripts/install-deps.sh."""
    return {
        "version": broker_version(SYSTEM_MOSQUITTO),
        "build": "system",
        "mosquitto": SYSTEM_MOSQUITTO,
        "library_path": "",
        "plugin_dir": SYSTEM_PLUGIN_DIR,
        "passwd": "/usr/bin/mosquitto_passwd",
        "ctrl": "/usr/bin/mosquitto_ctrl",
        "package": "mosquitto (installed)",
    }


def manifest_path(build_dir):
    return os.path.join(build_dir, "brokers", "brokers.json")


def read_manifest(build_dir):
    """The manifest's entries by name, or {} when prepare-brokers has not written one."""
    path = manifest_path(build_dir)
    if not os.path.exists(path):
        return {}
    with open(path) as f:
        return json.load(f)


def add_argument(parser, what="the Mosquitto build to run"):
    """--broker NAME on a benchmark's command line (argparse), for load(); `what` says what the
    build is for."""
    parser.add_argument("--broker", default=SYSTEM,
                        help=f"{what}: {SYSTEM} (default) or a name of "
                             "BUILD_DIR/brokers/brokers.json")


def load(name, build_dir):
    """The BrokerBuild called `name`; raises LookupError naming what is missing."""
    entries = read_manifest(build_dir) if build_dir else {}
    if name not in entries:
        if name == SYSTEM:
            entries[name] = system_entry()
        else:
            where = manifest_path(build_dir) if build_dir else "(MQC_BUILD_DIR is not set)"
            raise LookupError(f"broker {name!r} is not in the manifest {where}: run "
                              f"scripts/prepare-brokers.py on the build folder first "
                              f"(known: {', '.join(sorted(entries)) or 'none'})")
    entry = entries[name]
    fields = {key: entry.get(key, "") for key in BrokerBuild.__dataclass_fields__ if key != "name"}
    return BrokerBuild(name=name, **fields)
