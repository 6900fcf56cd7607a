# SPDX-License-Identifier: BSD-3-Clause
"""scripts/check-build-headers.py against this build tree (MQC_BUILD_DIR, set by ctest).

It passes with what scripts/install-deps.sh installs (both lists); with only its --example list
(what scripts/run-example.sh installs) every header it misses is a test tool's; and it fails,
naming mosquitto.h and its package, with the list scripts/install-deps.sh had before
libmosquitto-dev was added (a build on a fresh machine then stopped at `mosquitto.h: No such
file or directory`).
"""

import os
import re
import subprocess
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
REPOSITORY = os.path.dirname(HERE)
CHECK = os.path.join(REPOSITORY, "scripts", "check-build-headers.py")
INSTALL_DEPS = os.path.join(REPOSITORY, "scripts", "install-deps.sh")
BUILD_DIR = os.environ.get("MQC_BUILD_DIR", "")
CXX = os.environ.get("MQC_CXX", "c++")

# scripts/install-deps.sh's list before the fix, verbatim.
LIST_WITHOUT_LIBMOSQUITTO_DEV = """\
build-essential cmake pkg-config clang
libgtest-dev libgmock-dev
mosquitto mosquitto-clients mosquitto-dev
libmicrohttpd-dev libcjson-dev prometheus-cpp-dev libssl-dev
python3-paho-mqtt curl jq openssl prometheus
"""
# Packages added to the list since that whose headers today's build reads (the API's schema):
# with them, libmosquitto-dev stays the only package missing from the old list.
ADDED_SINCE_WITH_HEADERS = "libprotobuf-dev"


def check(build_dir, packages=None, example=False):
    command = ["/usr/bin/python3", CHECK, build_dir]
    if packages is not None:
        command += ["--packages", packages]
    if example:
        command += ["--example"]
    return subprocess.run(command, capture_output=True, text=True, timeout=240)


class CheckBuildHeadersTest(unittest.TestCase):

    def setUp(self):
        self.assertTrue(BUILD_DIR, "run through ctest: MQC_BUILD_DIR names the build tree")
        self.temp = tempfile.TemporaryDirectory(prefix="mqc-headers-")

    def tearDown(self):
        self.temp.cleanup()

    def write(self, name, text):
        path = os.path.join(self.temp.name, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(text)
        return path

    def test_the_list_install_deps_installs_brings_every_header(self):
        result = check(BUILD_DIR)
        self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
        # It really read the build: the plugin's Mosquitto header and the C++ library's.
        self.assertIn("libmosquitto-dev", result.stdout)
        self.assertIn("libstdc++-12-dev", result.stdout)

    def test_with_the_example_list_only_test_tools_are_missing(self):
        # The example builds no test (MQC_TESTS=OFF); this tree may hold the tests too. Whatever
        # the example list does not bring must be from the test list: GoogleTest's headers, not
        # a library of the plugin or the companion.
        def names(*options):
            return set(subprocess.run(["bash", INSTALL_DEPS, "--list", *options], check=True,
                                      capture_output=True, text=True, timeout=60).stdout.split())
        example, everything = names("--example"), names()
        self.assertIn("libmosquitto-dev", example)
        self.assertNotIn("libgtest-dev", example)
        self.assertIn("libgtest-dev", everything)
        result = check(BUILD_DIR, example=True)
        self.assertIn(result.returncode, (0, 1), result.stdout + result.stderr)
        self.assertIn("libmosquitto-dev", result.stdout)
        missing = re.findall(r"is from package (\S+), which", result.stderr)
        self.assertEqual(result.returncode == 1, bool(missing), result.stderr)
        for package in missing:
            self.assertIn(package, everything - example, result.stderr)
        for source in re.findall(r"\(read by (\S+)\)", result.stderr):
            self.assertRegex(source, r"^(tests|fuzz|bench)/", result.stderr)

    def test_the_list_before_libmosquitto_dev_fails_naming_the_header_and_its_package(self):
        old = self.write("old-packages.txt",
                         "\n".join((LIST_WITHOUT_LIBMOSQUITTO_DEV + ADDED_SINCE_WITH_HEADERS)
                                   .split()) + "\n")
        result = check(BUILD_DIR, old)
        self.assertEqual(result.returncode, 1, result.stdout + result.stderr)
        self.assertRegex(result.stderr,
                         r"/usr/include/mosquitto\.h \(read by plugin/\S+\.cc\) is from package "
                         r"libmosquitto-dev,")
        for line in result.stderr.splitlines()[1:]:
            self.assertIn("libmosquitto-dev", line)

    def test_a_header_from_no_package_is_named(self):
        # A real compile, in the layout CMake gives a build tree, of a source that includes a
        # header from a folder outside the repository that no package owns.
        include = os.path.join(self.temp.name, "include")
        self.write("include/stray.h", "#define STRAY 1\n")
        source = self.write("src/uses_stray.cc", "#include <stray.h>\nint f() { return STRAY; }\n")
        build = os.path.join(self.temp.name, "build")
        objects = os.path.join(build, "CMakeFiles", "t.dir")
        os.makedirs(objects)
        subprocess.run([CXX, "-I", include, "-MD", "-MT", "CMakeFiles/t.dir/uses_stray.cc.o",
                        "-MF", os.path.join(objects, "uses_stray.cc.o.d"), "-c", source, "-o",
                        os.path.join(objects, "uses_stray.cc.o")], check=True, cwd=build,
                       timeout=120)
        result = check(build)
        self.assertEqual(result.returncode, 1, result.stdout + result.stderr)
        self.assertIn(os.path.join(include, "stray.h") + " (read by ", result.stderr)
        self.assertIn("belongs to no Debian package", result.stderr)

    def test_a_tree_without_dependency_files_cannot_be_checked(self):
        os.makedirs(os.path.join(self.temp.name, "empty"))
        result = check(os.path.join(self.temp.name, "empty"))
        self.assertEqual(result.returncode, 2)
        self.assertIn("no compiler dependency files", result.stderr)


if __name__ == "__main__":
    unittest.main()
