#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""The plugin's callbacks, split out of the callgrind files bench/broker_overhead.py --keep DIR
leaves: the inclusive cost of each callback as the broker calls it (the `calls=` lines of its
callers), the 2N-message run less the N-message one, per delivery (N x SUBSCRIBERS). Whole-broker
totals move by 10 to 40 instructions between identical runs (the broker's own `strcmp` of client
ids, 2.1's allocator); the callbacks' own cost does not, so builds are compared by these.

Usage: bench/callgrind_callbacks.py DIR [--messages N] [--subscribers N] [--kind plugin|floor|plain]
Prints one line: each callback's instructions per delivery ("work": TICK's clock-paced part,
inside TICK; "strcmp": the broker's, for the draw described in docs/benchmarks.md) and the total.
"""

import argparse
import re

# The callbacks of plugin/broker_events.cc by the names the broker calls, and two costs inside.
CALLEES = {
    "ACL_CHECK": r"::OnAclCheck\(int",
    "ACL_CHECK21": r"::OnAclCheck21\(int",
    "MESSAGE": r"::OnMessage\(int",
    "MESSAGE_OUT": r"::OnMessageOut\(int",
    "TICK": r"::OnTick(21)?\(int",
    "work": r"EventDecisions::TickWork\(",
    "strcmp": r"^__strcmp_avx2$",
}


def inclusive_costs(path):
    """Sums the inclusive cost of every call to each of CALLEES, and the file's total."""
    names = {}  # callgrind's compressed names: "(id) name" once, "(id)" after
    costs = {"total": 0}
    callee = None
    after_calls = False
    with open(path, errors="replace") as lines:
        for line in lines:
            if after_calls:  # the line after calls=: the call's position and inclusive cost
                after_calls = False
                for key, pattern in CALLEES.items():
                    if callee and re.search(pattern, callee):
                        costs[key] = costs.get(key, 0) + int(line.split()[-1])
                continue
            match = re.match(r"(c?fn)=\((\d+)\)(?: (.*))?$", line.rstrip("\n"))
            if match:
                if match.group(3):
                    names[match.group(2)] = match.group(3)
                if match.group(1) == "cfn":
                    callee = names.get(match.group(2), "")
            elif line.startswith("calls="):
                after_calls = True
            elif line.startswith(("summary:", "totals:")):
                costs["total"] = int(line.split()[1])
    return costs


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dir")
    parser.add_argument("--messages", type=int, default=3000)
    parser.add_argument("--subscribers", type=int, default=4)
    parser.add_argument("--kind", default="plugin", choices=("plugin", "floor", "plain"))
    args = parser.parse_args()
    base = f"{args.dir}/callgrind.{args.kind}"
    once = inclusive_costs(f"{base}.{args.messages}.out")
    twice = inclusive_costs(f"{base}.{2 * args.messages}.out")
    deliveries = args.messages * args.subscribers
    keys = [key for key in [*CALLEES, "total"] if key in once or key in twice]
    print(args.kind, " ".join(
        f"{key}={(twice.get(key, 0) - once.get(key, 0)) / deliveries:.1f}" for key in keys))


if __name__ == "__main__":
    main()
