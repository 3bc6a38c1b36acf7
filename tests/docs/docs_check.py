"""Docs that cannot drift from the binary and the tree: each check compares
what users read with what is there, both ways, and fails naming the line.

    docs_check.py flags BIN     every flag of `BIN serve --help` is in
                                docs/api.md's "Running" table with the same
                                default, and every flag there is a flag
    docs_check.py metrics BIN   every metric family `BIN serve` exposes is in
                                docs/heartbeats-capacity-metrics.md, and every
                                family there is exposed (or marked PostgreSQL
                                only)
    docs_check.py files         no doc or comment names a repo file that does
                                not exist, and every code name
                                docs/architecture.md puts in backticks (its
                                claim's path, its column recipe) is in the
                                code
    docs_check.py words BIN     no issue numbers or notes to ourselves in what
                                users read (README, docs/, packaging/,
                                bench/RESULTS.md, --help)
    docs_check.py version BIN   one version: `BIN --version` (CMakeLists.txt's
                                project VERSION), docs/openapi.json's
                                info.version, and docs/api.md's newest
                                "Version X.Y additions" is that X.Y
    docs_check.py walk          docs/architecture.md's hop-by-hop ways name
                                files that exist and functions they define,
                                and their counts of files and store/ <->
                                store/sqlite/ crossings are the lists' own
                                (tests/docs/walk_check.py)

Standard library only; run by ctest (tests/docs/CMakeLists.txt).
"""

import json
import os
import re
import subprocess
import sys
import tempfile
import time
import urllib.request

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tests", "support"))
import edgealloc_server  # noqa: E402
import walk_check  # noqa: E402


def read(rel):
    with open(os.path.join(ROOT, rel), encoding="utf-8") as f:
        return f.read()


def fail(problems, what):
    for p in problems:
        print("FAIL: " + p)
    if problems:
        sys.exit(1)
    print("ok: " + what)


# ---- flags ----

# `--name TYPE=DEFAULT (Env:...)`, or `--name TYPE (Env:...)` without one,
# or `--name (Env:...)` for a plain flag.
HELP_FLAG = re.compile(r"^\s+(--[a-z0-9-]+)(?:\s+([A-Z]+)(?::[^=\s]*)?(?:=(\S+))?)?")


def help_flags(binary):
    out = subprocess.run([binary, "serve", "--help"], capture_output=True, text=True,
                         check=True).stdout
    flags = {}
    for line in out.splitlines():
        m = HELP_FLAG.match(line)
        if not m or m.group(1) == "--help":
            continue
        kind, default = m.group(2), m.group(3)
        flags[m.group(1)] = "off" if kind is None else default
    return flags


def doc_flags():
    """The flags of docs/api.md's table of `serve` options: {flag: default}.
    A row may hold two flags and two defaults ("`--a N` / `--b N` | 1 / 2")."""
    text = read("docs/api.md")
    flags = {}
    for line in text.splitlines():
        if not line.startswith("| `--"):
            continue
        # A `|` inside backticks (`full\|normal`) is escaped in the table.
        cells = [c for c in re.split(r"(?<!\\)\|", line.strip().strip("|"))]
        names = re.findall(r"`(--[a-z0-9-]+)", cells[0])
        defaults = [d.strip().strip("`") for d in cells[1].split(" / ")]
        if len(defaults) != len(names):
            defaults = [cells[1].strip().strip("`")] * len(names)
        for name, default in zip(names, defaults):
            flags[name] = default
    return flags


def same_default(helped, documented):
    if helped is None:  # no default printed: docs say what it is in words
        return documented not in ("",)
    if helped == "off":
        return documented == "off"
    return documented == helped


def check_flags(binary):
    helped, documented = help_flags(binary), doc_flags()
    problems = []
    for flag, default in sorted(helped.items()):
        if flag not in documented:
            problems.append("serve %s is not in docs/api.md's options table" % flag)
        elif not same_default(default, documented[flag]):
            problems.append("serve %s: --help says default %r, docs/api.md %r"
                            % (flag, default, documented[flag]))
    for flag in sorted(set(documented) - set(helped)):
        problems.append("docs/api.md lists %s, which serve does not take" % flag)
    fail(problems, "%d serve flags, each in docs/api.md with its default" % len(helped))


# ---- metrics ----

def exposed_families(binary):
    """The families of /metrics from a server with the demo fleet, a tenant
    in its keys file (the per-tenant families have a series for each) and
    one claim made, so that every family that has samples on SQLite shows."""
    with tempfile.TemporaryDirectory() as tmp:
        keys = edgealloc_server.keys_file(tmp, "k-admin admin\nk-acme tenant acme claims_per_s=5\n")
        port = edgealloc_server.free_port()
        proc = edgealloc_server.serve(binary, os.path.join(tmp, "m.db"), port,
                                      ["--demo", "--keys", keys],
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                      preexec_fn=edgealloc_server.die_with_parent)
        try:
            if not edgealloc_server.wait_answers(port, "/readyz", proc):
                raise SystemExit("FAIL: edgealloc serve did not start")
            base = "http://127.0.0.1:%d" % port
            time.sleep(1.2)  # a mirror refresh, so that the pools' gauges exist
            claim = urllib.request.Request(
                base + "/v1/sessions", method="POST", data=b'{"region":"weur","pool":"chrome"}',
                headers={"Content-Type": "application/json", "Authorization": "Bearer k-acme"})
            try:
                urllib.request.urlopen(claim, timeout=5).read()
            except OSError:
                pass
            metrics = urllib.request.Request(base + "/metrics",
                                             headers={"Authorization": "Bearer k-admin"})
            body = urllib.request.urlopen(metrics, timeout=5).read().decode()
        finally:
            edgealloc_server.stop(proc)
    return set(re.findall(r"^# TYPE (\S+) ", body, re.M))


def documented_families():
    """The families named in the tables of the metrics doc: a cell may hold
    several, later ones shortened to their suffix (`_written_total` after
    `edgealloc_heartbeats_accepted_total`). Second: those marked PostgreSQL
    only."""
    families, pg_only = set(), set()
    for line in read("docs/heartbeats-capacity-metrics.md").splitlines():
        if not line.startswith("| `"):
            continue
        first_cell = line.split("|")[1]
        names = re.findall(r"`([a-z_]+)`", first_cell)
        prefix = None
        row = []
        for n in names:
            if n.startswith("edgealloc_"):
                prefix = "_".join(n.split("_")[:2])  # edgealloc_heartbeats
                row.append(n)
            elif n.startswith("_") and prefix:
                row.append(prefix + n)
        families.update(row)
        if "PostgreSQL only" in line:
            pg_only.update(row)
    return families, pg_only


def check_metrics(binary):
    exposed = exposed_families(binary)
    documented, pg_only = documented_families()
    problems = ["/metrics exposes %s, which docs/heartbeats-capacity-metrics.md does not list" % f
                for f in sorted(exposed - documented)]
    problems += ["docs/heartbeats-capacity-metrics.md lists %s, which /metrics does not expose" % f
                 for f in sorted(documented - exposed - pg_only)]
    fail(problems, "%d metric families, each documented" % len(exposed))


# ---- files named ----

def tracked_files():
    out = subprocess.run(["git", "-C", ROOT, "ls-files", "-co", "--exclude-standard"], capture_output=True, text=True,
                         check=True).stdout
    return [p for p in out.splitlines() if os.path.exists(os.path.join(ROOT, p))]


SOURCE_ENDINGS = (".h", ".cc", ".py", ".sh", ".cmake", ".md", ".txt", ".in", ".html", ".toml")
# A path-like word: folders of the tree and a file name with an ending.
PATH_WORD = re.compile(r"(?<![\w/.<{*$-])((?:[A-Za-z_][\w-]*/)*[A-Za-z_][\w.-]*"
                       r"\.(?:h|cc|py|sh|md|json|toml|html|cmake|in))(?![\w/(-])")
# A bare name (no folder) is taken for one of ours only with these endings:
# a bare `fleet.json` or `edgealloc.toml` in prose is the reader's own file.
OUR_BARE_ENDINGS = (".h", ".cc", ".py", ".sh", ".md")
# Other projects' headers that comments name.
NOT_OURS = re.compile(r"^(concurrentqueue/.*|sqlite3\.h|libpq-fe\.h|catch2?/.*|nlohmann/.*|"
                      r"boost/.*|CLI/.*|spdlog/.*)$")


def commented_text(rel, text):
    """What users and developers read of a file: all of a Markdown or HTML
    file, the comments of code (`//`, `#`, `*` lines), never #include lines
    or code."""
    if rel.endswith((".md", ".html", ".txt")) or os.path.basename(rel) == "CMakeLists.txt":
        if rel.endswith(".txt"):
            return [(n, line.split("#", 1)[1]) for n, line in enumerate(text.splitlines(), 1)
                    if "#" in line]
        return list(enumerate(text.splitlines(), 1))
    out = []
    hash_comments = rel.endswith((".py", ".sh", ".cmake", ".toml"))
    for n, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        if stripped.startswith("#include"):
            continue
        if hash_comments:
            if "#" in line:
                out.append((n, line.split("#", 1)[1]))
        elif "//" in line:
            out.append((n, line.split("//", 1)[1]))
        elif stripped.startswith("*"):
            out.append((n, stripped))
    return out


def names_a_file(word, here, present, basenames, folders):
    if NOT_OURS.match(word) or word + ".in" in present or any(
            p.endswith("/" + word + ".in") for p in present):
        return True
    if "/" not in word:
        return not word.endswith(OUR_BARE_ENDINGS) or word in basenames
    return (word in present or os.path.normpath(os.path.join(here, word)) in present
            or word in folders
            # A path below a folder of the tree ("sqlite/rows.h" said in store/).
            or any(p.endswith("/" + word) for p in present))


def check_files():
    files = tracked_files()
    present = set(files)
    basenames = {os.path.basename(p) for p in files}
    folders = {os.path.dirname(p) for p in files}
    problems = []
    for rel in files:
        if not rel.endswith(SOURCE_ENDINGS) or rel == "bench/RESULTS.md":
            continue
        try:
            text = read(rel)
        except UnicodeDecodeError:
            continue
        here = os.path.dirname(rel)
        for n, line in commented_text(rel, text):
            line = re.sub(r"https?://\S+", "", line)
            for word in PATH_WORD.findall(line):
                word = word.rstrip(".")
                if not names_a_file(word, here, present, basenames, folders):
                    problems.append("%s:%d names %s, which is not in the repo" % (rel, n, word))
    fail(problems, "every file named in the docs and comments exists")
    check_architecture_names(files)


# A name in backticks: an identifier, maybe qualified (Storage::Claim), maybe
# called (Claim()).
CODE_NAME = re.compile(r"`([A-Za-z_]\w*(?:::[A-Za-z_]\w*)*)(?:\(\))?`")


def check_architecture_names(files):
    """The names docs/architecture.md's walks and recipe send a reader to
    (kSessionColumns, RunStep, containers_session_ended, ...) are in the code
    (sources, CMakeLists.txt, docs/openapi.json): a rename there fails here."""
    code = "".join(read(rel) for rel in files if rel != "tests/docs/docs_check.py" and (
                   rel.endswith((".h", ".cc", ".py", ".sh", ".html", ".json"))
                   or os.path.basename(rel) == "CMakeLists.txt"))
    problems = []
    for n, line in enumerate(read("docs/architecture.md").splitlines(), 1):
        for name in CODE_NAME.findall(line):
            if not re.search(r"\b%s\b" % re.escape(name.split("::")[-1]), code):
                problems.append("docs/architecture.md:%d names %s, which is not in the code" % (n, name))
    fail(problems, "every code name docs/architecture.md gives is in the code")


# ---- words for users ----

USER_DOCS = ["README.md", "bench/RESULTS.md"]
ISSUE_NUMBER = re.compile(r"(?<![\w&/])#\d+\b")
NOTES_TO_US = re.compile(r"should link here|TODO|FIXME|XXX|issue \d+", re.I)


def check_words(binary):
    texts = {}
    for rel in USER_DOCS + ["docs/" + f for f in sorted(os.listdir(os.path.join(ROOT, "docs")))
                            if f.endswith(".md")] + \
            ["packaging/" + f for f in sorted(os.listdir(os.path.join(ROOT, "packaging")))]:
        if os.path.isfile(os.path.join(ROOT, rel)):
            texts[rel] = read(rel)
    for args in (["--help"], ["serve", "--help"], ["register", "--help"]):
        out = subprocess.run([binary] + args, capture_output=True, text=True).stdout
        texts["edgealloc " + " ".join(args)] = out
    problems = []
    for name, text in texts.items():
        for n, line in enumerate(text.splitlines(), 1):
            if ISSUE_NUMBER.search(line) or NOTES_TO_US.search(line):
                problems.append("%s:%d: %s" % (name, n, line.strip()[:120]))
    fail(problems, "no issue numbers or notes to ourselves in %d user texts" % len(texts))


# ---- version ----

def check_version(binary):
    out = subprocess.run([binary, "--version"], capture_output=True, text=True, check=True).stdout
    m = re.match(r"edgealloc (\d+)\.(\d+)\.(\d+) ", out)
    problems = []
    if not m:
        fail(["`edgealloc --version` does not start with a version: " + out[:80]], "")
    version = "%s.%s.%s" % m.groups()
    openapi = json.loads(read("docs/openapi.json"))["info"]["version"]
    if openapi != version:
        problems.append("docs/openapi.json info.version is %s, the binary is %s (CMakeLists.txt)"
                        % (openapi, version))
    additions = [tuple(map(int, a)) for a in
                 re.findall(r"^## Version (\d+)\.(\d+) additions$", read("docs/api.md"), re.M)]
    newest = max(additions, default=None)
    if newest != (int(m.group(1)), int(m.group(2))):
        problems.append("docs/api.md's newest additions are version %s, the binary is %s"
                        % (".".join(map(str, newest)) if newest else "none", version))
    fail(problems, "one version, %s: the binary, docs/openapi.json and docs/api.md" % version)


def main():
    if len(sys.argv) < 2:
        raise SystemExit(__doc__)
    what = sys.argv[1]
    if what == "flags":
        check_flags(sys.argv[2])
    elif what == "metrics":
        check_metrics(sys.argv[2])
    elif what == "files":
        check_files()
    elif what == "words":
        check_words(sys.argv[2])
    elif what == "version":
        check_version(sys.argv[2])
    elif what == "walk":
        fail(walk_check.problems(), "docs/architecture.md's ways, hop by hop, name what the code has")
    else:
        raise SystemExit(__doc__)


if __name__ == "__main__":
    main()
