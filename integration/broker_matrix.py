"""Which integration suite or test cannot apply to which broker build, and why: the one place.

Every suite runs against every broker of the matrix (scripts/prepare-brokers.py) unless an entry
here says otherwise. An entry is (test id prefix, applies_to, reason): the prefix is a suite
("test_reload"), a class ("test_reload.ReloadSoakTest") or one test
("test_reload.ReloadSoakTest.test_x"); applies_to(broker) gets an integration/brokers.py
BrokerBuild (name, version_tuple, build) and says whether the entry holds for it; the reason is
what the skip prints. integration/run_suite.py turns entries into unittest skips
(harness.apply_broker_matrix), and ctest shows a suite skipped whole as "Not Run".

Add an entry only with a reason from upstream's source or from the suite's own purpose, never to
quiet a failure the plugin should fix.
"""

NOT_APPLICABLE = [
    ("deb_package", lambda broker: broker.build != "system",
     "tests the .deb against the installed broker it depends on (Depends: mosquitto (>= "
     "2.0.11), mosquitto (<< 2.1)), not a broker unpacked or built into the build tree"),
]


def skip_reason(test_id, broker):
    """The reason `test_id` cannot run on `broker`, or None when it can."""
    for prefix, applies_to, reason in NOT_APPLICABLE:
        if (test_id == prefix or test_id.startswith(prefix + ".")) and applies_to(broker):
            return f"not on {broker.name}: {reason}"
    return None
