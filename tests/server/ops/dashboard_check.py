#!/usr/bin/env python3
"""The dashboard in headless Chromium.

Six scenes, each a page rendered by Debian's `chromium`:

1. A 300-pool fleet on a live `edgealloc serve` (60 regions x 5 pools, 2,400
   containers, utilisation from 0 to 100%, some dead), built in waves so the
   history has a shape: every count on the page equals /v1/capacity; the
   grid has one cell a pool, coloured by its utilisation; each pool's risk
   is its own (small pools one claim from full are at risk though under 90%
   utilised); the table is in the
   order of its sort (pools at risk first by default), and the filter and
   sorts named in the address (#q=..&sort=..&dir=..&risk=1) show exactly the
   pools they say, in their order; every pool has a utilisation line from
   /v1/capacity/history; no request the page makes leaves its own origin
   (Chromium's net log), and the page names no other.
2. The same fleet under load (claims and releases on one pool, claims
   refused on the last full one by name): those pools' claim and no_capacity
   rates, and the fleet's, are above zero, from the fleet's claim counts
   (GET /v1/capacity/claims, one node); the refusing pool is the first
   row, ahead of the other full pools, and the tile counts it.
3. The page against a scripted server of the test's own: counters that grow
   by set amounts a poll give exactly those rises over the span the page
   says it measured (its own clock: Chromium's virtual time adds to each
   poll what fetches and a busy renderer take, so not exactly 1.5 s); a
   pool with containers available whose claims are refused is 'refusing';
   escaped label values are read right;
   refusing pools by rate come before 25 idle full pools, then few free,
   and the tiles count each kind; without /v1/capacity/claims (a 404) the
   rates are this node's /metrics, and the page says so. With it (three
   nodes' sums, 3 s of the server's clock apart a read), the rates are the
   fleet's, exactly, "fleet (3 nodes)", and /metrics is not read; one
   read gives them (its `earlier` sums).
4. A server with keys, the page driven over Chromium's DevTools pipe: with a
   metrics key the open pool asks for an admin key; with an admin key it
   lists the pool's containers and sessions, and its Drain and Undrain
   buttons drain and undrain a container (the server says so); a table row
   opens its pool.
5. README's demo fleet (`serve --demo`, default settings), one pool full and
   refusing, one with few free, one opened: the screenshot (docs/dashboard.png
   is one).
6. The scripted server with pools that take no claim: 8 drained and 3 dead
   is 'drained', 3 dead is 'dead', neither full nor with a utilisation (0
   of 0), while 8 sessions on 8 single-slot containers is full at 100%;
   utilisation is by slots (7 of 12 used is 58%, where containers would say
   33%); the grid and the tiles tell them apart. Scene 4 also sees each
   container's used slots.

    tests/server/ops/dashboard_check.py --bin build/edgealloc [--screenshot out.png] [--window 1280,1300] [--keep]

Prints one line a check, then "N passed, N failed"; exits 1 on any failure.
Standard library only.
"""

import argparse
import html.parser
import http.client
import fcntl
import http.server
import itertools
import json
import math
import os
import re
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "support"))
from edgealloc_server import free_port, serve, wait_answers  # noqa: E402

STATUSES = ("available", "picked", "draining", "dead")
AREAS = ("weur", "eeur", "neur", "seur", "wnam", "enam", "cnam", "sam", "afr", "mea", "apac", "oce")
REGIONS = tuple(f"{a}-{i}" for a in AREAS for i in range(1, 6))
POOLS = ("chrome", "firefox", "webkit", "gpu", "sandbox")
HISTORY_INTERVAL_MS = 250
RISK_FREE_SHARE = 0.1           # the page's RISK_FREE_SHARE
RISK_RANK = {"refusing": 0, "out": 1, "drained": 1, "dead": 1, "high": 2, "ok": 3}
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
        self.id_attrs = {n.attrs["id"]: n.attrs for n in root.find(lambda n: "id" in n.attrs)}
        self.rows = []
        for tr in root.find(lambda n: n.tag == "tr" and "data-key" in n.attrs):
            cols = {c.attrs["data-col"]: c.text().strip()
                    for c in tr.find(lambda n: "data-col" in n.attrs)}
            self.rows.append({"key": tr.attrs["data-key"], "risk": tr.attrs.get("data-risk"),
                              "hidden": "hidden" in tr.attrs,
                              "history": int(tr.attrs.get("data-history-points", "0")),
                              "spark": next((n.attrs.get("aria-label") for n in tr.find(
                                  lambda n: n.tag == "svg")), None), **cols})
        self.deaths = []
        for tr in root.find(lambda n: n.tag == "tr" and "data-death" in n.attrs):
            cols = {c.attrs["data-col"]: c.text().strip()
                    for c in tr.find(lambda n: "data-col" in n.attrs)}
            self.deaths.append({"key": tr.attrs["data-death"], **cols})
        self.backups = []
        for tr in root.find(lambda n: n.tag == "tr" and "data-backup-region" in n.attrs):
            cols = {c.attrs["data-col"]: c.text().strip()
                    for c in tr.find(lambda n: "data-col" in n.attrs)}
            self.backups.append({"region": tr.attrs["data-backup-region"], **cols})
        self.cells = [{"key": td.attrs["data-cell"], "class": td.attrs.get("class", "").split(),
                       "util": td.attrs.get("data-util"), "text": td.text().strip()}
                      for td in root.find(lambda n: n.tag == "td" and "data-cell" in n.attrs)]

    def row(self, key):
        return next((r for r in self.rows if r["key"] == key), None)

    def visible(self):
        return [r["key"] for r in self.rows if not r["hidden"]]


# ---- what the page should show, worked out here from /v1/capacity ----

def slots_of(c):
    """(used, free) slots of a pool; a body without them counts a container a slot."""
    if "slots_free" in c:
        return c["slots_used"], c["slots_free"]
    return c["picked"], c["available"]


def utilisation(c):
    """Used slots of those used or free; None for 0 of 0."""
    used, free = slots_of(c)
    return used / (used + free) if used + free > 0 else None


def few_free(c):
    used, free = slots_of(c)
    return free <= max(1, math.floor(RISK_FREE_SHARE * (used + free)))


def unusable(c):
    """'drained' or 'dead' for a pool with no container available or picked."""
    if c["available"] + c["picked"] > 0:
        return None
    return "drained" if c["draining"] > 0 else "dead"


def risk_of(c, refused=0.0):
    if unusable(c):
        return unusable(c)
    if refused > 0:
        return "refusing"
    if c["available"] == 0:
        return "out"
    return "high" if few_free(c) else "ok"


def pools_of(capacity):
    """[(region, pool, counts)] of a /v1/capacity body."""
    return [(r, p, c) for r, reg in capacity["regions"].items() for p, c in reg["pools"].items()]


def expected_order(capacity, sort, descending=False):
    def key(item):
        r, p, c = item
        u = utilisation(c)
        u = -1 if u is None else u
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
    if unusable(c):
        return unusable(c)
    if c["available"] == 0:
        return "out"
    u = utilisation(c)
    return "u3" if u >= 0.9 else "u2" if u >= 0.75 else "u1" if u >= 0.5 else "u0"


# ---- processes and HTTP ----

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

    def __init__(self, port, key=None):
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        self.headers = {"Content-Type": "application/json"}
        if key:
            self.headers["Authorization"] = f"Bearer {key}"

    def call(self, method, path, body=None):
        data = None if body is None else json.dumps(body).encode()
        self.conn.request(method, path, body=data, headers=self.headers)
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
    checks.check(got_risk == want_risk, "each pool's state (full, few free, ok) is its own",
                 str([(k, got_risk.get(k), v) for k, v in want_risk.items() if got_risk.get(k) != v][:4]))
    # Pools under 10 usable containers one claim from full are at risk, though
    # under 90% utilised (one free of 8 is 88%): the fleet must have some.
    small = [f"{r}/{p}" for r, p, c in pools
             if c["available"] == 1 and utilisation(c) < 0.9 and c["available"] + c["picked"] < 10]
    checks.check(small and all(got_risk.get(k) == "high" for k in small),
                 f"the {len(small)} small pools with one container free are at risk (few free)",
                 str([(k, got_risk.get(k)) for k in small][:4]))
    at_risk = sum(1 for v in want_risk.values() if v != "ok")
    checks.check(page.ids.get("risk-count") == str(at_risk) and at_risk > 0,
                 f"the at-risk tile counts {at_risk} pools", page.ids.get("risk-count"))
    high = sum(1 for v in want_risk.values() if v == "high")
    checks.check(page.ids.get("risk-high") == str(high) and page.ids.get("risk-refusing") == "0",
                 f"the tile counts {high} pools with few free and none refusing",
                 f"{page.ids.get('risk-high')} {page.ids.get('risk-refusing')}")
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
    checks.check({"/v1/capacity", "/v1/capacity/claims", "/v1/capacity/history",
                  "/v1/capacity/deaths"} <= set(paths),
                 "it read /v1/capacity, /v1/capacity/claims, /v1/capacity/history and /v1/capacity/deaths",
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
                 f"screenshot of the demo fleet at {args.window} in {shot}",
                 f"rc {r.returncode}, {len(png)} bytes")


def scene_load(checks, args, chromium, tmp, base, port, capacity):
    pools = pools_of(capacity)
    churn = max(pools, key=lambda it: (it[2]["available"], it[0], it[1]))
    # The last full pool by name: behind every other full pool, unless the
    # page puts the pools refusing claims first.
    fulls = sorted(it for it in pools if it[2]["available"] == 0)
    full = fulls[-1]
    churn_key, full_key = f"{churn[0]}/{churn[1]}", f"{full[0]}/{full[1]}"
    stopping = threading.Event()
    errors = []

    def answered(api, want, what, method, path, body=None):
        """Whether the call answered want, and its body; another status is an error."""
        status, reply = api.call(method, path, body)
        if status != want:
            errors.append(f"{what}: {status} {reply}")
        return status == want, reply

    def claim_and_release():
        api = Api(port)
        while not stopping.is_set():
            ok, s = answered(api, 201, "churn claim", "POST", "/v1/sessions",
                             {"region": churn[0], "pool": churn[1]})
            if not ok or not answered(api, 204, "churn release", "DELETE",
                                      f"/v1/sessions/{s['session_id']}?token={s['token']}")[0]:
                return

    def refused_claims():
        api = Api(port)
        while not stopping.is_set():
            if not answered(api, 503, "claim on the full pool", "POST", "/v1/sessions",
                            {"region": full[0], "pool": full[1]})[0]:
                return
            time.sleep(0.01)

    threads = [threading.Thread(target=f, daemon=True) for f in (claim_and_release, refused_claims)]
    for t in threads:
        t.start()
    try:
        time.sleep(0.5)
        rc, dom, err = dump_dom(chromium, tmp, base + "/dashboard", budget_ms=6000)
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
    checks.check((rate(row.get("refused")) or 0) > 0 and row.get("risk") == "refusing",
                 f"under load: the full pool {full_key} shows its refused claims a second, 'refusing'",
                 f"{row.get('refused')} {row.get('risk')}")
    first = page.rows[0]["key"] if page.rows else None
    checks.check(len(fulls) >= 2 and first == full_key,
                 f"under load: the refusing pool is the first row, before the {len(fulls) - 1} other full pools",
                 f"first row {first}")
    checks.check(page.ids.get("risk-refusing") == "1" and page.ids.get("risk-out") == str(len(fulls)),
                 f"under load: the tile counts 1 pool refusing and {len(fulls)} full",
                 f"{page.ids.get('risk-refusing')} refusing, {page.ids.get('risk-out')} full")
    checks.check((rate(page.ids.get("rate-now")) or 0) > 0, "under load: the fleet's claim rate is above 0",
                 str(page.ids.get("rate-now")))
    checks.check((rate(page.ids.get("refused-now")) or 0) > 0,
                 "under load: the fleet's refused rate is above 0", str(page.ids.get("refused-now")))
    source = page.id_attrs.get("rate-source", {})
    checks.check(source.get("data-source") == "fleet" and source.get("data-nodes") == "1",
                 "under load: the rates are the fleet's claim counts, of this one node",
                 f"{source} {page.ids.get('rate-source')}")
    quiet = [r["key"] for r in page.rows if r["key"] not in (churn_key, full_key)
             and rate(r.get("claims")) not in (0.0, None)]
    checks.check(not quiet, "under load: the pools without claims show none", str(quiet[:3]))


# ---- Chromium driven over DevTools, for what --dump-dom cannot do: clicks ----

class Browser:
    """Headless Chromium on --remote-debugging-pipe: DevTools messages as JSON
    ending in NUL, written to its fd 3 and read from its fd 4."""

    def __init__(self, chromium, profile):
        to_r, to_w = os.pipe()
        from_r, from_w = os.pipe()
        # Above 4, so that placing them on 3 and 4 in the child moves nothing else.
        child_in, child_out = (fcntl.fcntl(fd, fcntl.F_DUPFD, 10) for fd in (to_r, from_w))
        for fd in (to_r, from_w):
            os.close(fd)

        def place():
            os.dup2(child_in, 3)
            os.dup2(child_out, 4)

        self.proc = subprocess.Popen(
            chromium_base(chromium, profile) + ["--remote-debugging-pipe", "--window-size=1280,1000",
                                                "about:blank"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, pass_fds=(3, 4), preexec_fn=place)
        os.close(child_in)
        os.close(child_out)
        self.w, self.r, self.buf, self.next_id = to_w, from_r, b"", 0
        target = self.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        self.session = self.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]

    def send(self, method, params=None, session=None, timeout_s=30):
        self.next_id += 1
        msg = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        os.write(self.w, json.dumps(msg).encode() + b"\0")
        deadline = time.monotonic() + timeout_s
        while True:
            while b"\0" in self.buf:
                raw, self.buf = self.buf.split(b"\0", 1)
                reply = json.loads(raw)
                if reply.get("id") == self.next_id:
                    if "error" in reply:
                        raise RuntimeError(f"{method}: {reply['error']}")
                    return reply.get("result", {})
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self.r], [], [], left)[0]:
                raise RuntimeError(f"{method}: no answer from chromium")
            chunk = os.read(self.r, 1 << 16)
            if not chunk:
                raise RuntimeError(f"{method}: chromium closed the pipe")
            self.buf += chunk

    def navigate(self, url):
        self.send("Page.navigate", {"url": url}, self.session)

    def eval(self, expr):
        """The value of a JavaScript expression in the page (awaited), or None
        while the page is not there (a navigation under way) or it threw."""
        try:
            r = self.send("Runtime.evaluate", {"expression": expr, "returnByValue": True,
                                               "awaitPromise": True}, self.session)
        except RuntimeError:
            return None
        return None if "exceptionDetails" in r else r.get("result", {}).get("value")

    def wait(self, expr, timeout_s=20):
        """The expression's first truthy value within the time, else None."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            v = self.eval(expr)
            if v:
                return v
            time.sleep(0.1)
        return None

    def close(self):
        try:
            self.send("Browser.close", timeout_s=5)
        except (RuntimeError, OSError):
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        os.close(self.w)
        os.close(self.r)


# ---- scene 4: a pool opened, drained and undrained, with keys ----

ADMIN_KEY, METRICS_KEY = "dash-admin-key", "dash-metrics-key"


def start_server(bin_path, tmp, name, extra):
    """A server of its own in tmp/name, and its base URL, once /healthz answers."""
    port = free_port()
    folder = os.path.join(tmp, name)
    os.makedirs(folder, exist_ok=True)
    log = open(os.path.join(folder, "server.log"), "wb")
    proc = serve(os.path.abspath(bin_path), os.path.join(folder, "pool.db"), port, extra,
                 stdout=log, stderr=subprocess.STDOUT, cwd=folder)
    log.close()
    wait_answers(port, "/healthz", proc, HEALTH_TIMEOUT_S, poll_s=0.1)
    return proc, f"http://127.0.0.1:{port}", port


def type_key(browser, key):
    """Waits for the page to ask for a key, then types and submits `key`."""
    asked = browser.wait('!document.getElementById("auth").hidden')
    browser.eval(f'document.getElementById("key-input").value = {json.dumps(key)};'
                 'document.getElementById("auth-form").requestSubmit(); true')
    return bool(asked)


def drill_state(browser):
    return browser.eval("""(() => {
      const d = document.getElementById("drill");
      return {hidden: d.hidden, open: d.dataset.open || null, state: d.dataset.state || null,
              hash: location.hash, message: document.getElementById("drill-message").textContent,
              buttons: document.querySelectorAll("#drill [data-action]").length,
              containers: [...document.querySelectorAll("#drill tr[data-container]")].map((tr) => ({
                id: tr.dataset.container, drained: tr.dataset.drainRequested,
                status: tr.querySelector("[data-col=status]").textContent,
                slots: tr.querySelector("[data-col=slots]").textContent,
                action: (tr.querySelector("button[data-action]") || {dataset: {}}).dataset.action || null})),
              sessions: [...document.querySelectorAll("#drill tr[data-session]")].map((tr) => tr.dataset.session)};
    })()""") or {}


def scene_drill(checks, args, chromium, tmp):
    keys = os.path.join(tmp, "keys")
    with open(keys, "w") as f:
        f.write(f"{ADMIN_KEY} admin\n{METRICS_KEY} metrics\n")
    os.chmod(keys, 0o600)
    proc, base, port = start_server(args.bin, tmp, "drill", ["--keys", keys, "--mirror-refresh-ms", "100"])
    browser = None
    try:
        if not checks.check(http_get(base + "/healthz", timeout=1)[0] == 200, "drill: a server with keys starts"):
            return
        api = Api(port, ADMIN_KEY)
        status, _ = api.call("POST", "/v1/containers", {"containers": [
            {"id": f"r1.{p}.{i}", "region": "r1", "pool": p, "latency_ms": i}
            for p, n in (("p", 3), ("q", 2)) for i in range(n)]})
        status2, s = api.call("POST", "/v1/sessions", {"region": "r1", "pool": "p", "lease_ms": 600000,
                                                       "labels": {"job": "drill"}})
        if not checks.check(status == 200 and status2 == 201, "drill: 5 containers registered, 1 claimed",
                            f"{status} {status2}"):
            return
        held = s["container_id"]
        free = next(f"r1.p.{i}" for i in range(3) if f"r1.p.{i}" != held)
        browser = Browser(chromium, os.path.join(tmp, "drill-profile"))

        # A metrics key reads capacity but not the pool's lists: no buttons.
        browser.navigate(base + "/dashboard#region=r1&pool=p")
        type_key(browser, METRICS_KEY)
        browser.wait('document.getElementById("drill").dataset.state === "forbidden"')
        d = drill_state(browser)
        checks.check(d.get("state") == "forbidden" and d.get("buttons") == 0 and not d.get("containers"),
                     "drill: with a metrics key the open pool asks for an admin key, no buttons", str(d)[:300])

        # An admin key: the pool's containers and its session, in id order.
        browser.eval('document.getElementById("forget-key").click(); true')
        type_key(browser, ADMIN_KEY)
        browser.wait('document.querySelectorAll("#drill tr[data-container]").length === 3')
        d = drill_state(browser)
        checks.check([c["id"] for c in d.get("containers", [])] == ["r1.p.0", "r1.p.1", "r1.p.2"]
                     and d.get("sessions") == [s["session_id"]] and d.get("open") == "r1/p",
                     "drill: #region=r1&pool=p opens the pool's 3 containers and its 1 session, no other pool's",
                     str(d)[:300])
        checks.check(all(c["action"] == "drain" for c in d.get("containers", [])),
                     "drill: each container has a Drain button", str(d.get("containers"))[:300])
        checks.check({c["id"]: c["slots"] for c in d.get("containers", [])}
                     == {f"r1.p.{i}": ("1/1" if f"r1.p.{i}" == held else "0/1") for i in range(3)},
                     "drill: each container shows its used slots (its session's 1/1)",
                     str(d.get("containers"))[:300])

        # Drain a free container from the page, then undrain it (each look at
        # the server on a new connection: an idle one may have been closed).
        sel = f'#drill tr[data-container="{free}"] button[data-action="%s"]'
        browser.eval(f'document.querySelector({json.dumps(sel % "drain")}).click(); true')
        shown = browser.wait(f'document.querySelector({json.dumps(sel % "undrain")}) !== null')
        _, c = Api(port, ADMIN_KEY).call("GET", f"/v1/containers/{free}")
        checks.check(shown and c and c["drain_requested"] and c["status"] == "draining",
                     f"drill: Drain drains {free} (the server says so) and turns into Undrain",
                     f"{shown} {c}")
        browser.eval(f'document.querySelector({json.dumps(sel % "undrain")}).click(); true')
        shown = browser.wait(f'document.querySelector({json.dumps(sel % "drain")}) !== null')
        _, c = Api(port, ADMIN_KEY).call("GET", f"/v1/containers/{free}")
        checks.check(shown and c and not c["drain_requested"] and c["status"] == "available",
                     f"drill: Undrain gives {free} back (available) and turns into Drain", f"{shown} {c}")

        # A row of the table opens its pool and names it in the address.
        browser.eval('document.getElementById("drill-close").click(); true')
        browser.wait('document.querySelector(\'tr[data-key="r1/q"] td.name button\') !== null')
        browser.eval('document.querySelector(\'tr[data-key="r1/q"] td.name button\').click(); true')
        browser.wait('document.querySelectorAll("#drill tr[data-container]").length === 2')
        d = drill_state(browser)
        checks.check(d.get("open") == "r1/q" and "region=r1" in d.get("hash", "") and "pool=q" in d.get("hash", "")
                     and [c["id"] for c in d.get("containers", [])] == ["r1.q.0", "r1.q.1"]
                     and d.get("sessions") == [],
                     "drill: clicking a pool's row opens it (and the address names it)", str(d)[:300])
    except (RuntimeError, OSError, KeyError, TypeError) as e:
        checks.check(False, "drill: the scene ran", repr(e))
    finally:
        if browser:
            browser.close()
        stop(proc)


# ---- scene 5: the screenshot, README's demo fleet at default settings ----

def scene_demo(checks, args, chromium, tmp):
    """`serve --demo` as README starts it (defaults but for the address and
    the database): weur/chrome claimed full and asked of, so that it refuses,
    and opened; then docs/dashboard.png's screenshot."""
    proc, base, port = start_server(args.bin, tmp, "demo", ["--demo"])
    stopping = threading.Event()
    try:
        if not checks.check(http_get(base + "/healthz", timeout=1)[0] == 200, "demo: serve --demo starts"):
            return
        api = Api(port)
        claimed = 0
        while api.call("POST", "/v1/sessions", {"region": "weur", "pool": "chrome", "lease_ms": 600000,
                                                 "labels": {"job": f"render-{claimed}"}})[0] == 201:
            claimed += 1
        # eeur/firefox one free of 8: few free, though 88% utilised.
        for pool, n in (("firefox", 7), ("chrome", 2)):
            for _ in range(n):
                api.call("POST", "/v1/sessions", {"region": "eeur" if pool == "firefox" else "wnam",
                                                  "pool": pool, "lease_ms": 600000})

        def refused_claims():
            client = Api(port)
            while not stopping.is_set():
                client.call("POST", "/v1/sessions", {"region": "weur", "pool": "chrome"})
                time.sleep(0.01)

        t = threading.Thread(target=refused_claims, daemon=True)
        t.start()
        # The mirror refreshes every second by default: two refreshes.
        time.sleep(2.5)
        screenshot(checks, args, chromium, tmp, base + "/dashboard#region=weur&pool=chrome")
        checks.check(claimed > 0, f"demo: weur/chrome is full after {claimed} claims")
    finally:
        stopping.set()
        stop(proc)


# ---- scene 3: a scripted server ----

WEIRD_POOL = 'we"ird\\pool'
IDLE_FULL_POOLS = 25


FLEET_STEP_MS = 3000


def fleet_sums(k, now):
    """The fleet's sums of the k-th read, 3 s of the server's clock apart a
    read, rising by 9 ok and 12 no_capacity a read (3.0/s and 4.0/s): r1/a
    refused +6 (2.0/s), r1/b ok +9 (3.0/s), the weird pool refused +3 (1.0/s)."""
    return {"as_of_ms": now + FLEET_STEP_MS * k, "claims": {"ok": 9 * k, "no_capacity": 12 * k},
            "pools": [{"region": "r1", "pool": "a", "ok": 0, "no_capacity": 6 * k},
                      {"region": "r1", "pool": "b", "ok": 9 * k, "no_capacity": 0},
                      {"region": "r1", "pool": WEIRD_POOL, "ok": 0, "no_capacity": 3 * k}]}


def fleet_claims(k, now):
    """The k-th answer of a scripted GET /v1/capacity/claims: 3 nodes' sums,
    and the read before as `earlier`."""
    return {"window_ms": 30000, "age_ms": 100, "nodes": 3, **fleet_sums(k, now),
            "earlier": fleet_sums(k - 1, now)}


# Region r2 of scripted_server(states=True): pools that take no claim, a
# full one, and one of several slots a container.
STATE_POOLS = {
    # The issue a newcomer met: 8 drained and 3 dead showed as "full, 100%".
    "drained-8": {"available": 0, "picked": 0, "draining": 8, "dead": 3, "drained": 8,
                  "slots": 11, "slots_used": 0, "slots_free": 0},
    "dead-3": {"available": 0, "picked": 0, "draining": 0, "dead": 3, "drained": 0,
               "slots": 3, "slots_used": 0, "slots_free": 0},
    "live-8": {"available": 0, "picked": 8, "draining": 0, "dead": 0, "drained": 0,
               "slots": 8, "slots_used": 8, "slots_free": 0},
    # 3 containers of 4 slots, 7 sessions: 58% by slots (33% by containers).
    "slots": {"available": 2, "picked": 1, "draining": 0, "dead": 0, "drained": 0,
              "slots": 12, "slots_used": 7, "slots_free": 5},
}


def scripted_server(page_html, fleet=False, states=False):
    """A server of the page and of scripted data: each /metrics answer has the
    counters one step further (claims ok +3 and no_capacity +2 in r1/a, +4 in
    the weird pool, ok +3 in r1/b, a step). Region r0 has 25 full pools
    nobody asks of; r1 has small, big and mid pools of few free containers.
    With `fleet`, GET /v1/capacity/claims answers too (fleet_claims);
    without, it is a 404, as on a server that has none. With `states`,
    region r2 has STATE_POOLS."""
    state = {"metrics": 0, "claims": 0, "paths": [], "t0": int(time.time() * 1000)}

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
                regions = {
                    "r0": {"pools": {f"full-{i:02d}": counts(0, 2) for i in range(IDLE_FULL_POOLS)}},
                    "r1": {"pools": {"a": counts(3, 1), "b": counts(5, 0), WEIRD_POOL: counts(0, 2, 1),
                                     "small": counts(1, 4), "big": counts(2, 18), "mid": counts(2, 10)}}}
                if states:
                    regions["r2"] = {"pools": STATE_POOLS}
                self.reply("application/json", json.dumps({"as_of_ms": now, "age_ms": 5, "regions": regions}))
            elif path == "/v1/capacity/claims" and fleet:
                k = state["claims"] = state["claims"] + 1
                self.reply("application/json", json.dumps(fleet_claims(k, state["t0"])))
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
                        "b": {"available": [5, 5, 5], "picked": [0, 0, 0],
                              "slots": [40, 40, 40], "slots_used": [0, 10, 30],
                              "slots_free": [40, 30, 10]}}}}}))
            elif path == "/v1/capacity/regions":
                self.reply("application/json", json.dumps({"max_heartbeat_lag_ms": 2000, "regions": [
                    {"region": "r1", "lag_ms": 0, "backup": None, "on_backup": False, "on_backup_ms": 0},
                    {"region": "r2", "lag_ms": 3500, "backup": "r1", "on_backup": True,
                     "on_backup_ms": 125000, "switches": 1},
                    {"region": "r3", "lag_ms": 0, "backup": "r1", "on_backup": False,
                     "on_backup_ms": 0, "switches": 0}]}))
            elif path == "/v1/capacity/deaths":
                self.reply("application/json", json.dumps({"window_ms": 600000, "pools": [
                    {"region": "r1", "pool": "a", "silent": 3, "reported": 1, "last_ms": now},
                    {"region": "r1", "pool": WEIRD_POOL, "silent": 1, "reported": 0, "last_ms": now}]}))
            else:
                self.send_error(404)

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, state


def render_scripted(checks, chromium, tmp, page_html, label, fleet=False, budget_ms=6000, states=False):
    """The page over scripted_server(fleet, states), rendered: (Page or None, the server's state)."""
    server, state = scripted_server(page_html, fleet, states)
    base = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        rc, dom, err = dump_dom(chromium, tmp, base + "/dashboard", budget_ms=budget_ms)
    finally:
        server.shutdown()
    if not checks.check(rc == 0, f"{label}: chromium renders the page", err.strip()[-200:]):
        return None, state
    return Page(dom), state


def near(text, want, share):
    """Whether a rate shown as `text` is `want` within `share` of it."""
    try:
        return abs(float(text) - want) <= share * want if want else float(text) == 0
    except (TypeError, ValueError):
        return False


def shown(text, want):
    """Whether a rate shown as `text` (one decimal below 10) is `want` as the
    page would print it: within half its last digit, and no more."""
    try:
        return abs(float(text) - want) <= 0.05 + 1e-9
    except (TypeError, ValueError):
        return False


def rate_window(page):
    """(span in ms, samples) of the counter samples the page's rates are
    over (#rate-source's data-window-ms and data-samples), or (None, 0)."""
    source = page.id_attrs.get("rate-source", {})
    try:
        return float(source["data-window-ms"]), int(source["data-samples"])
    except (KeyError, ValueError):
        return None, 0


def scene_scripted(checks, chromium, tmp, page_html):
    page, state = render_scripted(checks, chromium, tmp, page_html, "scripted")
    if page is None:
        return
    a, b, weird = page.row("r1/a") or {}, page.row("r1/b") or {}, page.row("r1/" + WEIRD_POOL) or {}
    # The counters rise by set amounts a read of /metrics (one a poll); the
    # time between reads is the page's own clock, a poll (1.5 s) plus what
    # Chromium's virtual time gives each fetch and a busy renderer, which the
    # test does not control. So the rise over the page's window is exact,
    # and the rate is that rise over the span the page says it measured.
    window_ms, samples = rate_window(page)
    polls = samples - 1
    # Within the 6 s of virtual time the page had (render_scripted's budget).
    checks.check(polls >= 2 and window_ms is not None and polls * 1500 <= window_ms <= 6000
                 and state["metrics"] in (samples, samples + 1),
                 "scripted: the rates are over the page's samples, one a read of /metrics, 1.5 s or more apart",
                 f"{samples} samples over {window_ms} ms, {state['metrics']} reads of /metrics")
    secs = (window_ms or math.inf) / 1000
    checks.check(a.get("risk") == "refusing" and shown(a.get("refused"), 2 * polls / secs),
                 "scripted: a pool with containers available whose claims are refused is 'refusing', +2 a poll",
                 f"{a.get('risk')} {a.get('refused')}, want {2 * polls / secs:.3f}")
    checks.check(b.get("risk") == "ok" and shown(b.get("claims"), 3 * polls / secs)
                 and shown(b.get("refused"), 0),
                 "scripted: a pool claimed 3 a poll shows +3 a poll over the window and no refusals",
                 f"{b.get('risk')} {b.get('claims')} {b.get('refused')}, want {3 * polls / secs:.3f}")
    checks.check(weird.get("risk") == "refusing" and shown(weird.get("refused"), 4 * polls / secs),
                 "scripted: a pool named with a quote and a backslash gets its escaped metric's rate",
                 f"{weird.get('key')} {weird.get('risk')} {weird.get('refused')}, want {4 * polls / secs:.3f}")
    checks.check(shown(page.ids.get("rate-now"), 3 * polls / secs)
                 and shown(page.ids.get("refused-now"), 6 * polls / secs),
                 "scripted: the fleet's rates count ok and no_capacity only (not quota)",
                 f"{page.ids.get('rate-now')} {page.ids.get('refused-now')}, want {3 * polls / secs:.3f} "
                 f"and {6 * polls / secs:.3f}")
    checks.check(a.get("history") == 2 and b.get("history") == 3 and weird.get("history") == 0,
                 "scripted: lines leave out the samples a pool was not in",
                 f"{a.get('history')} {b.get('history')} {weird.get('history')}")
    # b's containers are all available, its slots from none to 3 of 4 used:
    # its line is by slots (0% to 75%), a's by containers (no slot counts).
    checks.check(b.get("spark") == "utilisation from 0% to 75%"
                 and a.get("spark") == "utilisation from 0% to 25%",
                 "scripted: a pool's line is its slot utilisation where the history has slots",
                 f"b: {b.get('spark')}, a: {a.get('spark')}")
    # Refusing (the highest rate first, full or not), then full, then few
    # free, then the rest, each by utilisation: 1 free of 5 (80%) is at risk,
    # 2 free of 20 (90%) too, 2 free of 12 (83%) is not.
    idle_full = [f"r0/full-{i:02d}" for i in range(IDLE_FULL_POOLS)]
    want = ["r1/" + WEIRD_POOL, "r1/a", *idle_full, "r1/big", "r1/small", "r1/mid", "r1/b"]
    got = [r["key"] for r in page.rows]
    checks.check(got == want, "scripted: refusing by rate, then full, then few free, then the rest",
                 f"first {got[:4]}, last {got[-4:]}")
    risks = {r["key"]: r["risk"] for r in page.rows}
    checks.check([risks.get(k) for k in ("r1/small", "r1/big", "r1/mid")] == ["high", "high", "ok"],
                 "scripted: 1 free of 5 and 2 of 20 are few free, 2 of 12 is not",
                 str([risks.get(k) for k in ("r1/small", "r1/big", "r1/mid")]))
    tiles = [page.ids.get(k) for k in ("risk-refusing", "risk-out", "risk-high", "risk-count")]
    checks.check(tiles == ["2", str(IDLE_FULL_POOLS + 1), "2", str(IDLE_FULL_POOLS + 4)],
                 "scripted: the tile counts 2 refusing, 26 full (one refusing too), 2 few free, 29 at risk",
                 str(tiles))
    checks.check(page.deaths == [{"key": "r1/a", "silent": "3", "reported": "1"},
                                 {"key": "r1/" + WEIRD_POOL, "silent": "1", "reported": "0"}]
                 and page.ids.get("deaths-total") == "5",
                 "scripted: the recent deaths by pool, the most first, and their sum",
                 f"{page.deaths} {page.ids.get('deaths-total')}")
    checks.check([(b["region"], b["backup"], b["to"].split(",")[0]) for b in page.backups]
                 == [("r2", "r1", "backup r1"), ("r3", "r1", "home")]
                 and page.ids.get("backup-total") == "1"
                 and "s" in page.backups[0]["lag"],
                 "scripted: the regions with a backup, the one on it shown so, and their count",
                 f"{page.backups} {page.ids.get('backup-total')}")
    source, text = page.id_attrs.get("rate-source", {}), page.ids.get("rate-source", "")
    checks.check(source.get("data-source") == "metrics" and "this node" in text,
                 "scripted: without the fleet's claim counts (404) the rates are this node's /metrics",
                 f"{source} {text}")
    asked = set(state["paths"]) - {"/favicon.ico"}
    checks.check(asked == {"/dashboard", "/v1/capacity", "/v1/capacity/claims", "/metrics",
                           "/v1/capacity/history", "/v1/capacity/deaths", "/v1/capacity/regions"},
                 "scripted: the page asks for nothing else", str(sorted(asked)))


def scene_states(checks, chromium, tmp, page_html):
    """Pools that take no claim are drained or dead, not full; utilisation
    is by slots, and none is shown for 0 of 0."""
    page, _ = render_scripted(checks, chromium, tmp, page_html, "states", states=True)
    if page is None:
        return
    rows = {k: page.row("r2/" + k) or {} for k in STATE_POOLS}
    cells = {c["key"]: c for c in page.cells}
    got = {k: (r.get("risk"), r.get("util")) for k, r in rows.items()}
    checks.check(got["drained-8"] == ("drained", "–") and got["dead-3"] == ("dead", "–"),
                 "states: 8 drained and 3 dead is 'drained', 3 dead is 'dead', neither with a utilisation",
                 str(got))
    checks.check(got["live-8"] == ("out", "100%"), "states: 8 live sessions of 8 is full, 100%",
                 str(got["live-8"]))
    checks.check(got["slots"] == ("ok", "58%"),
                 "states: 7 of 12 slots used (5 free) is 58%, by slots not containers", str(got["slots"]))
    want_cells = {"drained-8": ("drained", ""), "dead-3": ("dead", ""), "live-8": ("out", "100"),
                  "slots": ("u1", "58")}
    got_cells = {k: (next((c for c in cells.get("r2/" + k, {}).get("class", []) if c in
                           ("u0", "u1", "u2", "u3", "out", "drained", "dead")), None),
                     cells.get("r2/" + k, {}).get("util")) for k in STATE_POOLS}
    checks.check(got_cells == want_cells, "states: the grid colours drained and dead apart from full",
                 str(got_cells))
    tiles = [page.ids.get(k) for k in ("risk-out", "risk-unusable")]
    checks.check(tiles == [str(IDLE_FULL_POOLS + 2), "2"],
                 "states: the tile counts the full pools apart from the 2 drained or dead", str(tiles))
    order = [r["key"] for r in page.rows]
    checks.check(all(order.index("r2/" + k) < order.index("r1/big") for k in ("drained-8", "dead-3"))
                 and all(order.index("r2/" + k) > order.index("r1/a") for k in ("drained-8", "dead-3")),
                 "states: drained and dead pools rank with the full ones, after the refusing", str(order[:8]))


def scene_scripted_fleet(checks, chromium, tmp, page_html):
    """The same scripted server with the fleet's claim counts: the page takes
    its rates from them, timed by their as_of_ms, and never reads /metrics."""
    page, state = render_scripted(checks, chromium, tmp, page_html, "fleet", fleet=True)
    if page is None:
        return
    near1 = lambda text, want: near(text, want, 0.01)  # noqa: E731
    a, b, weird = page.row("r1/a") or {}, page.row("r1/b") or {}, page.row("r1/" + WEIRD_POOL) or {}
    checks.check(near1(a.get("refused"), 2.0) and near1(b.get("claims"), 3.0)
                 and near1(weird.get("refused"), 1.0),
                 "fleet: each pool's rates are the rises of the fleet's sums over their as_of_ms",
                 f"{a.get('refused')} {b.get('claims')} {weird.get('refused')}")
    checks.check(near1(page.ids.get("rate-now"), 3.0) and near1(page.ids.get("refused-now"), 4.0),
                 "fleet: the claim and refused tiles are the fleet's totals' rates (3.0/s, 4.0/s)",
                 f"{page.ids.get('rate-now')} {page.ids.get('refused-now')}")
    window_ms, samples = rate_window(page)
    checks.check(samples >= 2 and window_ms == FLEET_STEP_MS * (samples - 1),
                 "fleet: the rates' window is the span of the server's reads (its as_of_ms)",
                 f"{samples} samples over {window_ms} ms")
    source, text = page.id_attrs.get("rate-source", {}), page.ids.get("rate-source", "")
    checks.check(source.get("data-source") == "fleet" and source.get("data-nodes") == "3"
                 and "fleet (3 nodes)" in text,
                 "fleet: the page says its rates are the fleet's, of 3 nodes", f"{source} {text}")
    checks.check(state["claims"] >= 2 and state["metrics"] == 0,
                 "fleet: the page read the fleet's counts and not this node's /metrics",
                 f"{state['claims']} claims reads, {state['metrics']} /metrics reads")
    # One look (the first poll only): the server's earlier read gives the rate.
    page, state = render_scripted(checks, chromium, tmp, page_html, "fleet, one look", fleet=True,
                                  budget_ms=1000)
    if page is not None:
        checks.check(state["claims"] == 1 and near1(page.ids.get("rate-now"), 3.0)
                     and near1((page.row("r1/a") or {}).get("refused"), 2.0),
                     "fleet: one read of the fleet's counts shows the rates, from its earlier read",
                     f"{state['claims']} reads, {page.ids.get('rate-now')}")


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
    server = serve(os.path.abspath(args.bin), os.path.join(tmp, "pool.db"), port,
                   ["--mirror-refresh-ms", "100", "--history-interval-ms", str(HISTORY_INTERVAL_MS),
                    "--dead-after-ms", "3600000", "--claims-publish-ms", "100"],
                   stdout=log, stderr=subprocess.STDOUT, cwd=tmp)
    try:
        wait_answers(port, "/healthz", server, HEALTH_TIMEOUT_S, poll_s=0.1)
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
        scene_scripted_fleet(checks, chromium, tmp, page_html.decode("utf-8"))
        scene_states(checks, chromium, tmp, page_html.decode("utf-8"))
        scene_drill(checks, args, chromium, tmp)
        scene_demo(checks, args, chromium, tmp)
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
