"""size_check.py: no product file over 400 lines, no function over 80.

The house's bounds (a file or a function longer than that is split by
topic). Product files are the .cc and .h under allocator/, base/, batcher/,
kvmirror/, server/ and store/. A function's length counts from the first
line of its signature to its closing brace; a function is a brace block
at namespace or class level whose head ends as a signature does (a `)`,
perhaps followed by const, noexcept, override, a trailing return type or a
constructor's initializers). Comments, strings, raw strings, character
literals and preprocessor lines are blanked before braces are counted.
Prints the longest file and function, and each one over its bound.

  python3 tests/size_check.py [ROOT]

Standard library only.
"""

import os
import re
import sys

PRODUCT_DIRS = ("allocator", "base", "batcher", "kvmirror", "server", "store")
MAX_FILE_LINES = 400
MAX_FUNCTION_LINES = 80

RAW_STRING = re.compile(r'(?:u8|[uUL])?R"([^()\\ ]{0,16})\(')
CONTROL = re.compile(r"\b(?:if|for|while|switch|catch|return)\s*\(")
SIGNATURE_END = re.compile(
    r"\)\s*(?:const|noexcept|override|final|mutable|&&|&|\s)*"
    r"(?:->\s*[\w:<>,\s*&]+)?$")
# A constructor's head: `) : member(...)` or `) : member{...}`, ending with
# the last initializer; and a brace initializer's own `{` inside it.
INITIALIZERS = re.compile(r"\)\s*(?:noexcept\s*)?:\s*[\w:]+\s*[({].*[)}]$", re.S)
BRACE_INITIALIZER = re.compile(
    r"\)\s*(?:noexcept\s*)?:\s*(?:[\w:]+\s*[({].*[)}]\s*,\s*)?[\w:]+$", re.S)
NOT_A_FUNCTION = re.compile(r"(?:^|[\s;}])(?:namespace|class|struct|enum|union)\b[^()]*$")


def blank(text):
    """text with comments, literals and preprocessor lines made spaces
    (newlines kept, so line numbers hold)."""
    out, i, n = [], 0, len(text)

    def skip_to(j):
        out.append(re.sub(r"[^\n]", " ", text[i:j]))
        return j

    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            i = skip_to(n if j < 0 else j)
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            i = skip_to(n if j < 0 else j + 2)
        elif (m := RAW_STRING.match(text, i)) and not (i > 0 and (text[i - 1].isalnum()
                                                                  or text[i - 1] == "_")):
            end = ")" + m.group(1) + '"'
            j = text.find(end, m.end())
            i = skip_to(n if j < 0 else j + len(end))
        elif c == '"' or (c == "'" and not (i > 0 and text[i - 1].isalnum())):
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            i = skip_to(min(j + 1, n))
        elif c == "#" and text[text.rfind("\n", 0, i) + 1:i].strip() == "":
            j = i
            while True:
                k = text.find("\n", j)
                if k < 0 or text[k - 1] != "\\":
                    break
                j = k + 1
            i = skip_to(n if k < 0 else k)
        else:
            out.append(c)
            i += 1
    return "".join(out)


def long_functions(text, limit):
    """[(first line, lines, head)] of the functions of `text` over `limit` lines."""
    code = blank(text)
    found, stack, head_start = [], [], 0
    for i, c in enumerate(code):
        if c == "{":
            head = code[head_start:i].strip()
            inside = any(kind != "scope" for kind, _ in stack)
            if inside:
                kind = "block"
            elif BRACE_INITIALIZER.search(head):
                stack.append(("initializer", 0))
                continue
            elif ((SIGNATURE_END.search(head) or INITIALIZERS.search(head))
                  and not CONTROL.search(head.splitlines()[-1] if head else "")
                  and not NOT_A_FUNCTION.search(head)):
                kind = "function"
            else:
                kind = "scope"
            lead = len(code[head_start:i]) - len(code[head_start:i].lstrip())
            stack.append((kind, code.count("\n", 0, head_start + lead) + 1))
            head_start = i + 1
        elif c == "}":
            kind, first = stack.pop() if stack else ("scope", 0)
            if kind == "initializer":
                continue  # the constructor's head goes on
            last = code.count("\n", 0, i) + 1
            if kind == "function" and last - first + 1 > limit:
                head = " ".join(text.splitlines()[first - 1].split())
                found.append((first, last - first + 1, head))
            head_start = i + 1
        elif c == ";" and all(kind == "scope" for kind, _ in stack):
            head_start = i + 1
    return found


def product_files(root):
    for top in PRODUCT_DIRS:
        for dirpath, _, files in os.walk(os.path.join(root, top)):
            for name in sorted(files):
                if name.endswith((".cc", ".h")):
                    yield os.path.relpath(os.path.join(dirpath, name), root)


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(here)
    problems, longest_file, longest_function = [], (0, ""), (0, "")
    for rel in sorted(product_files(root)):
        with open(os.path.join(root, rel), encoding="utf-8") as f:
            text = f.read()
        lines = text.count("\n") + (0 if text.endswith("\n") or not text else 1)
        longest_file = max(longest_file, (lines, rel))
        if lines > MAX_FILE_LINES:
            problems.append("%s: %d lines (at most %d: split it by topic)"
                            % (rel, lines, MAX_FILE_LINES))
        for first, length, head in long_functions(text, 0):
            longest_function = max(longest_function, (length, "%s:%d %s" % (rel, first, head)))
            if length > MAX_FUNCTION_LINES:
                problems.append("%s:%d: a function of %d lines (at most %d): %s"
                                % (rel, first, length, MAX_FUNCTION_LINES, head))
    print("longest file: %d lines, %s" % longest_file)
    print("longest function: %d lines, %s" % longest_function)
    for p in problems:
        print("FAIL: " + p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
