"""Tenant B, the victim: claim+release cycles in its own pool, open loop,
each cycle timed from when it was due."""

import threading
import time

from noisy.cpu import waited_ns
from noisy.fleet import KEYS, REGION, Client


class B:
    """Tenant B: claim+release cycles, open loop at `rate` a second over
    `conns` keep-alive connections (threads with http.client): cycle i is due
    at t0 + i / rate and taken by the first connection free, so a slow answer
    delays the cycles behind it only when every connection is busy, and each
    cycle's latency runs from when it was due (no coordinated omission)."""

    def __init__(self, port, rate, conns):
        self.port, self.rate, self.conns = port, rate, conns
        self.reconnect()

    def reconnect(self):
        self.clients = [Client(self.port, KEYS["b"], timeout=10) for _ in range(self.conns)]

    def cycles(self, seconds, grace=4.0):
        """{"lat": ms a cycle, "refused": n, "why": {...}, "late": n, "waited_ms":
        ms B's threads were runnable but waiting for a core, all told}. Cycles
        still unsent `grace` seconds after the last was due are counted as
        late, at the time they had waited then (so p99 is at least that)."""
        n = int(seconds * self.rate)
        t0 = time.perf_counter() + 0.01
        cutoff = t0 + seconds + grace
        lock = threading.Lock()
        res = {"lat": [], "refused": 0, "why": {}, "late": 0, "waited_ms": 0.0}
        nxt = [0]

        def refuse(why):
            with lock:
                res["refused"] += 1
                res["why"][why] = res["why"].get(why, 0) + 1

        def worker(k):
            waited0 = waited_ns()
            while True:
                with lock:
                    i = nxt[0]
                    nxt[0] += 1
                if i >= n:
                    with lock:  # runnable, but another thread had B's core
                        res["waited_ms"] += (waited_ns() - waited0) / 1e6
                    return
                due = t0 + i / self.rate
                now = time.perf_counter()
                if now > cutoff:
                    with lock:
                        res["late"] += 1
                        res["lat"].append((now - due) * 1000)
                    continue
                if due > now:
                    time.sleep(due - now)
                c = self.clients[k]
                try:
                    st, s = c.call("POST", "/v1/sessions", {"region": REGION, "pool": "b"})
                    if st == 201:
                        st2, _ = c.call("DELETE", "/v1/sessions/%s?token=%d" % (s["session_id"], s["token"]))
                        if st2 != 204:
                            refuse("release %d" % st2)
                    else:
                        refuse("%d %s" % (st, ((s or {}).get("error") or {}).get("code", "")))
                except (OSError, ValueError) as e:
                    refuse(type(e).__name__)
                    self.clients[k] = Client(self.port, KEYS["b"], timeout=10)
                with lock:
                    res["lat"].append((time.perf_counter() - due) * 1000)

        ts = [threading.Thread(target=worker, args=(k,)) for k in range(len(self.clients))]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        return res


def pct(v, p):
    v = sorted(v)
    return v[min(len(v) - 1, int(p * len(v)))]
