#!/usr/bin/env python3
"""Renders the reference part of docs/api.md from docs/openapi.json: a table
of every operation (method, path, who may call it, what it answers), between
the markers `<!-- openapi:begin -->` and `<!-- openapi:end -->`. The rest of
docs/api.md is prose written by hand.

    scripts/render_api_md.py           rewrite docs/api.md
    scripts/render_api_md.py --check   exit 1 if docs/api.md is not up to date
                                       (ctest openapi/api_md)
"""
import json
import os
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
DOC = os.path.join(ROOT, "docs", "openapi.json")
MD = os.path.join(ROOT, "docs", "api.md")
BEGIN, END = "<!-- openapi:begin -->", "<!-- openapi:end -->"
WHO = {"sessions": "tenant", "containers": "admin", "heartbeats": "container", "operations": "tenant"}


def render(doc):
    lines = [BEGIN,
             "",
             "Generated from [openapi.json](openapi.json) by `scripts/render_api_md.py`;",
             "the server serves the same document at `GET /openapi.json`.",
             "",
             "| method | path | key | summary | answers |",
             "|---|---|---|---|---|"]
    for path, item in doc["paths"].items():
        for method in ("get", "post", "delete"):
            op = item.get(method)
            if op is None:
                continue
            # x-key: who may call it, where its tag's usual answer is not it.
            who = op.get("x-key") or ("none" if op.get("security") == [] else WHO.get(op["tags"][0], "any"))
            statuses = ", ".join(sorted(op["responses"]))
            lines.append("| %s | `%s` | %s | %s | %s |" % (method.upper(), path, who, op["summary"], statuses))
    lines += ["", END]
    return "\n".join(lines)


def main():
    with open(DOC) as f:
        doc = json.load(f)
    with open(MD) as f:
        md = f.read()
    if BEGIN not in md or END not in md:
        print("render_api_md: docs/api.md lacks the markers %s ... %s" % (BEGIN, END), file=sys.stderr)
        return 1
    head, rest = md.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    new = head + render(doc) + tail
    if "--check" in sys.argv[1:]:
        if new != md:
            print("render_api_md: docs/api.md is not up to date with docs/openapi.json; "
                  "run scripts/render_api_md.py", file=sys.stderr)
            return 1
        print("render_api_md: docs/api.md is up to date")
        return 0
    with open(MD, "w") as f:
        f.write(new)
    return 0


if __name__ == "__main__":
    sys.exit(main())
