#!/usr/bin/env python3
"""Browser check of GET /dashboard against GET /v1/capacity (issue #4).

Starts `edgealloc serve --demo` on a free loopback port with a fresh database,
renders /dashboard in headless Chromium (Debian's `chromium`), reads every
count the page shows from its data-region / data-pool / data-status elements,
and checks they equal /v1/capacity. The demo fleet is live, so a mismatch is
retried a few times before it counts. Then it takes a 1280x800 screenshot.

    tests/kvmirror/dashboard_check.py --bin build/edgealloc [--screenshot out.png]

Prints one line a check, then "N passed, N failed"; exits 1 on any failure.
Standard library only.
"""

import argparse
import html.parser
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

STATUSES = ("available", "picked", "draining", "dead")
HEALTH_TIMEOUT_S = 30
CHROMIUM_TIMEOUT_S = 90
MATCH_ATTEMPTS = 4


class Checks:
    def __init__(self):
        self.passed = 0
        self.failed = 0

    def check(self, ok, what, detail=""):
        if ok:
            self.passed += 1
            print(f"ok    {what}")
        else:
            self.failed += 1
            print(f"FAIL  {what}" + (f": {detail}" if detail else ""))
        return ok


class CountsParser(html.parser.HTMLParser):
    """Collects the text of elements carrying data-region, data-pool and data-status."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.counts = {}       # (region, pool, status) -> text
        self.totals = {}       # status -> text, from data-total
        self.duplicates = []
        self._key = None
        self._total = None
        self._text = []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if "data-region" in a and "data-pool" in a and "data-status" in a:
            self._key = (a["data-region"], a["data-pool"], a["data-status"])
            self._text = []
        elif "data-total" in a:
            self._total = a["data-total"]
            self._text = []

    def handle_data(self, data):
        if self._key is not None or self._total is not None:
            self._text.append(data)

    def handle_endtag(self, tag):
        if self._key is not None:
            if self._key in self.counts:
                self.duplicates.append(self._key)
            self.counts[self._key] = "".join(self._text).strip()
            self._key = None
        elif self._total is not None:
            self.totals[self._total] = "".join(self._text).strip()
            self._total = None


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def http_get(url, timeout=5):
    """(status, content-type, body bytes); status 0 if the server did not answer."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as r:
            return r.status, r.headers.get("Content-Type", ""), r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.headers.get("Content-Type", ""), e.read()
    except (urllib.error.URLError, OSError):
        return 0, "", b""


def capacity_counts(body):
    """(region, pool, status) -> int from a /v1/capacity body."""
    out = {}
    for region, r in body.get("regions", {}).items():
        for pool, c in r.get("pools", {}).items():
            for s in STATUSES:
                out[(region, pool, s)] = c.get(s)
    return out


def chromium_base(chromium, profile):
    return [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
            "--disable-background-networking", "--disable-component-update", "--disable-sync",
            f"--user-data-dir={profile}"]


def dump_dom(chromium, profile, url):
    cmd = chromium_base(chromium, profile) + ["--virtual-time-budget=5000", "--dump-dom", url]
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       timeout=CHROMIUM_TIMEOUT_S)
    return r.returncode, r.stdout.decode("utf-8", "replace"), r.stderr.decode("utf-8", "replace")


def describe_diff(dom, cap):
    lines = []
    for k in sorted(set(dom) | set(cap)):
        if dom.get(k) != cap.get(k):
            lines.append(f"{'/'.join(k)}: page {dom.get(k)!r}, capacity {cap.get(k)!r}")
    return "; ".join(lines[:8]) + (" ..." if len(lines) > 8 else "")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bin", required=True, help="the edgealloc binary")
    ap.add_argument("--chromium", default="chromium")
    ap.add_argument("--screenshot", default="dashboard.png", help="where the PNG goes")
    ap.add_argument("--keep", action="store_true", help="keep the temp folder")
    args = ap.parse_args()

    checks = Checks()
    chromium = shutil.which(args.chromium)
    if chromium is None:
        print(f"FAIL  {args.chromium} not found (apt-get install -y chromium)")
        print("0 passed, 1 failed")
        return 1

    tmp = tempfile.mkdtemp(prefix="edgealloc-dashboard-")
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    log_path = os.path.join(tmp, "server.log")
    log = open(log_path, "wb")
    server = subprocess.Popen(
        [os.path.abspath(args.bin), "serve", "--demo", "--mirror-refresh-ms", "200",
         "--db", os.path.join(tmp, "pool.db"), "--listen", f"127.0.0.1:{port}"],
        stdout=log, stderr=subprocess.STDOUT, cwd=tmp)
    try:
        deadline = time.monotonic() + HEALTH_TIMEOUT_S
        healthy = False
        while time.monotonic() < deadline and server.poll() is None:
            if http_get(base + "/healthz", timeout=1)[0] == 200:
                healthy = True
                break
            time.sleep(0.1)
        if not checks.check(healthy, "server answers /healthz",
                            f"exit code {server.poll()}, log in {log_path}"):
            return finish(checks)

        status, ctype, page = http_get(base + "/dashboard")
        checks.check(status == 200, "GET /dashboard is 200", f"got {status}")
        checks.check(ctype.lower().startswith("text/html"), "/dashboard is text/html", ctype)
        checks.check(b"data-status" in page and b"<script" in page,
                     "/dashboard is the dashboard page")
        status, ctype, _ = http_get(base + "/v1/capacity")
        checks.check(status == 200 and "json" in ctype.lower(),
                     "GET /v1/capacity is 200 JSON", f"{status} {ctype}")

        # The fleet is live: take capacity before and after the render, and
        # accept a page that equals either; retry a few times on a mismatch.
        matched, detail, seen_any = False, "", False
        dom_totals, dom = {}, {}
        for attempt in range(MATCH_ATTEMPTS):
            s1, _, before = http_get(base + "/v1/capacity")
            rc, out, err = dump_dom(chromium, os.path.join(tmp, "profile"), base + "/dashboard")
            s2, _, after = http_get(base + "/v1/capacity")
            if rc != 0 or s1 != 200 or s2 != 200:
                detail = f"chromium rc {rc}, capacity {s1}/{s2}: {err.strip()[-300:]}"
                continue
            p = CountsParser()
            p.feed(out)
            dom_text = p.counts
            if p.duplicates:
                detail = f"duplicated count elements: {p.duplicates[:4]}"
                continue
            try:
                dom = {k: int(v) for k, v in dom_text.items()}
            except ValueError:
                detail = f"a count is not a plain integer: {dom_text}"
                continue
            dom_totals = p.totals
            caps = [capacity_counts(json.loads(before)), capacity_counts(json.loads(after))]
            seen_any = seen_any or bool(caps[1])
            if dom in caps:
                matched = True
                break
            detail = describe_diff(dom, caps[1])
            time.sleep(0.5)
        checks.check(seen_any, "/v1/capacity lists the demo fleet")
        checks.check(matched, "every count on the page equals /v1/capacity", detail)
        if matched:
            for s in STATUSES:
                want = sum(v for (r, p, st), v in dom.items() if st == s)
                got = dom_totals.get(s)
                checks.check(got == str(want), f"fleet total '{s}' adds up", f"{got} != {want}")

        shot = os.path.abspath(args.screenshot)
        if os.path.exists(shot):
            os.remove(shot)
        cmd = chromium_base(chromium, os.path.join(tmp, "profile")) + [
            "--virtual-time-budget=5000", "--hide-scrollbars", f"--screenshot={shot}",
            "--window-size=1280,800", base + "/dashboard"]
        r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           timeout=CHROMIUM_TIMEOUT_S)
        png = b""
        if os.path.exists(shot):
            with open(shot, "rb") as f:
                png = f.read()
        checks.check(r.returncode == 0 and png.startswith(b"\x89PNG") and len(png) > 10_000,
                     f"screenshot at 1280x800 in {shot}",
                     f"rc {r.returncode}, {len(png)} bytes")
        checks.check(server.poll() is None, "server still running after the checks",
                     f"exit code {server.poll()}")
    finally:
        stop(server)
        log.close()
        if checks.failed:
            try:
                with open(log_path, "rb") as f:
                    tail = f.read()[-2000:].decode("utf-8", "replace")
                print("--- server log (tail) ---\n" + tail)
            except OSError:
                pass
        if args.keep:
            print(f"kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    return finish(checks)


def stop(server):
    if server.poll() is not None:
        return
    server.send_signal(signal.SIGTERM)
    try:
        server.wait(timeout=10)
    except subprocess.TimeoutExpired:
        server.kill()
        server.wait()


def finish(checks):
    print(f"{checks.passed} passed, {checks.failed} failed")
    return 0 if checks.failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
