#!/usr/bin/env bash
# Installs what edgealloc needs from Debian 12 (only what is missing), then
# configures and builds into build/. Safe to run again: it does only what is
# left to do. Needs root (or sudo) only when a package is missing.
#
#   scripts/setup.sh                          install, then build into build/
#   scripts/setup.sh --deps-only [PACKAGE...] install only, with PACKAGEs too
#                                             (bench/run adds gnuplot-nox)
set -euo pipefail
cd "$(dirname "$0")/.."

deps_only=0
extra=()
if [[ ${1:-} == --deps-only ]]; then
  deps_only=1
  shift
  extra=("$@")
elif (($#)); then
  echo "setup: unknown argument $1 (scripts/setup.sh [--deps-only [PACKAGE...]])" >&2
  exit 2
fi

packages=(g++ cmake make python3 libsqlite3-dev libboost1.81-dev libboost-url1.81-dev nlohmann-json3-dev
          libconcurrentqueue-dev catch2 libcli11-dev libmimalloc-dev)
# The dashboard's browser test and promtool's check of /metrics need these.
packages+=(chromium prometheus)
# The model-checked HTTP test (tests/server/api_model_test.py) needs Hypothesis.
packages+=(python3-hypothesis)
# The PostgreSQL tests (ctest -L postgres) start real PostgreSQL 15 servers
# (tests/support/pg_server.h) and talk to them through libpq.
packages+=(postgresql libpq-dev)
# sd_notify for systemd's Type=notify, and systemd-analyze to verify the unit
# (packaging/edgealloc.service, ctest packaging/systemd_unit).
packages+=(libsystemd-dev systemd)
# The log (server/http/log.cc) is spdlog's; the --config file is read by toml++.
packages+=(libspdlog-dev libtomlplusplus-dev)
# List cursors are signed with HMAC-SHA256 from OpenSSL's libcrypto; webhooks
# go over OpenSSL's TLS to receivers the system's CA store vouches for, and
# the webhooks test makes its own CA with the openssl command.
packages+=(libssl-dev ca-certificates openssl)
# The OpenAPI document's response check (tests/server/openapi_validator.py).
packages+=(python3-jsonschema)
# The nemesis test (tests/fault/nemesis_test.py) restarts nodes with a skewed clock.
packages+=(faketime)
# The Python client's test (tests/clients/python_client_test.py) installs
# clients/python into a venv with pip, offline: the venv module, pip, and the
# setuptools and wheel that build it, from Debian.
packages+=(python3-venv python3-pip python3-setuptools python3-wheel)
packages+=("${extra[@]}")

# apt waits for another apt instead of failing at once: a fresh VM's own
# updates hold the dpkg lock for minutes. `install` waits by DPkg::Lock::Timeout;
# `update` (its lists lock) is tried again.
apt_wait=(-o DPkg::Lock::Timeout=600)
apt_update() {
  local sudo=$1 tries=0
  until $sudo apt-get "${apt_wait[@]}" update -qq; do
    tries=$((tries + 1))
    if ((tries >= 60)); then
      echo "setup: apt-get update kept failing for 10 minutes (another apt holding its lock?)" >&2
      return 1
    fi
    echo "setup: apt-get update failed (another apt holding its lock?); trying again in 10 s" >&2
    sleep 10
  done
}

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${#missing[@]} Debian packages: ${missing[*]}" >&2
  echo "setup: (5 to 10 minutes on a fresh machine, most of it chromium and postgresql)" >&2
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  apt_update "$sudo"
  DEBIAN_FRONTEND=noninteractive $sudo apt-get "${apt_wait[@]}" install -y -qq --no-install-recommends \
    "${missing[@]}" >/dev/null
fi

# The OpenAPI linter (ctest openapi/lint): @redocly/cli, pinned in
# tools/openapi/package-lock.json, from the npm registry. It needs Node.js 20.19
# or later (the machines this runs on have it; Debian 12's own nodejs is 18).
if ! command -v npm >/dev/null; then
  echo "setup: installing nodejs npm (for the OpenAPI linter; a minute or two)" >&2
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  DEBIAN_FRONTEND=noninteractive $sudo apt-get "${apt_wait[@]}" install -y -qq --no-install-recommends \
    nodejs npm >/dev/null
fi
lint=tools/openapi/node_modules/.bin/redocly
if [ ! -x "$lint" ] || [ tools/openapi/package-lock.json -nt "$lint" ]; then
  echo "setup: installing the pinned OpenAPI linter into tools/openapi/node_modules (npm ci)" >&2
  (cd tools/openapi && npm ci --no-audit --no-fund --loglevel=error >/dev/null)
fi

if ((deps_only)); then exit 0; fi

build_type=${BUILD_TYPE:-RelWithDebInfo}
# One build into build/ at a time: a second setup.sh (another shell, the
# README's other command) waits for the first instead of colliding with it.
mkdir -p build
exec 9>build/.setup.lock
if ! flock -n 9; then
  echo "setup: another scripts/setup.sh is building into build/; waiting for it" >&2
  flock 9
fi
[ -f build/CMakeCache.txt ] ||
  echo "setup: building into build/ ($build_type; about 10 minutes on 2 cores the first time)" >&2
cmake -S . -B build -DCMAKE_BUILD_TYPE="$build_type" >/dev/null
cmake --build build -j"$(nproc)"
