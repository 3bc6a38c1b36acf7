"""The nemesis test's servers: an `edgealloc serve` node, and its TCP path to
the database that can pass, stall, drop or cut a COMMIT's answer."""

import os
import select
import signal
import socket
import subprocess
import threading
import time

import edgealloc_server
from edgealloc_server import die_with_parent, free_port
from nemesis_common import DEAD_AFTER_MS, FAKETIME_LIB, MONO0, now
from nemesis_limits import DEFAULT_QUOTA as QUOTA
from pg_server import clean_env

# ---------------------------------------------------------------- servers

class Node:
    """One `edgealloc serve`, on a fixed port, reaching the database through
    its own proxy. Unavailable intervals (down or paused) are recorded: a
    request to the node then may go unanswered."""

    def __init__(self, idx, binary, uri, keys, tmp, lease_ms, preexec=die_with_parent):
        self.idx, self.binary, self.uri, self.keys = idx, binary, uri, keys
        self.port = free_port()
        self.lease_ms = lease_ms
        self.preexec = preexec
        self.log_path = os.path.join(tmp, "node%d.log" % idx)
        self.logf = open(self.log_path, "ab")
        self.proc = None
        self.skew = None
        self.clock_file = os.path.join(tmp, "node%d.faketime" % idx)
        self.set_clock("+0")
        self.spawns = []          # when each life began (a new rate bucket)
        self.lock = threading.Lock()
        self.down = []            # [start, end or None]: killed, starting or paused
        self.start_failures = 0

    def mark_down(self):
        with self.lock:
            if not self.down or self.down[-1][1] is not None:
                self.down.append([now(), None])

    def mark_up(self):
        with self.lock:
            if self.down and self.down[-1][1] is None:
                self.down[-1][1] = now()

    def was_down(self, t0, t1):
        with self.lock:
            return any(s <= t1 and (e is None or e >= t0) for s, e in self.down)

    def set_clock(self, offset):
        """The node's wall clock offset (libfaketime's "+40s"), read at every
        call (FAKETIME_NO_CACHE): written while it runs, a step."""
        tmp = self.clock_file + ".new"
        with open(tmp, "w") as f:
            f.write(offset + "\n")
        os.replace(tmp, self.clock_file)

    def spawn(self):
        env = clean_env()
        # What `faketime -f +40s` does, without its wrapper process (so the
        # pid we signal is the node's); only the wall clock moves, and only
        # when the file says so (a skewed start, or a step while it runs).
        self.set_clock(self.skew or "+0")
        env.update(LD_PRELOAD=FAKETIME_LIB, FAKETIME_TIMESTAMP_FILE=self.clock_file,
                   FAKETIME_NO_CACHE="1", FAKETIME_DONT_FAKE_MONOTONIC="1")
        self.spawns.append(now())
        args = ["--keys", self.keys, "--threads", "2", "--pg-writers", "2",
                "--dead-after-ms", str(DEAD_AFTER_MS), "--lease-ms", str(self.lease_ms),
                "--max-sessions-per-tenant", str(QUOTA), "--batch-wait-ms", "5",
                "--mirror-refresh-ms", "1000"]
        self.logf.write(("--- %.2f start%s\n" % (now() - MONO0, " FAKETIME=" + self.skew
                                                 if self.skew else "")).encode())
        self.logf.flush()
        self.proc = edgealloc_server.serve(self.binary, self.uri, self.port, args,
                                           stdout=self.logf, stderr=self.logf,
                                           stdin=subprocess.DEVNULL, env=env,
                                           preexec_fn=self.preexec)

    def start(self, timeout=45):
        """Start until /readyz says 200; a start that exits (the database
        unreachable at start is exit 1) is retried, as a supervisor would."""
        self.mark_down()
        deadline = now() + timeout
        while now() < deadline:
            self.spawn()
            if edgealloc_server.wait_answers(self.port, "/readyz", self.proc, deadline - now()):
                self.mark_up()
                return True
            if self.proc.poll() is not None:
                self.start_failures += 1
                time.sleep(0.5)
        self.kill()
        return False

    def kill(self):
        self.mark_down()
        if self.proc is not None:
            edgealloc_server.kill(self.proc)

    def pause(self):
        self.mark_down()
        self.proc.send_signal(signal.SIGSTOP)

    def resume(self):
        self.proc.send_signal(signal.SIGCONT)
        self.mark_up()


# ---------------------------------------------------------------- proxy

class Proxy:
    """A node's TCP path to the database: one listener per upstream (the
    primary, the standby), all under one mode. pass: bytes flow. stall: no
    byte moves either way and nothing is closed (a hung network or peer).
    drop: every connection closed, and the ports closed for a while, so a
    connect is refused. commitcut (armed): the next answer to a COMMIT is not
    forwarded: the connection is dropped instead (the commit happened, the
    node never hears of it). An upstream that is down (the old primary after
    the failover) has its port closed too, as a host that is down: libpq
    then tries the next host of the URI. strip_notices (only to show a check
    bites): the database's notices and warnings never reach the node, so it
    cannot tell a COMMIT whose synchronous wait was cancelled."""

    def __init__(self, name, upstreams, strip_notices=False):
        self.name = name
        self.strip_notices = strip_notices
        self.notices_stripped = 0
        self.lock = threading.Lock()
        self.stalled = False
        self.refuse_until = 0.0
        self.armed_cut = False
        self.conns = set()
        self.conns_by_id = {}
        self.closing = False
        self.drops = 0
        self.drops_inflight_commit = 0   # connections whose COMMIT was unanswered at a drop
        self.drops_inflight = 0          # connections with any statement unanswered at a drop
        self.commit_cuts = 0
        self.ports = []
        self.threads = []
        for up in upstreams:
            ls = self.listen(0)
            self.ports.append(ls.getsockname()[1])
            th = threading.Thread(target=self.serve, args=(ls, self.ports[-1], up), daemon=True)
            th.start()
            self.threads.append(th)

    @staticmethod
    def listen(port):
        ls = socket.socket()
        ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            ls.bind(("127.0.0.1", port))
            ls.listen(64)
        except OSError:
            ls.close()
            raise
        ls.settimeout(0.1)
        return ls

    @staticmethod
    def reachable(port):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return True
        except OSError:
            return False

    def serve(self, ls, port, upstream):
        dead = False
        while not self.closing:
            if ls is None:  # closed: refusing, or the upstream is down
                if now() < self.refuse_until or (dead and not self.reachable(upstream)):
                    time.sleep(0.1)
                    continue
                try:
                    ls = self.listen(port)
                except OSError:
                    time.sleep(0.1)
                    continue
                dead = False
            if now() < self.refuse_until:
                ls.close()
                ls = None
                continue
            try:
                down, _ = ls.accept()
            except socket.timeout:
                continue
            except OSError:
                ls.close()
                ls = None
                continue
            if now() < self.refuse_until:
                self.reset(down)
                continue
            try:
                up = socket.create_connection(("127.0.0.1", upstream), timeout=3)
            except OSError:
                self.reset(down)  # the upstream is down: so is the path, until it is back
                ls.close()
                ls = None
                dead = True
                continue
            for s in (down, up):
                s.settimeout(None)
                s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            conn = {"down": down, "up": up, "commit_pending": False, "pending": False,
                    "closed": False}
            with self.lock:
                self.conns.add(id(conn))
                self.conns_by_id[id(conn)] = conn
            threading.Thread(target=self.pump, args=(conn, down, up, True), daemon=True).start()
            threading.Thread(target=self.pump, args=(conn, up, down, False), daemon=True).start()
        if ls is not None:
            ls.close()

    @staticmethod
    def reset(s):
        try:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
            s.close()
        except OSError:
            pass

    def pump(self, conn, src, dst, to_server):
        try:
            while not conn["closed"]:
                if self.stalled:  # leave the bytes in the kernel's buffers
                    time.sleep(0.02)
                    continue
                r, _, _ = select.select([src], [], [], 0.2)
                if not r or self.stalled:
                    continue
                data = src.recv(65536)
                if not data:
                    while self.stalled and not conn["closed"]:
                        time.sleep(0.02)  # a partition hides the close too
                    break
                conn["pending"] = to_server  # a request sent, its answer not yet back
                if to_server and data[4:8] == b"\x00\x03\x00\x00":
                    conn["started"] = True  # the startup message: typed messages follow
                if not to_server and self.strip_notices and conn.get("started"):
                    data = self.without_notices(conn, data)
                if to_server:
                    # libpq sends COMMIT as a simple query: 'Q', length 11.
                    if b"\x0bCOMMIT\x00" in data:
                        conn["commit_pending"] = True
                elif conn["commit_pending"]:
                    conn["commit_pending"] = False
                    if self.armed_cut:
                        self.armed_cut = False
                        self.commit_cuts += 1
                        self.drop(2.0, cut=True)
                        return
                dst.sendall(data)
        except OSError:
            pass
        self.close_conn(conn)

    def without_notices(self, conn, data):
        """The server's messages less its NoticeResponses ('N'), whole
        messages only (a partial one waits for its rest)."""
        buf = conn.setdefault("rx", bytearray())
        buf += data
        out = bytearray()
        while len(buf) >= 5:
            end = 1 + int.from_bytes(buf[1:5], "big")
            if len(buf) < end:
                break
            if buf[0] == ord("N"):
                self.notices_stripped += 1
            else:
                out += buf[:end]
            del buf[:end]
        return bytes(out)

    def close_conn(self, conn):
        with self.lock:
            if conn["closed"]:
                return
            conn["closed"] = True
            self.conns.discard(id(conn))
            self.conns_by_id.pop(id(conn), None)
        for s in (conn["down"], conn["up"]):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            try:
                s.close()
            except OSError:
                pass

    def drop(self, seconds, cut=False):
        """Close every connection; refuse new ones for `seconds`. Returns how
        many connections had a statement, and a COMMIT, sent and unanswered."""
        with self.lock:
            self.refuse_until = now() + seconds
            conns = list(self.conns_by_id.values())
            self.drops += 0 if cut else 1
        commits = sum(1 for c in conns if c["commit_pending"])
        statements = sum(1 for c in conns if c["pending"])
        if not cut:
            self.drops_inflight_commit += commits
            self.drops_inflight += statements
        for c in conns:
            self.close_conn(c)
        return statements, commits

    def close(self):
        self.closing = True
        self.stalled = False
        for th in self.threads:
            th.join(2)
        with self.lock:
            conns = list(self.conns_by_id.values())
        for c in conns:
            self.close_conn(c)


