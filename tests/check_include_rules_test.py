# SPDX-License-Identifier: BSD-3-Clause
"""scripts/check-include-rules.py: this repository passes, and each rule fails when broken.

The failing cases run the checker on a small tree in a temporary folder laid out like the
repository (src/link, src/broker, src/companion with its query/ and http/, plugin/,
companion/), with one bad include.
"""

import os
import subprocess
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
REPOSITORY = os.path.dirname(HERE)
CHECK = os.path.join(REPOSITORY, "scripts", "check-include-rules.py")

# A tree that follows the rules: every area includes what it may.
CLEAN_TREE = {
    "src/link/shared_region.h": "#pragma once\n",
    "src/link/shared_region.cc": '#include "link/shared_region.h"\n',
    "src/broker/broker_link.h": '#pragma once\n#include "link/shared_region.h"\n',
    "src/broker/broker_link.cc": '#include "broker/broker_link.h"\n#include <string>\n',
    "src/companion/connection_registry.h": '#pragma once\n#include "link/shared_region.h"\n',
    "src/companion/ban_store.h": '#pragma once\n#include "companion/connection_registry.h"\n',
    "src/companion/query/connection_query.h":
        '#pragma once\n#include "companion/connection_registry.h"\n',
    "src/companion/http/router.h": '#pragma once\n#include "companion/connection_registry.h"\n',
    "src/companion/http/service.h": '#pragma once\n#include "companion/http/router.h"\n'
                                    '#include "companion/query/connection_query.h"\n',
    "plugin/plugin.cc": '#include "broker/broker_link.h"\n#include "plugin_state.h"\n',
    "plugin/plugin_state.h": '#pragma once\n#include "link/shared_region.h"\n',
    "companion/main.cc": '#include "companion/http/router.h"\n',
}


def run(root):
    return subprocess.run(["/usr/bin/python3", CHECK, root], capture_output=True, text=True,
                          timeout=60)


class CheckIncludeRulesTest(unittest.TestCase):

    def setUp(self):
        self.temp = tempfile.TemporaryDirectory(prefix="mqc-include-rules-")
        self.addCleanup(self.temp.cleanup)
        self.write(CLEAN_TREE)

    def write(self, files):
        for path, text in files.items():
            full = os.path.join(self.temp.name, path)
            os.makedirs(os.path.dirname(full), exist_ok=True)
            with open(full, "a", encoding="utf-8") as f:
                f.write(text)

    def assert_violation(self, files, expected_line):
        self.write(files)
        result = run(self.temp.name)
        self.assertEqual(result.returncode, 1, result.stdout + result.stderr)
        self.assertIn(expected_line, result.stdout.splitlines())

    def test_this_repository_follows_the_rules(self):
        result = run(REPOSITORY)
        self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
        self.assertEqual(result.stdout, "")

    def test_the_clean_tree_passes(self):
        result = run(self.temp.name)
        self.assertEqual(result.returncode, 0, result.stdout + result.stderr)

    def test_broker_including_companion_fails(self):
        self.assert_violation(
            {"src/broker/broker_link.cc": '#include "companion/connection_registry.h"\n'},
            'src/broker/broker_link.cc:3: #include "companion/connection_registry.h": '
            "broker never includes companion")

    def test_companion_including_broker_fails(self):
        self.assert_violation(
            {"src/companion/http/router.h": '#include "broker/broker_link.h"\n'},
            'src/companion/http/router.h:3: #include "broker/broker_link.h": '
            "companion never includes broker")

    def test_companion_main_including_broker_fails(self):
        self.assert_violation(
            {"companion/main.cc": '#include <broker/broker_link.h>\n'},
            'companion/main.cc:2: #include "broker/broker_link.h": '
            "companion never includes broker")

    def test_link_including_broker_or_companion_fails(self):
        self.write({"src/link/shared_region.cc": '#include "broker/broker_link.h"\n'})
        self.assert_violation(
            {"src/link/shared_region.cc": '#include "companion/connection_registry.h"\n'},
            'src/link/shared_region.cc:2: #include "broker/broker_link.h": '
            "link includes neither broker nor companion")
        result = run(self.temp.name)
        self.assertIn('src/link/shared_region.cc:3: #include "companion/connection_registry.h": '
                      "link includes neither broker nor companion", result.stdout.splitlines())

    def test_plugin_including_companion_fails(self):
        self.assert_violation(
            {"plugin/plugin_state.h": '#include "companion/connection_registry.h"\n'},
            'plugin/plugin_state.h:3: #include "companion/connection_registry.h": '
            "plugin never includes companion")

    def test_companion_core_including_http_fails(self):
        self.assert_violation(
            {"src/companion/ban_store.h": '#include "companion/http/router.h"\n'},
            'src/companion/ban_store.h:3: #include "companion/http/router.h": '
            "the companion core never includes http")

    def test_companion_core_including_http_by_a_relative_path_fails(self):
        self.assert_violation(
            {"src/companion/ban_store.h": '#include "http/router.h"\n'},
            'src/companion/ban_store.h:3: #include "http/router.h": '
            "the companion core never includes http")

    def test_query_including_http_fails(self):
        self.assert_violation(
            {"src/companion/query/connection_query.h": '#include "companion/http/router.h"\n'},
            'src/companion/query/connection_query.h:3: #include "companion/http/router.h": '
            "query never includes http")

    def test_http_and_main_may_include_the_core_query_and_http(self):
        self.write({
            "src/companion/http/view.h": '#pragma once\n#include "companion/http/router.h"\n'
                                         '#include "companion/ban_store.h"\n'
                                         '#include "companion/query/connection_query.h"\n',
            "src/companion/query/connection_query.cc":
                '#include "companion/query/connection_query.h"\n#include "companion/ban_store.h"\n',
            "companion/main.cc": '#include "companion/http/view.h"\n'
                                 '#include "companion/ban_store.h"\n',
        })
        result = run(self.temp.name)
        self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
        self.assertEqual(result.stdout, "")

    def test_a_relative_path_is_resolved_before_the_check(self):
        self.assert_violation(
            {"src/broker/broker_link.h": '#include "../companion/connection_registry.h"\n'},
            'src/broker/broker_link.h:3: #include "../companion/connection_registry.h": '
            "broker never includes companion")


if __name__ == "__main__":
    unittest.main()
