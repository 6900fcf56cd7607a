#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Fails when the build reads a header that scripts/install-deps.sh does not bring.

A build that passes only because some package happens to be on the machine breaks on a fresh
one. So this reads the compiler's own record of what it read, the dependency files (`*.o.d`)
that CMake's Makefile generator has the compiler write next to every object, keeps the headers
from outside the repository and the build tree, and finds the Debian package of each
(`dpkg-query -S`). Every such package must be one that scripts/install-deps.sh installs (both
of its lists, debian-packages-example.txt and debian-packages-test.txt, with the names for this
machine's Debian release), or one that those pull in through `Depends`/`Pre-Depends` (what
`apt-get install --no-install-recommends` installs with them). A header from any other package,
or from no package at all, is named with its package and the source that read it.

Usage: scripts/check-build-headers.py BUILD_DIR [--example | --packages LIST_FILE]
  --example          only the packages `scripts/install-deps.sh --example` installs (enough for
                     the plugin and the companion, not for the tests)
  --packages FILE    the names in FILE (one per line, '#' lines skipped) instead
Exit status: 0 all headers accounted for, 1 some are not, 2 the check could not run.
"""

import argparse
import os
import re
import subprocess
import sys

SCRIPTS = os.path.dirname(os.path.abspath(__file__))
REPOSITORY = os.path.dirname(SCRIPTS)
INSTALL_DEPS = os.path.join(SCRIPTS, "install-deps.sh")


class CheckError(Exception):
    """The check could not run (no build, no dpkg, a listed package not installed)."""


def read_package_list(path):
    """The package names of a list file: one per line, '#' lines and blank lines skipped."""
    with open(path) as f:
        lines = [line.strip() for line in f]
    return [line for line in lines if line and not line.startswith("#")]


def install_deps_packages(example_only=False):
    """The names scripts/install-deps.sh installs on this machine (it picks them per release)."""
    command = ["bash", INSTALL_DEPS, "--list"] + (["--example"] if example_only else [])
    result = subprocess.run(command, capture_output=True, text=True, check=False, timeout=60)
    if result.returncode != 0:
        raise CheckError(f"{' '.join(command)} failed: {result.stderr.strip()}")
    return result.stdout.split()


# -- the compiler's dependency files -----------------------------------------------------------
def dependency_files(build_dir):
    """Every `*.o.d` under the build tree, except CMake's own configure-time probes and the
    brokers of the test matrix (`brokers/`: Mosquitto's own builds, made by
    scripts/prepare-brokers.py, which names what they need from the test list when it is
    missing)."""
    found = []
    top = os.path.normpath(build_dir)
    for folder, subfolders, files in os.walk(build_dir):
        subfolders[:] = [s for s in subfolders if s not in ("CMakeScratch", "CMakeTmp") and
                         not (os.path.normpath(folder) == top and s == "brokers")]
        found += [os.path.join(folder, f) for f in files if f.endswith(".o.d")]
    return sorted(found)


def parse_dependency_file(path):
    """(source, [prerequisites]) of one make rule as gcc/clang write it with -MD."""
    with open(path, encoding="utf-8", errors="surrogateescape") as f:
        text = f.read().replace("\\\n", " ")
    words = [w.replace("\\ ", " ").replace("$$", "$")
             for w in re.findall(r"(?:\\ |[^\s])+", text)]
    # Targets end with ':' (the object, and with -MP a phony rule per header): not inputs.
    inputs = [w for w in words if not w.endswith(":")]
    if not inputs:
        return None, []
    # The compiler ran in the folder that holds CMakeFiles/: relative names are from there.
    base = os.path.dirname(path)
    while base != "/" and os.path.basename(base) != "CMakeFiles":
        base = os.path.dirname(base)
    base = os.path.dirname(base)
    paths = [os.path.normpath(os.path.join(base, w)) for w in inputs]
    return paths[0], paths[1:]


def inside(path, folder):
    folder = os.path.realpath(folder)
    real = os.path.realpath(path)
    return real == folder or real.startswith(folder + os.sep)


def external_headers(build_dir, source_dir):
    """{header path: a source file that read it} for headers outside repository and build."""
    files = dependency_files(build_dir)
    if not files:
        raise CheckError(f"no compiler dependency files (*.o.d) under {build_dir}: build it "
                         "first, with CMake's Makefile generator")
    headers = {}
    for path in files:
        source, prerequisites = parse_dependency_file(path)
        for header in prerequisites:
            if header in headers or inside(header, source_dir) or inside(header, build_dir):
                continue
            headers[header] = os.path.relpath(source, source_dir) if source else path
    return headers


# -- packages ---------------------------------------------------------------------------------
def run(command):
    try:
        return subprocess.run(command, capture_output=True, text=True, check=False)
    except FileNotFoundError as error:
        raise CheckError(f"{command[0]} not found: this check needs Debian's dpkg") from error


def owners(paths):
    """{path: set of packages} from dpkg's file lists; paths no package ships are left out."""
    result = {}
    paths = list(paths)
    for start in range(0, len(paths), 500):  # bounded command lines
        output = run(["dpkg-query", "-S"] + paths[start:start + 500]).stdout
        for line in output.splitlines():
            if line.startswith("diversion by") or ": " not in line:
                continue
            names, path = line.split(": ", 1)
            packages = {n.strip().split(":")[0] for n in names.split(",")}
            result.setdefault(path, set()).update(packages)
    return result


def candidates(path):
    """The names dpkg may know a header by: as read, with symlinks resolved, and across the
    merged /usr (bookworm ships some files under /lib that are reached through /usr/lib)."""
    names = [path, os.path.realpath(path)]
    for name in list(names):
        if name.startswith("/usr/"):
            names.append(name[len("/usr"):])
        else:
            names.append("/usr" + name)
    unique = []
    for name in names:
        if name not in unique:
            unique.append(name)
    return unique


def header_packages(headers):
    """{header: set of packages, empty when no package ships it}."""
    names = {h: candidates(h) for h in headers}
    known = owners(sorted({n for ns in names.values() for n in ns}))
    result = {}
    for header, ns in names.items():
        result[header] = next((known[n] for n in ns if n in known), set())
    return result


def installed_packages():
    """{name: (provides, depends)} of the installed packages, as dpkg records them."""
    fields = "${db:Status-Abbrev}\t${Package}\t${Provides}\t${Depends}\t${Pre-Depends}\n"
    output = run(["dpkg-query", "-W", "-f", fields])
    if output.returncode != 0:
        raise CheckError("dpkg-query -W failed: " + output.stderr.strip())
    packages = {}
    for line in output.stdout.splitlines():
        status, name, provides, depends, pre_depends = (line.split("\t") + [""] * 5)[:5]
        if not status.startswith("ii"):
            continue
        entry = packages.setdefault(name, (set(), []))
        entry[0].update(bare_name(p) for p in provides.split(",") if p.strip())
        entry[1].extend(d for d in (depends + "," + pre_depends).split(",") if d.strip())
    return packages


def bare_name(relation):
    """'libc6 (>= 2.34)' or 'python3:any' -> the package name alone."""
    return re.split(r"[\s(:]", relation.strip(), maxsplit=1)[0]


def closure(roots, installed):
    """The roots and every installed package their Depends/Pre-Depends pull in, recursively.
    Of alternatives ('a | b') the first one installed counts, as apt would pick it; a virtual
    name counts every installed package that provides it."""
    providers = {}
    for name, (provides, _) in installed.items():
        providers.setdefault(name, set()).add(name)
        for virtual in provides:
            providers.setdefault(virtual, set()).add(name)
    missing = [r for r in roots if r not in installed]
    if missing:
        raise CheckError("listed but not installed (run scripts/install-deps.sh): " +
                         ", ".join(missing))
    seen = set()
    queue = list(roots)
    while queue:
        name = queue.pop()
        if name in seen:
            continue
        seen.add(name)
        for clause in installed[name][1]:
            for alternative in clause.split("|"):
                satisfying = providers.get(bare_name(alternative))
                if satisfying:
                    queue.extend(satisfying)
                    break
    return seen


def check(build_dir, roots, list_name, source_dir=REPOSITORY):
    """(problems, summary): one line per header the packages `roots` do not bring."""
    allowed = closure(roots, installed_packages())
    headers = external_headers(build_dir, source_dir)
    packages = header_packages(headers)
    problems = []
    for header in sorted(headers):
        owning = packages[header]
        if not owning:
            problems.append(f"{header} (read by {headers[header]}) belongs to no Debian package")
        elif not owning & allowed:
            problems.append(f"{header} (read by {headers[header]}) is from package "
                            f"{', '.join(sorted(owning))}, which {list_name} neither lists nor "
                            "pulls in")
    used = sorted(set().union(*packages.values())) if packages else []
    summary = (f"{len(headers)} headers from outside the repository, from {len(used)} packages "
               f"({', '.join(used)})")
    return problems, summary


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("build_dir", help="a CMake build tree (Makefile generator), built")
    which = parser.add_mutually_exclusive_group()
    which.add_argument("--example", action="store_true",
                       help="only what `scripts/install-deps.sh --example` installs")
    which.add_argument("--packages", metavar="LIST_FILE",
                       help="the package names in LIST_FILE instead of install-deps.sh's")
    args = parser.parse_args()
    if args.packages:
        list_name = args.packages
    else:
        list_name = "scripts/install-deps.sh" + (" --example" if args.example else "")
    try:
        if args.packages:
            roots = read_package_list(args.packages)
        else:
            roots = install_deps_packages(args.example)
        problems, summary = check(os.path.abspath(args.build_dir), roots, list_name)
    except (CheckError, OSError) as error:
        print(f"check-build-headers: {error}", file=sys.stderr)
        return 2
    print(f"check-build-headers: {summary}")
    if problems:
        print(f"check-build-headers: {len(problems)} headers come from packages that "
              f"{list_name} does not bring:", file=sys.stderr)
        for problem in problems:
            print("  " + problem, file=sys.stderr)
        return 1
    print(f"check-build-headers: every one is from {list_name} or its dependencies")
    return 0


if __name__ == "__main__":
    sys.exit(main())
