#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""Prepares the Mosquitto builds the integration tests run against, into BUILD_DIR/brokers/.

  system         Debian 12's /usr/sbin/mosquitto 2.0.11 (installed; nothing to prepare)
  2.0.21-debian  Debian's own binary package `mosquitto` from bookworm-backports (the version
                 Debian 13 ships), unpacked with dpkg-deb, never installed
  2.1-make       Mosquitto 2.1.x, the upstream tarball of Debian unstable's source package
                 `mosquitto`, built with upstream's Makefile (the recipe of the official 2.0
                 images): it exports only the names of src/linker.syms
  2.1-cmake      the same source built with upstream's CMake (the recipe of the official 2.1
                 images, LTO included): ENABLE_EXPORTS, so it exports every name
  2.1-bare       the same source built with its Makefile without TLS and WebSockets, the broker
                 alone: its client struct lies otherwise than the other 2.1 builds', so the
                 client layout's verification must reject the tables of those and pick its own
                 (integration/broker_matrix.py runs only the layout's suites on it)

Packages come from Debian's archive by name, through a private apt configuration under
BUILD_DIR/brokers/apt (its own sources.list, lists, cache, and no /etc/apt/apt.conf.d hooks):
the system's apt configuration and state are left as they are. The release files are checked
against Debian's keyring; their Valid-Until is not, since this machine's mirror is a frozen
snapshot that may be older than that date.

Everything is cached: a broker whose stamp (its recipe) matches and whose files are in place is
not prepared again, and a run with everything in place uses no network. Remove
BUILD_DIR/brokers/<name> (or the whole folder) to prepare it afresh from the archive.

Writes BUILD_DIR/brokers/brokers.json (read by integration/brokers.py) and prints one line per
broker. Only the broker, the plugins the tests load and mosquitto_passwd are built; 2.1 reads the
dynamic-security files that 2.0's mosquitto_ctrl writes (plugins/dynamic-security/clients.c reads
the "salt"/"password"/"iterations" form), so the 2.1 builds use the system's mosquitto_ctrl and
need no client library.

Usage: scripts/prepare-brokers.py BUILD_DIR
"""

import fcntl
import glob
import json
import os
import re
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))
import brokers  # noqa: E402  (integration/brokers.py: the manifest's reader)

MIRROR = os.environ.get("MQC_DEBIAN_MIRROR", "http://deb.debian.org/debian")
KEYRING = "/usr/share/keyrings/debian-archive-keyring.gpg"
BACKPORTS = "bookworm-backports"
UNSTABLE = "unstable"
JOBS = "2"  # the machine's two cores are shared

# A broker is prepared again when its recipe changes. Bump `revision` for a change the other
# fields do not show.
MAKE_FLAGS = ["WITH_DOCS=no", "WITH_ADNS=no", "WITH_SRV=no", "WITH_STRIP=no",
              "WITH_WEBSOCKETS=yes", "WITH_SHARED_LIBRARIES=yes", "WITH_SQLITE=yes",
              "CFLAGS=-Wall -O2"]
MAKE_DIRS = ["libcommon", "src", "plugins/dynamic-security", "plugins/acl-file",
             "plugins/password-file", "plugins/persist-sqlite", "apps/mosquitto_passwd"]
BARE_MAKE_FLAGS = ["WITH_DOCS=no", "WITH_TLS=no", "WITH_WEBSOCKETS=no", "WITH_ADNS=no",
                   "WITH_SRV=no", "WITH_STRIP=no", "WITH_SQLITE=no", "CFLAGS=-Wall -O2"]
CMAKE_FLAGS = ["-DCMAKE_BUILD_TYPE=Release", "-DWITH_TESTS=OFF", "-DWITH_DOCS=OFF",
               "-DWITH_CLIENTS=OFF", "-DWITH_SRV=OFF", "-DWITH_CTRL_SHELL=OFF"]
CMAKE_TARGETS = ["mosquitto", "mosquitto_dynamic_security", "mosquitto_acl_file",
                 "mosquitto_password_file", "mosquitto_persist_sqlite", "mosquitto_passwd"]
RECIPES = {
    "2.0.21-debian": {"revision": 1, "line": "2.0", "suite": BACKPORTS,
                      "packages": ["mosquitto", "libmosquitto1"]},
    "2.1-make": {"revision": 1, "line": "2.1", "suite": UNSTABLE, "make": MAKE_FLAGS, "dirs": MAKE_DIRS},
    "2.1-bare": {"revision": 1, "line": "2.1", "suite": UNSTABLE, "make": BARE_MAKE_FLAGS,
                 "dirs": ["libcommon", "src"]},
    "2.1-cmake": {"revision": 1, "line": "2.1", "suite": UNSTABLE, "cmake": CMAKE_FLAGS,
                  "targets": CMAKE_TARGETS},
}
# Where each build leaves its plugins (relative to its tree) once built.
PLUGIN_FILES = {
    "mosquitto_dynamic_security.so": "plugins/dynamic-security",
    "mosquitto_acl_file.so": "plugins/acl-file",
    "mosquitto_password_file.so": "plugins/password-file",
    "mosquitto_persist_sqlite.so": "plugins/persist-sqlite",
}
# Tools and -dev packages (in scripts/debian-packages-*.txt) the preparation needs.
TOOLS = ["apt-get", "dpkg-deb", "dpkg-query", "tar", "make", "cmake", "cc", "ldd", "nm"]
BUILD_PACKAGES = ["libssl-dev", "libcjson-dev", "libmicrohttpd-dev", "libsqlite3-dev"]


class Failure(Exception):
    """Something the preparation needs is missing; the message names it."""


def run(command, log=None, cwd=None, env=None):
    """Runs `command`; its output goes to `log` (a path) when given. Raises Failure on error."""
    if log:
        with open(log, "a") as out:
            out.write("$ " + " ".join(command) + "\n")
            out.flush()
            result = subprocess.run(command, cwd=cwd, env=env, stdout=out,
                                    stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        if result.returncode != 0:
            with open(log) as f:
                tail = "".join(f.readlines()[-30:])
            raise Failure(f"`{' '.join(command)}` failed (exit {result.returncode}); "
                          f"the end of {log}:\n{tail}")
        return ""
    result = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True,
                            stdin=subprocess.DEVNULL)
    if result.returncode != 0:
        raise Failure(f"`{' '.join(command)}` failed (exit {result.returncode}):\n"
                      f"{result.stdout}{result.stderr}")
    return result.stdout


def multiarch():
    return run(["dpkg-architecture", "-qDEB_HOST_MULTIARCH"]).strip() \
        if shutil.which("dpkg-architecture") else run(["cc", "-print-multiarch"]).strip()


def check_prerequisites():
    missing_tools = [tool for tool in TOOLS if shutil.which(tool) is None]
    if missing_tools:
        raise Failure(f"missing tools: {', '.join(missing_tools)} "
                      "(scripts/install-deps.sh installs them)")
    status = subprocess.run(["dpkg-query", "-W", "-f", "${Package} ${db:Status-Status}\n"]
                            + BUILD_PACKAGES, capture_output=True, text=True)
    installed = {line.split()[0] for line in status.stdout.splitlines()
                 if line.endswith(" installed")}
    missing = [p for p in BUILD_PACKAGES if p not in installed]
    if missing:
        raise Failure(f"missing build packages: {', '.join(missing)} "
                      "(listed in scripts/debian-packages-*.txt; run scripts/install-deps.sh)")
    if not os.path.exists(KEYRING):
        raise Failure(f"missing {KEYRING} (package debian-archive-keyring)")


class PrivateApt:
    """apt-get and apt-cache on a configuration of their own under `root`."""

    def __init__(self, root):
        self.root = root
        for sub in ("apt.conf.d", "preferences.d", "state/lists/partial",
                    "cache/archives/partial"):
            os.makedirs(os.path.join(root, sub), exist_ok=True)
        self.sources = os.path.join(root, "sources.list")
        options = f"check-valid-until=no signed-by={KEYRING}"
        with open(self.sources, "w") as f:
            f.write(f"deb [{options}] {MIRROR} {BACKPORTS} main\n"
                    f"deb-src [{options}] {MIRROR} {UNSTABLE} main\n")
        self.config = os.path.join(root, "apt.conf")
        settings = {
            "Dir::Etc::main": "/dev/null",
            "Dir::Etc::parts": os.path.join(root, "apt.conf.d"),
            "Dir::Etc::sourcelist": self.sources,
            "Dir::Etc::sourceparts": "-",
            "Dir::Etc::preferences": "/dev/null",
            "Dir::Etc::preferencesparts": os.path.join(root, "preferences.d"),
            "Dir::State": os.path.join(root, "state"),
            "Dir::State::status": "/dev/null",  # nothing here is installed
            "Dir::Cache": os.path.join(root, "cache"),
            "APT::Sandbox::User": "root",  # the folders are root's; nothing is installed
            "Acquire::Languages": "none",
        }
        with open(self.config, "w") as f:
            f.writelines(f'{key} "{value}";\n' for key, value in settings.items())
        self.updated = False

    def env(self):
        env = dict(os.environ)
        env.update({"APT_CONFIG": self.config, "LC_ALL": "C", "DEBIAN_FRONTEND": "noninteractive"})
        return env

    def update(self, log):
        if not self.updated:
            run(["apt-get", "-q", "update", "--error-on=any"], log=log, env=self.env())
            self.updated = True

    def download(self, packages, folder, log):
        """Downloads binary packages (`name/suite`) into `folder`; their paths."""
        os.makedirs(folder, exist_ok=True)
        run(["apt-get", "-q", "download"] + packages, log=log, cwd=folder, env=self.env())
        paths = []
        for package in packages:
            name = package.split("/")[0]
            found = sorted(glob.glob(os.path.join(folder, f"{name}_*.deb")))
            if len(found) != 1:
                raise Failure(f"expected one {name}_*.deb in {folder}, found {found}")
            paths.append(found[0])
        return paths

    def source(self, package, folder, log):
        """Downloads a source package (`name/suite`) into `folder`; the path of its .dsc."""
        os.makedirs(folder, exist_ok=True)
        run(["apt-get", "-q", "source", "--download-only", package], log=log, cwd=folder,
            env=self.env())
        found = glob.glob(os.path.join(folder, "*.dsc"))
        if len(found) != 1:
            raise Failure(f"expected one .dsc in {folder}, found {found}")
        return found[0]


class Preparer:
    def __init__(self, build_dir):
        self.build_dir = os.path.abspath(build_dir)
        self.root = os.path.join(self.build_dir, "brokers")
        os.makedirs(self.root, exist_ok=True)
        self.log = os.path.join(self.root, "prepare.log")
        self._apt = None
        self._source = None

    @property
    def apt(self):
        if self._apt is None:
            check_prerequisites()
            self._apt = PrivateApt(os.path.join(self.root, "apt"))
            self._apt.update(self.log)
        return self._apt

    # -- stamps: a broker's recipe and what it produced -----------------------------------
    def stamp_path(self, name):
        return os.path.join(self.root, name, "stamp.json")

    def cached(self, name):
        """The manifest entry recorded for `name`, if its recipe matches and its files exist."""
        try:
            with open(self.stamp_path(name)) as f:
                stamp = json.load(f)
        except (OSError, ValueError):
            return None
        entry = stamp.get("entry", {})
        files = [entry.get(key) for key in ("mosquitto", "passwd", "ctrl")]
        files += [os.path.join(entry.get("plugin_dir", ""), plugin) for plugin in
                  stamp.get("plugins", [])]
        if stamp.get("recipe") != RECIPES[name] or not all(f and os.path.exists(f)
                                                           for f in files):
            return None
        return entry

    def write_stamp(self, name, entry, plugins):
        with open(self.stamp_path(name), "w") as f:
            json.dump({"recipe": RECIPES[name], "entry": entry, "plugins": plugins}, f,
                      indent=2)

    # -- 2.0.21-debian ------------------------------------------------------------------
    def debian_2021(self):
        name = "2.0.21-debian"
        recipe = RECIPES[name]
        folder = os.path.join(self.root, name)
        shutil.rmtree(folder, ignore_errors=True)
        os.makedirs(folder)
        debs = self.apt.download([f"{p}/{recipe['suite']}" for p in recipe["packages"]],
                                 os.path.join(folder, "debs"), self.log)
        tree = os.path.join(folder, "root")
        for deb in debs:
            run(["dpkg-deb", "-x", deb, tree])
        package_version = run(["dpkg-deb", "-f", debs[0], "Version"]).strip()
        libdir = os.path.join(tree, "usr/lib", multiarch())
        entry = {
            "build": "debian",
            "mosquitto": os.path.join(tree, "usr/sbin/mosquitto"),
            # its own libmosquitto1, which its mosquitto_ctrl links
            "library_path": libdir,
            "plugin_dir": libdir,
            "passwd": os.path.join(tree, "usr/bin/mosquitto_passwd"),
            "ctrl": os.path.join(tree, "usr/bin/mosquitto_ctrl"),
            "package": f"mosquitto {package_version} ({recipe['suite']})",
        }
        self.check_libraries(name, entry, [entry["mosquitto"], entry["ctrl"], entry["passwd"]])
        entry["version"] = brokers.broker_version(entry["mosquitto"], self.tool_env(entry))
        self.check_version(name, entry["version"])
        plugins = ["mosquitto_dynamic_security.so"]
        self.write_stamp(name, entry, plugins)
        return entry

    # -- 2.1 from unstable's source package ----------------------------------------------
    def source_tree(self):
        """The upstream source of unstable's `mosquitto`, unpacked once; (path, version)."""
        if self._source:
            return self._source
        folder = os.path.join(self.root, "source")
        shutil.rmtree(folder, ignore_errors=True)
        dsc = self.apt.source(f"mosquitto/{UNSTABLE}", os.path.join(folder, "package"),
                              self.log)
        with open(dsc) as f:
            package_version = re.search(r"(?m)^Version: (\S+)$", f.read()).group(1)
        upstream = re.sub(r"^\d+:", "", package_version).rsplit("-", 1)[0]
        tarballs = glob.glob(os.path.join(folder, "package", f"mosquitto_{upstream}.orig.tar.*"))
        if len(tarballs) != 1:
            raise Failure(f"expected one mosquitto_{upstream}.orig.tar.* beside {dsc}, "
                          f"found {tarballs}")
        tree = os.path.join(folder, f"mosquitto-{upstream}")
        os.makedirs(tree)
        # The upstream tarball as it is: Debian's patches are not the upstream builds'.
        run(["tar", "-xf", tarballs[0], "-C", tree, "--strip-components=1"])
        self._source = (tree, f"mosquitto {package_version} ({UNSTABLE}, upstream tarball)")
        return self._source

    def built_entry(self, name, build, tree, mosquitto, passwd, plugins=PLUGIN_FILES):
        entry = {
            "build": build,
            "mosquitto": mosquitto,
            "library_path": "",  # libmosquitto_common is linked in statically
            "plugin_dir": os.path.join(self.root, name, "plugins"),
            "passwd": passwd,
            "ctrl": "/usr/bin/mosquitto_ctrl",  # see the docstring
            "package": self.source_tree()[1],
        }
        # One folder holding the built plugins, as an installed broker's plugin folder would.
        os.makedirs(entry["plugin_dir"], exist_ok=True)
        for plugin, where in plugins.items():
            target = os.path.join(entry["plugin_dir"], plugin)
            if os.path.lexists(target):
                os.remove(target)
            os.symlink(os.path.join(tree, where, plugin), target)
        self.check_libraries(name, entry, [mosquitto, passwd] + [
            os.path.join(entry["plugin_dir"], p) for p in plugins])
        entry["version"] = brokers.broker_version(mosquitto)
        self.check_version(name, entry["version"])
        self.write_stamp(name, entry, list(plugins))
        return entry

    def make_21(self, name="2.1-make"):
        recipe = RECIPES[name]
        source, _ = self.source_tree()
        folder = os.path.join(self.root, name)
        shutil.rmtree(folder, ignore_errors=True)
        os.makedirs(folder)
        tree = os.path.join(folder, "tree")  # make builds in its source tree: a copy of its own
        shutil.copytree(source, tree, symlinks=True)
        log = os.path.join(folder, "build.log")
        for directory in recipe["dirs"]:
            run(["make", f"-j{JOBS}", "-C", directory] + recipe["make"], log=log, cwd=tree)
        if "apps/mosquitto_passwd" not in recipe["dirs"]:
            # The broker alone: no plugins of its own; password files from the system's tool.
            return self.built_entry(name, "make", tree, os.path.join(tree, "src/mosquitto"),
                                    "/usr/bin/mosquitto_passwd", plugins={})
        # PLUGIN_FILES lie in the source tree's plugins/... folders, where make leaves them.
        return self.built_entry(name, "make", tree, os.path.join(tree, "src/mosquitto"),
                                os.path.join(tree, "apps/mosquitto_passwd/mosquitto_passwd"))

    def cmake_21(self):
        name = "2.1-cmake"
        source, _ = self.source_tree()
        folder = os.path.join(self.root, name)
        shutil.rmtree(folder, ignore_errors=True)
        os.makedirs(folder)
        build = os.path.join(folder, "build")
        log = os.path.join(folder, "build.log")
        run(["cmake", "-S", source, "-B", build, "-G", "Unix Makefiles"] + CMAKE_FLAGS, log=log)
        run(["cmake", "--build", build, "-j", JOBS, "--target"] + CMAKE_TARGETS, log=log)
        return self.built_entry(name, "cmake", build, os.path.join(build, "src/mosquitto"),
                                os.path.join(build, "apps/mosquitto_passwd/mosquitto_passwd"))

    # -- checks -------------------------------------------------------------------------
    @staticmethod
    def tool_env(entry):
        env = dict(os.environ)
        if entry["library_path"]:
            env["LD_LIBRARY_PATH"] = entry["library_path"]
        return env

    def check_libraries(self, name, entry, binaries):
        """Fails naming every shared library one of `binaries` cannot find."""
        missing = []
        for binary in binaries:
            if not os.path.exists(binary):
                raise Failure(f"{name}: {binary} was not produced")
            out = subprocess.run(["ldd", binary], capture_output=True, text=True,
                                 env=self.tool_env(entry)).stdout
            missing += [f"{lib} (for {os.path.basename(binary)})"
                        for lib in re.findall(r"^\s*(\S+) => not found", out, re.M)]
        if missing:
            raise Failure(f"{name}: libraries not found: {', '.join(missing)}; add the "
                          "Debian package that holds each to scripts/debian-packages-test.txt "
                          "and run scripts/install-deps.sh")

    @staticmethod
    def check_version(name, version):
        # The name promises a version line: a package in the archive that moved past it needs
        # a new name, not a silent swap. Within the line (2.0.21 -> 2.0.22) it only warns.
        line = RECIPES[name]["line"]
        if not version.startswith(line + "."):
            raise Failure(f"{name}: the archive now gives Mosquitto {version}, not {line}.x; "
                          "update RECIPES in scripts/prepare-brokers.py")
        if not name.startswith(version + "-") and name.count(".") == 2:
            print(f"warning: {name} is Mosquitto {version} now", file=sys.stderr)

    # -- all of it ----------------------------------------------------------------------
    def prepare(self):
        manifest = {brokers.SYSTEM: brokers.system_entry()}
        steps = {"2.0.21-debian": self.debian_2021, "2.1-make": self.make_21,
                 "2.1-cmake": self.cmake_21, "2.1-bare": lambda: self.make_21("2.1-bare")}
        fresh = set()
        for name, step in steps.items():
            entry = self.cached(name)
            if entry is None:
                print(f"preparing {name} ...", flush=True)
                entry = step()
                fresh.add(name)
            manifest[name] = entry
        path = brokers.manifest_path(self.build_dir)
        with open(path + ".tmp", "w") as f:
            json.dump(manifest, f, indent=2, sort_keys=True)
            f.write("\n")
        os.replace(path + ".tmp", path)
        for name, entry in manifest.items():
            exported = run(["nm", "-D", "--defined-only", entry["mosquitto"]]).count("\n")
            state = "prepared" if name in fresh else "cached" if name != "system" else "installed"
            print(f"{name:14} {entry['version']:7} {entry['build']:7} {state:9} "
                  f"exports {exported:4} names  {entry['mosquitto']}")
        print(f"manifest: {path}")


def main():
    if len(sys.argv) != 2 or sys.argv[1].startswith("-"):
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    preparer = Preparer(sys.argv[1])
    with open(os.path.join(preparer.root, ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # two runs on one build folder take turns
        try:
            preparer.prepare()
        except Failure as failure:
            print(f"prepare-brokers: {failure}", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
