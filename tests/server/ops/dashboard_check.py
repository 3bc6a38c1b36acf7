#!/usr/bin/env python3
"""The dashboard in headless Chromium (issues #4 and #15).

Three scenes, each a page rendered by Debian's `chromium`:

1. A 300-pool fleet on a live `edgealloc serve` (60 regions x 5 pools, 2,400
   containers, utilisation from 0 to 100%, some dead), built in waves so the
   history has a shape: every count on the page equals /v1/capacity; the
   grid has one cell a pool, coloured by its utilisation; the table is in the
   order of its sort (pools at risk first by default), and the filter and
   sorts named in the address (#q=..&sort=..&dir=..&risk=1) show exactly the
   pools they say, in their order; every pool has a utilisation line from
   /v1/capacity/history; no request the page makes leaves its own origin
   (Chromium's net log), and the page names no other.
2. The same fleet under load (claims and releases on one pool, claims
   refused on a full one): those pools' claim and no_capacity rates, and the
   fleet's, are above zero. Then a screenshot (docs/dashboard.png is one).
3. The page against a scripted server of the test's own: counters that grow
   by set amounts a poll give exactly those rates (Chromium's virtual time
   makes the poll period exact); a pool with containers available whose
   claims are refused is 'refusing'; escaped label values are read right.

    tests/server/ops/dashboard_check.py --bin build/edgealloc [--screenshot out.png] [--window 1280,1300] [--keep]

Prints one line a check, then "N passed, N failed"; exits 1 on any failure.
Standard library only.
"""

import argparse
import html.parser
import http.client
import http.server
import itertools
import json
import math
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request

STATUSES = ("available", "picked", "draining", "dead")
AREAS = ("weur", "eeur", "neur", "seur", "wnam", "enam", "cnam", "sam", "afr", "mea", "apac", "oce")
REGIONS = tuple(f"{a}-{i}" for a in AREAS for i in range(1, 6))
POOLS = ("chrome", "firefox", "webkit", "gpu", "sandbox")
HISTORY_INTERVAL_MS = 250
RISK_UTILISATION = 0.9          # the page's RISK_UTILISATION
RISK_RANK = {"out": 0, "refusing": 1, "high": 2, "ok": 3}
HEALTH_TIMEOUT_S = 30
CHROMIUM_TIMEOUT_S = 120
# The only absolute URL the page may hold: SVG's namespace name, never fetched.
ALLOWED_URLS = {"http://www.w3.org/2000/svg"}


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


# ---- a small DOM of Chromium's --dump-dom ----

class Node:
    def __init__(self, tag, attrs, parent):
        self.tag, self.attrs, self.parent, self.children = tag, dict(attrs), parent, []

    def text(self):
        return "".join(c if isinstance(c, str) else c.text() for c in self.children)

    def walk(self):
        for c in self.children:
            if isinstance(c, Node):
                yield c
                yield from c.walk()

    def find(self, pred):
        return [n for n in self.walk() if pred(n)]


class DomParser(html.parser.HTMLParser):
    VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source",
            "track", "wbr"}

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.root = Node("#root", {}, None)
        self.cur = self.root

    def handle_starttag(self, tag, attrs):
        n = Node(tag, attrs, self.cur)
        self.cur.children.append(n)
        if tag not in self.VOID:
            self.cur = n

    def handle_startendtag(self, tag, attrs):
        self.cur.children.append(Node(tag, attrs, self.cur))

    def handle_endtag(self, tag):
        n = self.cur
        while n is not self.root and n.tag != tag:
            n = n.parent
        if n is not self.root:
            self.cur = n.parent

    def handle_data(self, data):
        self.cur.children.append(data)


class Page:
    """What a rendered dashboard shows, read from its data-* attributes."""

    def __init__(self, dom_text):
        p = DomParser()
        p.feed(dom_text)
        root = p.root
        self.counts, self.duplicates = {}, []
        for n in root.find(lambda n: {"data-region", "data-pool", "data-status"} <= n.attrs.keys()):
            k = (n.attrs["data-region"], n.attrs["data-pool"], n.attrs["data-status"])
            if k in self.counts:
                self.duplicates.append(k)
            self.counts[k] = n.text().strip()
        self.totals = {n.attrs["data-total"]: n.text().strip()
                       for n in root.find(lambda n: "data-total" in n.attrs)}
        self.ids = {n.attrs["id"]: n.text().strip() for n in root.find(lambda n: "id" in n.attrs)}
        self.rows = []
        for tr in root.find(lambda n: n.tag == "tr" and "data-key" in n.attrs):
            cols = {c.attrs["data-col"]: c.text().strip()
                    for c in tr.find(lambda n: "data-col" in n.attrs)}
            self.rows.append({"key": tr.attrs["data-key"], "risk": tr.attrs.get("data-risk"),
                              "hidden": "hidden" in tr.attrs,
                              "history": int(tr.attrs.get("data-history-points", "0")), **cols})
        self.deaths = []
        for tr in root.find(lambda n: n.tag == "tr" and "data-death" in n.attrs):
            cols = {c.attrs["data-col"]: c.text().strip()
                    for c in tr.find(lambda n: "data-col" in n.attrs)}
            self.deaths.append({"key": tr.attrs["data-death"], **cols})
        self.cells = [{"key": td.attrs["data-cell"], "class": td.attrs.get("class", "").split(),
                       "util": td.attrs.get("data-util"), "text": td.text().strip()}
                      for td in root.find(lambda n: n.tag == "td" and "data-cell" in n.attrs)]

    def row(self, key):
        return next((r for r in self.rows if r["key"] == key), None)

    def visible(self):
        return [r["key"] for r in self.rows if not r["hidden"]]


# ---- what the page should show, worked out here from /v1/capacity ----

def utilisation(c):
    usable = c["available"] + c["picked"]
    return c["picked"] / usable if usable > 0 else 1.0


def risk_of(c, refused=0.0):
    if c["available"] == 0:
        return "out"
    if refused > 0:
        return "refusing"
    return "high" if utilisation(c) >= RISK_UTILISATION else "ok"


def pools_of(capacity):
    """[(region, pool, counts)] of a /v1/capacity body."""
    return [(r, p, c) for r, reg in capacity["regions"].items() for p, c in reg["pools"].items()]


def expected_order(capacity, sort, descending=False):
    def key(item):
        r, p, c = item
        u = utilisation(c)
        if sort == "risk":
            return (RISK_RANK[risk_of(c)], -u, c["available"])
        if sort == "available":
            return (c["available"], -u)
        if sort == "name":
            return (r, p)
        raise ValueError(sort)
    items = pools_of(capacity)
    # Ties in name order whatever the direction, as the page does.
    items.sort(key=lambda it: (it[0], it[1]))
    items.sort(key=key, reverse=descending)
    return [f"{r}/{p}" for r, p, _ in items]


def capacity_counts(body):
    return {(r, p, s): c[s] for r, p, c in pools_of(body) for s in STATUSES}


def cell_class(c):
    if c["available"] == 0:
        return "out"
    u = utilisation(c)
    return "u3" if u >= 0.9 else "u2" if u >= 0.75 else "u1" if u >= 0.5 else "u0"


# ---- processes and HTTP ----

def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def http_get(url, timeout=5):
    try:
        with urllib.request.urlopen(url, timeout=timeout) as r:
            return r.status, r.headers.get("Content-Type", ""), r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.headers.get("Content-Type", ""), e.read()
    except (urllib.error.URLError, OSError):
        return 0, "", b""


class Api:
    """A keep-alive JSON client of one thread."""

    def __init__(self, port):
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)

    def call(self, method, path, body=None):
        data = None if body is None else json.dumps(body).encode()
        self.conn.request(method, path, body=data, headers={"Content-Type": "application/json"})
        r = self.conn.getresponse()
        raw = r.read()
        return r.status, (json.loads(raw) if raw else None)


def chromium_base(chromium, profile):
    return [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
            "--disable-background-networking", "--disable-component-update", "--disable-sync",
            f"--user-data-dir={profile}"]


def dump_dom(chromium, tmp, url, budget_ms=5000, net_log=None):
    cmd = chromium_base(chromium, os.path.join(tmp, "profile")) + [
        f"--virtual-time-budget={budget_ms}", "--window-size=1280,800", "--dump-dom", url]
    if net_log:
        cmd.insert(-2, f"--log-net-log={net_log}")
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       timeout=CHROMIUM_TIMEOUT_S)
    return r.returncode, r.stdout.decode("utf-8", "replace"), r.stderr.decode("utf-8", "replace")


def page_requests(net_log_path, origin):
    """URLs of the requests the page at `origin` started (the net log's
    URL_REQUEST_START_JOB events it is the initiator of): Chromium's own
    background requests have no such initiator."""
    text = open(net_log_path, encoding="utf-8", errors="replace").read()
    try:
        log = json.loads(text)
    except json.JSONDecodeError:  # a log cut short by the exit lacks its end
        log = json.loads(text.rstrip().rstrip(",") + "]}")
    start_job = log["constants"]["logEventTypes"]["URL_REQUEST_START_JOB"]
    return [e["params"]["url"] for e in log["events"]
            if e.get("type") == start_job and e.get("params", {}).get("initiator") == origin]


def stop(server):
    if server.poll() is not None:
        return
    server.send_signal(signal.SIGTERM)
    try:
        server.wait(timeout=10)
    except subprocess.TimeoutExpired:
        server.kill()
        server.wait()


# ---- scene 1: the fleet ----

def fleet_plan():
    """(region, pool) -> (size, picked, dead): sizes 4..12, utilisation spread
    over 0..100% by a stride through the pools, one dead container in some."""
    plan = {}
    for j, (r, p) in enumerate(itertools.product(REGIONS, POOLS)):
        size = 4 + (j * 7) % 9
        dead = 1 if j % 17 == 5 else 0
        picked = min(size - dead, round(size * ((j * 37) % 101) / 100))
        plan[(r, p)] = (size, picked, dead)
    return plan


def build_fleet(api, plan):
    containers = [{"id": f"{r}.{p}.{i}", "region": r, "pool": p, "latency_ms": i}
                  for (r, p), (size, _, _) in plan.items() for i in range(size)]
    status, body = api.call("POST", "/v1/containers", {"containers": containers})
    if status != 200:
        raise RuntimeError(f"registration: {status} {body}")
    dead = [{"container_id": f"{r}.{p}.{size - 1}", "state": "dead"}
            for (r, p), (size, _, d) in plan.items() if d]
    status, body = api.call("POST", "/v1/heartbeats", {"heartbeats": dead})
    if status != 202:
        raise RuntimeError(f"heartbeats: {status} {body}")
    # Claims in three waves a few history samples apart, so that the lines rise.
    for wave in range(3):
        for (r, p), (_, picked, _) in plan.items():
            for _ in range(picked * (wave + 1) // 3 - picked * wave // 3):
                status, body = api.call("POST", "/v1/sessions",
                                        {"region": r, "pool": p, "lease_ms": 3600000})
                if status != 201:
                    raise RuntimeError(f"claim in {r}/{p}: {status} {body}")
        time.sleep(3 * HISTORY_INTERVAL_MS / 1000)


def wait_for_capacity(base, plan, timeout_s=30):
    want = {}
    for (r, p), (size, picked, dead) in plan.items():
        want.update({(r, p, "available"): size - picked - dead, (r, p, "picked"): picked,
                     (r, p, "draining"): 0, (r, p, "dead"): dead})
    deadline = time.monotonic() + timeout_s
    body = None
    while time.monotonic() < deadline:
        status, _, raw = http_get(base + "/v1/capacity")
        if status == 200:
            body = json.loads(raw)
            if capacity_counts(body) == want:
                return body
        time.sleep(0.1)
    return None


def check_view(checks, page, capacity, label, visible_keys, order_keys):
    vis = page.visible()
    checks.check(vis == order_keys, f"{label}: the rows shown are {len(order_keys)} pools in the sort's order",
                 f"first shown {vis[:5]}, wanted {order_keys[:5]} ({len(vis)} vs {len(order_keys)})")
    cells = {c["key"] for c in page.cells if "dim" not in c["class"]}
    checks.check(cells == set(visible_keys), f"{label}: the grid lights exactly those pools",
                 f"{len(cells)} lit, {len(visible_keys)} wanted")


def scene_fleet(checks, args, chromium, tmp, base, port):
    plan = fleet_plan()
    api = Api(port)
    build_fleet(api, plan)
    capacity = wait_for_capacity(base, plan)
    if not checks.check(capacity is not None, "the mirror shows the 300-pool fleet as built"):
        return None, None
    # Two more samples of the final state, for the history's last points.
    time.sleep(3 * HISTORY_INTERVAL_MS / 1000)
    caps = capacity_counts(capacity)
    pools = pools_of(capacity)
    checks.check(len(pools) == 300 and sum(c["picked"] for _, _, c in pools) > 0,
                 "the fleet has 300 pools, some picked", f"{len(pools)} pools")
    url = base + "/dashboard"

    # The default view, with the net log.
    net_log = os.path.join(tmp, "net.json")
    rc, dom, err = dump_dom(chromium, tmp, url, net_log=net_log)
    if not checks.check(rc == 0, "chromium renders /dashboard", err.strip()[-300:]):
        return None, None
    page = Page(dom)
    checks.check(not page.duplicates, "one element a region, pool and state", str(page.duplicates[:3]))
    try:
        shown = {k: int(v) for k, v in page.counts.items()}
    except ValueError:
        shown = {}
    checks.check(shown == caps, "every count on the page equals /v1/capacity (1,200 of them)",
                 f"{sum(1 for k in caps if shown.get(k) != caps[k])} differ")
    for s in STATUSES:
        want = sum(v for (_, _, st), v in caps.items() if st == s)
        checks.check(page.totals.get(s) == str(want), f"fleet total '{s}' is {want}", page.totals.get(s))
    # Draining split: the operator's drains apart from the containers' own.
    drained = sum(c.get("drained", 0) for _, _, c in pools)
    draining = sum(c["draining"] for _, _, c in pools)
    checks.check(page.totals.get("drained") == str(drained) and
                 page.totals.get("self-draining") == str(draining - drained),
                 f"fleet totals 'drained' {drained} and 'self-draining' {draining - drained}",
                 f"{page.totals.get('drained')}, {page.totals.get('self-draining')}")
    want_risk = {f"{r}/{p}": risk_of(c) for r, p, c in pools}
    got_risk = {row["key"]: row["risk"] for row in page.rows}
    checks.check(got_risk == want_risk, "each pool's state (full, almost full, ok) is its own",
                 str([(k, got_risk.get(k), v) for k, v in want_risk.items() if got_risk.get(k) != v][:4]))
    at_risk = sum(1 for v in want_risk.values() if v != "ok")
    checks.check(page.ids.get("risk-count") == str(at_risk) and at_risk > 0,
                 f"the at-risk tile counts {at_risk} pools", page.ids.get("risk-count"))
    order = expected_order(capacity, "risk")
    check_view(checks, page, capacity, "default view (at risk first)", order, order)
    checks.check(page.rows and page.rows[0]["risk"] == "out", "the first row is a full pool",
                 page.rows[0]["risk"] if page.rows else "no rows")
    by_key = {f"{r}/{p}": c for r, p, c in pools}
    bad_cells = [c for c in page.cells
                 if cell_class(by_key[c["key"]]) not in c["class"]
                 or c["util"] != str(math.floor(utilisation(by_key[c["key"]]) * 100 + 0.5))
                 or c["text"] != str(by_key[c["key"]]["available"])]
    checks.check(len(page.cells) == 300 and not bad_cells,
                 "the grid has one cell a pool, coloured by utilisation, saying what is available",
                 f"{len(page.cells)} cells; {bad_cells[:2]}")
    few = [r["key"] for r in page.rows if r["history"] < 2]
    checks.check(not few, "every pool has a utilisation line of at least 2 samples",
                 f"{len(few)} without: {few[:3]}")
    waves = [r for r in page.rows if r["history"] >= 5]
    checks.check(len(waves) == 300, "the lines span the waves of claims (5 samples or more)",
                 f"{len(waves)} of 300")
    urls = page_requests(net_log, base)
    paths = sorted({u[len(base):].split("?")[0] for u in urls})
    foreign = [u for u in urls if not u.startswith(base + "/")]
    checks.check(urls and not foreign, "every request the page made went to its own server",
                 f"foreign: {foreign[:3]}")
    checks.check({"/v1/capacity", "/metrics", "/v1/capacity/history", "/v1/capacity/deaths"} <= set(paths),
                 "it read /v1/capacity, /metrics, /v1/capacity/history and /v1/capacity/deaths",
                 str(paths))
    _, _, html_bytes = http_get(url)
    named = set(re.findall(r"https?://[^\s\"'<>)]+", html_bytes.decode("utf-8", "replace")))
    checks.check(named <= ALLOWED_URLS, "the page names no other server (self-contained)",
                 str(sorted(named - ALLOWED_URLS)))

    # Views named in the address.
    views = [
        ("#sort=available", "least available", lambda k: True,
         expected_order(capacity, "available")),
        ("#sort=name&dir=desc", "names, descending", lambda k: True,
         expected_order(capacity, "name", descending=True)),
        ("#q=weur-1", "filter 'weur-1'", lambda k: k.startswith("weur-1/"), None),
        ("#q=CHROME&risk=1", "filter 'CHROME', only at risk",
         lambda k: "chrome" in k and want_risk[k] != "ok", None),
        ("#q=apac%20gpu&sort=available", "filter 'apac gpu', least available",
         lambda k: k.startswith("apac") and "gpu" in k, None),
    ]
    for frag, label, keep, order in views:
        rc, dom, err = dump_dom(chromium, tmp, url + frag, budget_ms=3000)
        if not checks.check(rc == 0, f"{label}: chromium renders {frag}", err.strip()[-200:]):
            continue
        page = Page(dom)
        if order is None:
            sort = "available" if "sort=available" in frag else "risk"
            order = [k for k in expected_order(capacity, sort) if keep(k)]
        else:
            order = [k for k in order if keep(k)]
        check_view(checks, page, capacity, label, order, order)
        checks.check(len(page.rows) == 300, f"{label}: the rows filtered out are hidden, not gone",
                     f"{len(page.rows)} rows")
    checks.check(len([k for k in want_risk if k.startswith("weur-1/")]) == 5,
                 "the filter 'weur-1' is meant to keep 5 pools")

    return capacity, api


# ---- scene 2: the fleet under load ----

def screenshot(checks, args, chromium, tmp, url):
    shot = os.path.abspath(args.screenshot)
    if os.path.exists(shot):
        os.remove(shot)
    cmd = chromium_base(chromium, os.path.join(tmp, "profile")) + [
        "--virtual-time-budget=6000", "--hide-scrollbars", f"--screenshot={shot}",
        f"--window-size={args.window}", url]
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=CHROMIUM_TIMEOUT_S)
    png = open(shot, "rb").read() if os.path.exists(shot) else b""
    checks.check(r.returncode == 0 and png.startswith(b"\x89PNG") and len(png) > 10_000,
                 f"screenshot of the 300-pool fleet under load at {args.window} in {shot}",
                 f"rc {r.returncode}, {len(png)} bytes")


def scene_load(checks, args, chromium, tmp, base, port, capacity):
    pools = pools_of(capacity)
    churn = max(pools, key=lambda it: (it[2]["available"], it[0], it[1]))
    full = next(it for it in sorted(pools) if it[2]["available"] == 0)
    churn_key, full_key = f"{churn[0]}/{churn[1]}", f"{full[0]}/{full[1]}"
    stopping = threading.Event()
    errors = []

    def claim_and_release():
        api = Api(port)
        while not stopping.is_set():
            status, s = api.call("POST", "/v1/sessions", {"region": churn[0], "pool": churn[1]})
            if status != 201:
                errors.append(f"churn claim {status}")
                return
            status, _ = api.call("DELETE", f"/v1/sessions/{s['session_id']}?token={s['token']}")
            if status != 204:
                errors.append(f"churn release {status}")
                return

    def refused_claims():
        api = Api(port)
        while not stopping.is_set():
            status, body = api.call("POST", "/v1/sessions", {"region": full[0], "pool": full[1]})
            if status != 503:
                errors.append(f"claim on the full pool: {status} {body}")
                return
            time.sleep(0.01)

    threads = [threading.Thread(target=f, daemon=True) for f in (claim_and_release, refused_claims)]
    for t in threads:
        t.start()
    try:
        time.sleep(0.5)
        rc, dom, err = dump_dom(chromium, tmp, base + "/dashboard", budget_ms=6000)
        screenshot(checks, args, chromium, tmp, base + "/dashboard")
    finally:
        stopping.set()
        for t in threads:
            t.join(timeout=10)
    checks.check(not errors, "the load ran as planned", "; ".join(errors[:3]))
    if not checks.check(rc == 0, "under load: chromium renders /dashboard", err.strip()[-200:]):
        return
    page = Page(dom)

    def rate(text):
        try:
            return float(text)
        except (TypeError, ValueError):
            return None

    row = page.row(churn_key) or {}
    checks.check((rate(row.get("claims")) or 0) > 0, f"under load: {churn_key} shows its claims a second",
                 str(row.get("claims")))
    row = page.row(full_key) or {}
    checks.check((rate(row.get("refused")) or 0) > 0 and row.get("risk") == "out",
                 f"under load: the full pool {full_key} shows its refused claims a second",
                 f"{row.get('refused')} {row.get('risk')}")
    checks.check((rate(page.ids.get("rate-now")) or 0) > 0, "under load: the fleet's claim rate is above 0",
                 str(page.ids.get("rate-now")))
    checks.check((rate(page.ids.get("refused-now")) or 0) > 0,
                 "under load: the fleet's refused rate is above 0", str(page.ids.get("refused-now")))
    quiet = [r["key"] for r in page.rows if r["key"] not in (churn_key, full_key)
             and rate(r.get("claims")) not in (0.0, None)]
    checks.check(not quiet, "under load: the pools without claims show none", str(quiet[:3]))


# ---- scene 3: a scripted server ----

WEIRD_POOL = 'we"ird\\pool'


def scripted_server(page_html):
    """A server of the page and of scripted data: each /metrics answer has the
    counters one step further (claims ok +3 and no_capacity +2 in r1/a, +4 in
    the weird pool, ok +3 in r1/b, a step)."""
    state = {"metrics": 0, "paths": []}

    class Handler(http.server.BaseHTTPRequestHandler):
        def log_message(self, *a):
            pass

        def reply(self, ctype, body):
            data = body.encode()
            self.send_response(200)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self):
            path = self.path.split("?")[0]
            state["paths"].append(path)
            now = int(time.time() * 1000)
            counts = lambda a, p, dead=0: {"available": a, "picked": p, "draining": 0, "dead": dead}
            if path == "/dashboard":
                self.reply("text/html; charset=utf-8", page_html)
            elif path == "/v1/capacity":
                self.reply("application/json", json.dumps({"as_of_ms": now, "age_ms": 5, "regions": {
                    "r1": {"pools": {"a": counts(3, 1), "b": counts(5, 0), WEIRD_POOL: counts(0, 2, 1)}}}}))
            elif path == "/metrics":
                k = state["metrics"] = state["metrics"] + 1
                esc = WEIRD_POOL.replace("\\", "\\\\").replace('"', '\\"')
                self.reply("text/plain; version=0.0.4", "\n".join([
                    "# TYPE edgealloc_claims_total counter",
                    f'edgealloc_claims_total{{result="ok"}} {3 * k}',
                    f'edgealloc_claims_total{{result="no_capacity"}} {6 * k}',
                    f'edgealloc_claims_total{{result="quota"}} {100 * k}',
                    "# TYPE edgealloc_pool_claims_total counter",
                    f'edgealloc_pool_claims_total{{region="r1",pool="a",result="ok"}} 0',
                    f'edgealloc_pool_claims_total{{region="r1",pool="a",result="no_capacity"}} {2 * k}',
                    f'edgealloc_pool_claims_total{{region="r1",pool="b",result="ok"}} {3 * k}',
                    f'edgealloc_pool_claims_total{{region="r1",pool="b",result="no_capacity"}} 0',
                    f'edgealloc_pool_claims_total{{region="r1",pool="{esc}",result="no_capacity"}} {4 * k}',
                    ""]))
            elif path == "/v1/capacity/history":
                self.reply("application/json", json.dumps({
                    "interval_ms": 1000, "pools_omitted": 0, "as_of_ms": [now - 2000, now - 1000, now],
                    "regions": {"r1": {"pools": {
                        "a": {"available": [4, None, 3], "picked": [0, None, 1]},
                        "b": {"available": [5, 5, 5], "picked": [0, 0, 0]}}}}}))
            elif path == "/v1/capacity/deaths":
                self.reply("application/json", json.dumps({"window_ms": 600000, "pools": [
                    {"region": "r1", "pool": "a", "silent": 3, "reported": 1, "last_ms": now},
                    {"region": "r1", "pool": WEIRD_POOL, "silent": 1, "reported": 0, "last_ms": now}]}))
            else:
                self.send_error(404)

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, state


def scene_scripted(checks, chromium, tmp, page_html):
    server, state = scripted_server(page_html)
    base = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        rc, dom, err = dump_dom(chromium, tmp, base + "/dashboard", budget_ms=6000)
    finally:
        server.shutdown()
    if not checks.check(rc == 0, "scripted: chromium renders the page", err.strip()[-200:]):
        return
    page = Page(dom)

    def near(text, want):
        # Virtual time counts the fetches too: a poll period is 1.5 s and a little more.
        try:
            return abs(float(text) - want) <= 0.05 * want if want else float(text) == 0
        except (TypeError, ValueError):
            return False

    a, b, weird = page.row("r1/a") or {}, page.row("r1/b") or {}, page.row("r1/" + WEIRD_POOL) or {}
    # A poll every 1.5 s of virtual time: +2 a poll is 1.3/s, +3 is 2.0/s, +4 is 2.7/s.
    checks.check(a.get("risk") == "refusing" and near(a.get("refused"), 2 / 1.5),
                 "scripted: a pool with containers available whose claims are refused is 'refusing', 1.3/s",
                 f"{a.get('risk')} {a.get('refused')}")
    checks.check(b.get("risk") == "ok" and near(b.get("claims"), 3 / 1.5) and near(b.get("refused"), 0),
                 "scripted: a pool claimed 3 a poll shows 2.0 claims/s and no refusals",
                 f"{b.get('risk')} {b.get('claims')} {b.get('refused')}")
    checks.check(weird.get("risk") == "out" and near(weird.get("refused"), 4 / 1.5),
                 "scripted: a pool named with a quote and a backslash gets its escaped metric's rate",
                 f"{weird.get('key')} {weird.get('risk')} {weird.get('refused')}")
    checks.check(near(page.ids.get("rate-now"), 3 / 1.5) and near(page.ids.get("refused-now"), 6 / 1.5),
                 "scripted: the fleet's rates count ok and no_capacity only (not quota)",
                 f"{page.ids.get('rate-now')} {page.ids.get('refused-now')}")
    checks.check(a.get("history") == 2 and b.get("history") == 3 and weird.get("history") == 0,
                 "scripted: lines leave out the samples a pool was not in",
                 f"{a.get('history')} {b.get('history')} {weird.get('history')}")
    checks.check([r["key"] for r in page.rows] == ["r1/" + WEIRD_POOL, "r1/a", "r1/b"],
                 "scripted: full, then refusing, then ok", str([r["key"] for r in page.rows]))
    checks.check(page.deaths == [{"key": "r1/a", "silent": "3", "reported": "1"},
                                 {"key": "r1/" + WEIRD_POOL, "silent": "1", "reported": "0"}]
                 and page.ids.get("deaths-total") == "5",
                 "scripted: the recent deaths by pool, the most first, and their sum",
                 f"{page.deaths} {page.ids.get('deaths-total')}")
    asked = set(state["paths"]) - {"/favicon.ico"}
    checks.check(asked == {"/dashboard", "/v1/capacity", "/metrics", "/v1/capacity/history",
                           "/v1/capacity/deaths"},
                 "scripted: the page asks for nothing else", str(sorted(asked)))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bin", required=True, help="the edgealloc binary")
    ap.add_argument("--chromium", default="chromium")
    ap.add_argument("--screenshot", default="dashboard.png", help="where the PNG goes")
    ap.add_argument("--window", default="1280,1300", help="the screenshot's size, W,H")
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
        [os.path.abspath(args.bin), "serve", "--mirror-refresh-ms", "100",
         "--history-interval-ms", str(HISTORY_INTERVAL_MS), "--dead-after-ms", "3600000",
         "--db", os.path.join(tmp, "pool.db"), "--listen", f"127.0.0.1:{port}"],
        stdout=log, stderr=subprocess.STDOUT, cwd=tmp)
    try:
        deadline = time.monotonic() + HEALTH_TIMEOUT_S
        while time.monotonic() < deadline and server.poll() is None:
            if http_get(base + "/healthz", timeout=1)[0] == 200:
                break
            time.sleep(0.1)
        if not checks.check(http_get(base + "/healthz", timeout=1)[0] == 200, "server answers /healthz",
                            f"exit code {server.poll()}, log in {log_path}"):
            return finish(checks)
        status, ctype, page_html = http_get(base + "/dashboard")
        checks.check(status == 200 and ctype.lower().startswith("text/html"),
                     "GET /dashboard is 200 text/html", f"{status} {ctype}")
        capacity, _ = scene_fleet(checks, args, chromium, tmp, base, port)
        if capacity is not None:
            scene_load(checks, args, chromium, tmp, base, port, capacity)
        scene_scripted(checks, chromium, tmp, page_html.decode("utf-8"))
        checks.check(server.poll() is None, "server still running after the checks",
                     f"exit code {server.poll()}")
    finally:
        stop(server)
        log.close()
        if checks.failed:
            try:
                with open(log_path, "rb") as f:
                    print("--- server log (tail) ---\n" + f.read()[-2000:].decode("utf-8", "replace"))
            except OSError:
                pass
        if args.keep:
            print(f"kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    return finish(checks)


def finish(checks):
    print(f"{checks.passed} passed, {checks.failed} failed")
    return 0 if checks.failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
