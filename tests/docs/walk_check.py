"""docs_check.py walk: docs/architecture.md's ways, hop by hop, held to the
code. In its sections "A claim, hop by hop", "A heartbeat, hop by hop" and
"Hops that only forward", every `path` named exists and every function named
beside a path (`path/file.cc` `Class::Function`) is defined or declared in
that file, by a look at its text. Each numbered hop starts with its file and
function; it is called by the hop above, or by hop N if it says `(from N)`,
or by no hop if it names another way in (`(from the queue)`, `(back)`); the
pairs inside it are functions it calls. From that the check counts the
files of the hops and the calls between store/ and store/sqlite/, and fails
unless the section's "**N files**, **M crossings**" says the same.

Standard library only.
"""

import os
import re

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))


def read(rel):
    with open(os.path.join(ROOT, rel), encoding="utf-8") as f:
        return f.read()


WALKS = ("A claim, hop by hop", "A heartbeat, hop by hop", "Hops that only forward")
# `path` `Function`: a function named beside its file (across a line break too).
PAIR = re.compile(r"`((?:[\w.-]+/)*[\w.-]+\.(?:cc|h))`\s+`([A-Za-z_~][\w:~]*)`")
PATH = re.compile(r"`((?:[\w.-]+/)+[\w.-]*)`")
NOT_A_TYPE = {"return", "else", "new", "delete", "throw", "case", "co_return", "not", "and", "or"}


def defines(rel, name):
    """Whether `rel` defines or declares `name` (Class::Name or a free name):
    an out-of-line definition, a declaration line in the class's file, or a
    constant (a statement's text)."""
    # Code only: a comment that names the function is no definition.
    text = "\n".join(line.split("//")[0] for line in read(rel).splitlines())
    parts = name.split("::")
    last, owner = re.escape(parts[-1]), parts[-2] if len(parts) > 1 else None
    # The owner maybe a template's (GroupWriter<Job>::Enqueue).
    if owner and re.search(r"\b%s(?:<[\w, ]*>)?::%s\s*\(" % (owner, last), text):
        return True
    if re.search(r"\bconstexpr\b[^=;]*\b%s\b(?:\[\])?\s*=" % last, text):
        return True
    if owner and not re.search(r"\b(?:class|struct)\s+(?:\w+::)*%s\b" % owner, text):
        return False
    # A type (a word, maybe qualified, a template's end, * or &) before the name.
    for m in re.finditer(r"([\w:>*&]*\w[\w:>*&]*)\s+[*&]?(?:\w+::)*%s\s*\(" % last, text):
        if m.group(1) not in NOT_A_TYPE:
            return True
    return False


def walk_items(body):
    """The numbered hops of a section: (number, its lines joined)."""
    items, open_item = [], False
    for line in body.splitlines():
        m = re.match(r"(\d+)\. (.*)", line)
        if m:
            items.append((int(m.group(1)), m.group(2)))
            open_item = True
        elif open_item and line.startswith("   ") and line.strip():
            items[-1] = (items[-1][0], items[-1][1] + " " + line.strip())
        else:
            open_item = False
    return items


def side(path):
    return {"store": "store", "store/sqlite": "sqlite"}.get(os.path.dirname(path))


def check_walk_section(title, body, problems):
    where = "docs/architecture.md \"%s\"" % title
    for path in PATH.findall(body):
        if not os.path.exists(os.path.join(ROOT, path)):
            problems.append("%s names %s, which is not in the repo" % (where, path))
    for path, name in PAIR.findall(body):
        if os.path.isfile(os.path.join(ROOT, path)) and not defines(path, name):
            problems.append("%s: %s neither defines nor declares %s" % (where, path, name))
    items = walk_items(body)
    if not items:
        return
    primary, files, crossings = {}, set(), 0
    for i, (n, text) in enumerate(items, 1):
        pairs = PAIR.findall(text)
        if n != i or not pairs or not text.startswith("`" + pairs[0][0] + "`"):
            problems.append("%s: hop %d does not start with `path` `Function` (or is not "
                            "numbered %d)" % (where, n, i))
            return
        primary[n] = pairs[0][0]
        files.update(p for p, _ in pairs)
        how = re.match(r"`[^`]+`\s+`[^`]+`\s+\(([^)]*)\)", text)
        caller = n - 1 if not how else None
        if how and re.fullmatch(r"from \d+", how.group(1)):
            caller = int(how.group(1).split()[1])
            if caller >= n:
                problems.append("%s: hop %d is called from a later hop" % (where, n))
        calls = [(primary.get(caller), primary[n])] + [(primary[n], p) for p, _ in pairs[1:]]
        crossings += sum(1 for a, b in calls if a and {side(a), side(b)} == {"store", "sqlite"})
    said = re.search(r"\*\*(\d+) files\*\*, \*\*(\d+) crossings\*\*", body)
    if not said or (int(said.group(1)), int(said.group(2))) != (len(files), crossings):
        problems.append("%s: its list counts **%d files**, **%d crossings**; the text says %s"
                        % (where, len(files), crossings, said.group(0) if said else "none"))


def problems():
    text = read("docs/architecture.md")
    found = []
    for title in WALKS:
        m = re.search(r"^## %s\n(.*?)(?=^## |\Z)" % re.escape(title), text, re.M | re.S)
        if not m:
            found.append("docs/architecture.md has no section \"%s\"" % title)
            continue
        check_walk_section(title, m.group(1), found)
    return found
