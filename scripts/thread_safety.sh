#!/usr/bin/env bash
# Clang's thread-safety analysis over every product source: each field shared
# between threads says its mutex (GUARDED_BY, base/thread_annotations.h), and
# every access is checked. gcc ignores the annotations, so this is the check.
# Syntax only (no code is generated), warnings as errors.
#
#   scripts/thread_safety.sh        (ctest runs it as `thread_safety`)
set -euo pipefail
cd "$(dirname "$0")/.."
CXX=${CLANGXX:-clang++-14}
command -v "$CXX" >/dev/null || { echo "thread_safety: $CXX not found (scripts/setup.sh installs clang-14)" >&2; exit 1; }
failed=0
checked=0
for f in base/*.h base/*.cc store/*.cc store/*/*.cc allocator/*.cc batcher/*.cc kvmirror/*.cc server/*.cc server/*/*.cc; do
  [ -e "$f" ] || continue
  checked=$((checked + 1))
  lang=()
  [[ $f == *.h ]] && lang=(-x c++-header)
  if ! "$CXX" -std=c++20 -fsyntax-only -Wthread-safety -Wthread-safety-beta -Werror \
       -Wno-unknown-warning-option -I. -I/usr/include/postgresql "${lang[@]}" "$f"; then
    failed=$((failed + 1))
  fi
done
echo "thread_safety: $((checked - failed)) passed, $failed failed"
[ "$failed" -eq 0 ]
