"""mirror_check.py: every product unit has a test of its own name or a line
in tests/README.md that names the tests covering it.

A unit is a .cc under allocator/, base/, batcher/, kvmirror/, server/ and
store/; its mirrored test is tests/<its path less .cc>_test.cc. A README
line is "- `unit.cc`: ..." and names its tests as paths under tests/.
Fails when a unit has neither, when a line names a test file that does not
exist or names none, and when a line is left for a unit that is gone or has
a mirrored test now. Prints the counts.

  python3 tests/mirror_check.py [ROOT]

Standard library only.
"""

import os
import re
import sys

PRODUCT_DIRS = ("allocator", "base", "batcher", "kvmirror", "server", "store")
LINE = re.compile(r"^- `([\w./-]+\.cc)`:(.*)$")
TEST_PATH = re.compile(r"\btests/[\w./-]*[\w-]\.(?:cc|h|py|sh)\b")


def units(root):
    found = []
    for top in PRODUCT_DIRS:
        for dirpath, _, files in os.walk(os.path.join(root, top)):
            for name in files:
                if name.endswith(".cc"):
                    found.append(os.path.relpath(os.path.join(dirpath, name), root))
    return sorted(found)


def mirrored(root, unit):
    return os.path.isfile(os.path.join(root, "tests", unit[: -len(".cc")] + "_test.cc"))


def readme_lines(root):
    """{unit: [test paths]} from tests/README.md, and the problems found."""
    lines, problems = {}, []
    with open(os.path.join(root, "tests", "README.md"), encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            m = LINE.match(line.rstrip("\n"))
            if not m:
                continue
            unit, tests = m.group(1), TEST_PATH.findall(m.group(2))
            where = "tests/README.md:%d" % number
            if unit in lines:
                problems.append("%s: %s has a second line" % (where, unit))
            lines[unit] = tests
            if not tests:
                problems.append("%s: the line for %s names no test under tests/" % (where, unit))
            for test in tests:
                if not os.path.isfile(os.path.join(root, test)):
                    problems.append("%s: %s names %s, which does not exist" % (where, unit, test))
    return lines, problems


def main():
    root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else
                           os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    all_units = units(root)
    lines, problems = readme_lines(root)
    with_test = [u for u in all_units if mirrored(root, u)]
    for unit in all_units:
        if unit not in lines and not mirrored(root, unit):
            problems.append("%s has no tests/%s_test.cc and no line in tests/README.md saying "
                            "which test covers it" % (unit, unit[: -len(".cc")]))
    for unit in sorted(lines):
        if not os.path.isfile(os.path.join(root, unit)):
            problems.append("tests/README.md has a line for %s, which is not in the repo" % unit)
        elif mirrored(root, unit):
            problems.append("tests/README.md has a line for %s, which has its own test now: "
                            "drop the line" % unit)
    print("%d product units: %d with a test of their name, %d covered elsewhere "
          "(tests/README.md)" % (len(all_units), len(with_test), len(lines)))
    for p in problems:
        print("FAIL: " + p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
