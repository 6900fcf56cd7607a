# SPDX-License-Identifier: BSD-3-Clause
"""The .deb that `cpack -G DEB` makes from this build tree: its control fields, its files, what
Debian's lintian says of it, and the plugin loaded from where the package puts it into the real
broker, with no `companion` option, serving a real client back over HTTP.

Registered by the top-level CMakeLists.txt (packaging section) for unsanitized builds only; it
reuses the build tree named by MQC_BUILD_DIR.
"""

import gzip
import os
import re
import shutil
import subprocess
import tempfile
import unittest

import harness

BUILD_DIR = os.environ.get("MQC_BUILD_DIR", "")
VERSION = os.environ.get("MQC_VERSION", "")
DEB_VERSION = os.environ.get("MQC_DEB_VERSION", "")  # e.g. 0.1.0-1~deb12
PLUGIN_DIR = os.environ.get("MQC_DEB_PLUGIN_DIR", "")  # e.g. /usr/lib/x86_64-linux-gnu/...
EXAMPLE_CONF = "/usr/share/doc/mosquitto-connections/examples/00-mosquitto-connections.conf"
DOC = "/usr/share/doc/mosquitto-connections"
MAN_PAGE = "/usr/share/man/man1/mosquitto-connections.1.gz"
# lintian's tags that fail the package: errors and warnings. The others are shown and accepted:
# I: (info) says what a stricter build could add (on Debian 12: hardening-no-bindnow and
# hardening-no-fortify-functions, the build's own compiler flags; binary-has-unneeded-section
# .comment, the compiler's version string), X: (experimental) executable-in-usr-lib names the
# companion, which the package keeps in its own folder under /usr/lib as Debian's policy allows
# for a program that only another program starts; P: (pedantic), C:, O: and N: are notes.
LINTIAN_FAILING = ("E", "W")


def run(*command):
    return subprocess.run(command, check=True, capture_output=True, text=True,
                          timeout=300).stdout


def dependencies(depends):
    """{package: [version constraints]} of a Depends field."""
    result = {}
    for clause in depends.split(","):
        match = re.fullmatch(r"\s*([a-z0-9][a-z0-9+.-]*)(?:\s*\(([^)]*)\))?\s*", clause)
        assert match, f"not a plain dependency: {clause!r} in {depends!r}"
        result.setdefault(match.group(1), []).append(match.group(2))
    return result


def runtime_packages(binary):
    """The Debian packages of the shared libraries `binary` names (DT_NEEDED), found where the
    dynamic loader finds them (ldd) and looked up with dpkg -S."""
    needed = re.findall(r"^\s*NEEDED\s+(\S+)$", run("objdump", "-p", binary), re.M)
    loaded = dict(re.findall(r"^\s*(\S+) => (/\S+)", run("ldd", binary), re.M))
    packages = set()
    for library in needed:
        path = loaded[library]
        for name in (path, os.path.realpath(path), path.replace("/usr/lib/", "/lib/", 1)):
            found = subprocess.run(["dpkg-query", "-S", name], capture_output=True, text=True)
            if found.returncode == 0:
                packages.add(found.stdout.split(":")[0])
                break
        else:
            raise AssertionError(f"{binary} needs {path}, which no Debian package ships")
    return packages


class DebPackageBroker(harness.Broker):
    """A harness broker whose plugin line names the plugin inside the extracted package."""

    def __init__(self, plugin_path, **kwargs):
        super().__init__(**kwargs)
        self.plugin_path = plugin_path

    def config_text(self):
        text = super().config_text()
        own = f"plugin {self.dir}/mosquitto_connections.so\n"
        assert own in text
        return text.replace(own, f"plugin {self.plugin_path}\n")


class IncludeDirBroker(harness.Broker):
    """A harness broker whose plugin lines come from the files of {dir}/conf.d alone."""

    def config_text(self):
        lines = [line for line in super().config_text().splitlines()
                 if not line.startswith("plugin")]
        return "\n".join(lines + [f"include_dir {self.dir}/conf.d"]) + "\n"


class DebPackageTest(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        assert BUILD_DIR and VERSION and DEB_VERSION and PLUGIN_DIR, \
            "run through ctest (env from CMakeLists.txt)"
        cls.work = tempfile.mkdtemp(prefix="mqc-deb-")
        os.chmod(cls.work, 0o755)  # the broker drops to user mosquitto, which reads the root
        run("cpack", "-G", "DEB", "--config", os.path.join(BUILD_DIR, "CPackConfig.cmake"),
            "-B", os.path.join(cls.work, "out"))
        cls.arch = run("dpkg", "--print-architecture").strip()
        cls.deb_name = f"mosquitto-connections_{DEB_VERSION}_{cls.arch}.deb"
        cls.deb = os.path.join(cls.work, "out", cls.deb_name)
        cls.root = os.path.join(cls.work, "root")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.work, ignore_errors=True)

    def field(self, name):
        return run("dpkg-deb", "--field", self.deb, name).strip()

    def test_file_name(self):
        debs = [f for f in os.listdir(os.path.join(self.work, "out")) if f.endswith(".deb")]
        self.assertEqual(debs, [self.deb_name])

    def test_control_fields(self):
        info = run("dpkg-deb", "-I", self.deb)
        self.assertRegex(info, r"(?m)^ Package: mosquitto-connections$")
        self.assertEqual(self.field("Package"), "mosquitto-connections")
        self.assertEqual(self.field("Version"), DEB_VERSION)
        # One .deb per Debian release: the revision names the release it was built on.
        with open("/etc/os-release") as f:
            release = dict(line.rstrip("\n").split("=", 1) for line in f if "=" in line)
        self.assertEqual(DEB_VERSION,
                         f"{VERSION}-1~deb{release['VERSION_ID'].strip(chr(34))}")
        self.assertEqual(self.field("Architecture"), self.arch)

    def test_depends_names_every_runtime_package_with_a_version(self):
        depends = dependencies(self.field("Depends"))
        # The brokers it was tested with: Debian 12's 2.0.11 up to 2.1.x (CMakeLists.txt).
        self.assertEqual(sorted(depends["mosquitto"]), ["<< 2.2", ">= 2.0.11"])
        self.assertEqual(depends["python3"], [">= 3.9"])  # for /usr/bin/mosquitto-connections
        for package in ("libmicrohttpd12", "libcjson1", "libprometheus-cpp-core1.0", "libssl3",
                        "libc6", "libstdc++6"):
            self.assertIn(package, depends)
        # Whatever the two binaries load at run time, as the machine's dpkg knows it.
        self.extract()
        for name in ("mosquitto_connections.so", "mosquitto_connections_companion"):
            for package in runtime_packages(self.root + PLUGIN_DIR + "/" + name):
                self.assertIn(package, depends, f"{name} loads a library from {package}")
        for package, versions in depends.items():
            for version in versions:
                self.assertRegex(version or "", r"^(>=|<<|=) \S+$", f"{package} has no version")

    def extract(self):
        if not os.path.isdir(self.root):
            run("dpkg", "-x", self.deb, self.root)

    def test_files(self):
        self.extract()
        files = sorted(os.path.relpath(os.path.join(folder, f), self.root)
                       for folder, _, names in os.walk(self.root) for f in names)
        self.assertEqual(files, sorted([PLUGIN_DIR.lstrip("/") + "/mosquitto_connections.so",
                                        PLUGIN_DIR.lstrip("/") + "/mosquitto_connections_companion",
                                        "usr/bin/mosquitto-connections",
                                        MAN_PAGE.lstrip("/"),
                                        EXAMPLE_CONF.lstrip("/"),
                                        DOC.lstrip("/") + "/copyright",
                                        DOC.lstrip("/") + "/changelog.Debian.gz",
                                        DOC.lstrip("/") + "/changelog.gz"]))
        companion = os.stat(self.root + PLUGIN_DIR + "/mosquitto_connections_companion")
        self.assertTrue(companion.st_mode & 0o111, "the companion is executable")
        cli = self.root + "/usr/bin/mosquitto-connections"
        self.assertTrue(os.stat(cli).st_mode & 0o111, "the command line is executable")
        # It runs from where the package puts it, with Debian's python3 only.
        self.assertIn("usage: mosquitto-connections", run(cli, "--help"))

    def test_manual_page_and_changelogs(self):
        self.extract()
        with gzip.open(self.root + MAN_PAGE, "rt") as f:
            self.assertIn(f'.TH MOSQUITTO-CONNECTIONS 1 "" "mosquitto-connections {VERSION}"',
                          f.read())
        with gzip.open(self.root + DOC + "/changelog.Debian.gz", "rt") as f:
            entry = f.read()
        # Its first line names this package's version; its signature the Maintainer field.
        self.assertRegex(entry, rf"^mosquitto-connections \({re.escape(DEB_VERSION)}\) "
                                r"[a-z]+; urgency=medium\n")
        self.assertIn(f"\n -- {self.field('Maintainer')}  ", entry)
        self.assertRegex(self.field("Maintainer"), r"^[^<>]+ <[^<>@ ]+@[^<>@ ]+>$")
        with gzip.open(self.root + DOC + "/changelog.gz", "rt") as f:
            with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                   "CHANGELOG.md")) as source:
                self.assertEqual(f.read(), source.read())

    def test_description_says_what_the_readme_says(self):
        description = self.field("Description")
        self.assertIn("2.0.11 to 2.1.x", description)  # README: "Add it to an existing Mosquitto"
        self.assertIn(EXAMPLE_CONF, description)
        self.assertIn("/etc/mosquitto/conf.d/", description)
        self.assertNotIn("mosquitto.conf:", description)
        for line in description.splitlines():
            self.assertLessEqual(len(line), 80, line)

    def test_lintian_reports_no_error_and_no_warning(self):
        lintian = shutil.which("lintian")
        self.assertIsNotNone(lintian,
                             "Debian's lintian package is needed (scripts/debian-packages-test.txt)")
        result = subprocess.run(
            [lintian, "--display-info", "--display-experimental", "--fail-on", "error,warning",
             self.deb], capture_output=True, text=True, timeout=300)
        tags = re.findall(r"^([A-Z]): mosquitto-connections(?: [a-z]+)?: (\S+)(.*)$",
                          result.stdout, re.M)
        print("\n" + result.stdout)  # the accepted tags, for the test's log
        failing = [f"{kind}: {tag}{rest}" for kind, tag, rest in tags if kind in LINTIAN_FAILING]
        self.assertEqual(failing, [])
        self.assertEqual(result.returncode, 0, result.stdout + result.stderr)

    def test_the_examples_install_leaves_the_command_line_to_the_deb(self):
        """scripts/run-example.sh's own install line, run into a scratch prefix: the plugin and
        its companion only, so that no /usr/local/bin copy hides the .deb's /usr/bin one; a
        plain `cmake --install` (the README's source install) has the command line and its
        manual page."""
        script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scripts",
                              "run-example.sh")
        with open(script) as f:
            lines = [line for line in f if line.startswith("cmake --install build ")]
        self.assertEqual(len(lines), 1, lines)
        words = lines[0].split(">")[0].split()
        self.assertEqual(words[:5], ["cmake", "--install", "build", "--prefix", "/usr/local"])

        def installed(arguments):
            prefix = tempfile.mkdtemp(prefix="prefix-", dir=self.work)
            run("cmake", "--install", BUILD_DIR, "--prefix", prefix, *arguments)
            return sorted(os.path.relpath(os.path.join(folder, f), prefix)
                          for folder, _, names in os.walk(prefix) for f in names)
        self.assertEqual(installed(words[5:]), ["lib/mosquitto/mosquitto_connections.so",
                                                "lib/mosquitto/mosquitto_connections_companion"])
        everything = installed([])
        self.assertIn("bin/mosquitto-connections", everything)
        self.assertIn("share/man/man1/mosquitto-connections.1.gz", everything)

    def test_the_example_drop_in_file_loads_the_plugin_from_include_dir(self):
        # The example, copied into a conf.d folder that the broker's configuration includes, as
        # README's first screen says; only its plugin path is moved to the extracted package.
        self.extract()
        with open(self.root + EXAMPLE_CONF) as f:
            example = f.read()
        self.assertIn(f"\nplugin {PLUGIN_DIR}/mosquitto_connections.so\n", example)
        broker = IncludeDirBroker(files={
            "conf.d/00-mosquitto-connections.conf": example.replace(
                f"plugin {PLUGIN_DIR}/", f"plugin {self.root}{PLUGIN_DIR}/").replace(
                "plugin_opt_http_port 8080", "plugin_opt_http_port 0")})
        broker.start()
        try:
            # 503 until the companion has the broker's state (at the broker's next TICKs).
            harness.wait_for(lambda: broker.http("/healthz")[0] == 200, timeout=10,
                             what="/healthz 200")
            self.assertEqual(broker.http("/healthz")[2], "ok\n")
        finally:
            broker.stop()
            broker.cleanup_dir()

    def test_broker_loads_the_packaged_plugin_and_serves_a_client(self):
        self.extract()
        plugin = self.root + PLUGIN_DIR + "/mosquitto_connections.so"
        broker = DebPackageBroker(plugin)  # no `companion` option: the one beside the .so
        self.assertNotIn("companion", broker.options)
        broker.start()
        try:
            self.assertIn(f"plugin {plugin}\n", broker.config_text())
            # The companion that serves is the packaged one, found beside the packaged plugin.
            self.assertEqual(os.readlink(f"/proc/{broker.companion_pid}/exe"),
                             self.root + PLUGIN_DIR + "/mosquitto_connections_companion")
            client = harness.Client(broker, "deb-client-1")
            try:
                self.assertEqual(client.connack, 0)
                found = broker.wait_connections(
                    lambda cs: [c for c in cs if c["client_id"] == "deb-client-1"],
                    what="deb-client-1 in GET /api/mqtt/connections")
                self.assertEqual(found[0]["protocol_version"], 4)
                self.assertEqual(found[0]["remote_addr"], f"127.0.0.1:{client.local_port}")
            finally:
                client.disconnect()
        finally:
            broker.stop()
            broker.cleanup_dir()


if __name__ == "__main__":
    unittest.main()
