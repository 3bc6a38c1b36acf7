#!/usr/bin/env bash
# Lints docs/openapi.json with Redocly's recommended rules (tools/openapi:
# @redocly/cli, pinned; scripts/setup.sh installs it). Fails on any error or
# warning, and when the linter is missing: never a silent skip.
#
#   scripts/openapi_lint.sh        (ctest runs it as `openapi/lint`)
set -euo pipefail
cd "$(dirname "$0")/.."
lint=tools/openapi/node_modules/.bin/redocly
[ -x "$lint" ] || { echo "openapi_lint: $lint missing (scripts/setup.sh runs npm ci in tools/openapi)" >&2; exit 1; }
set +e
out=$("$lint" lint --config tools/openapi/redocly.yaml docs/openapi.json 2>&1)
rc=$?
set -e
echo "$out"
if [ "$rc" -ne 0 ] || grep -qiE "[0-9]+ (warning|error)s?\b" <<<"$out"; then
  echo "openapi_lint: FAILED (exit $rc)" >&2
  exit 1
fi
echo "openapi_lint: docs/openapi.json is valid, no warning"
