#!/usr/bin/env python3
"""Out of file descriptors, new clients are still answered.

Runs `edgealloc serve` with RLIMIT_NOFILE 128:128 (as `prlimit --nofile=128:128`:
the soft limit cannot be raised past the hard one), opens 150 idle connections, then checks that
/healthz on a new connection answers within 2 s and that stderr does not get
an "accept failed" line per accept (the old server logged 20 a second).

    fd_exhaustion_test.py --bin build/edgealloc
"""
import os
import re
import resource
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from edgealloc_server import bin_args, serve  # noqa: E402

IDLE_CONNECTIONS = 150
NOFILE = 128
ANSWER_WITHIN_S = 2.0
WATCH_S = 3.0
# What "once per interval" allows over WATCH_S, with room to spare.
MAX_ACCEPT_LOG_LINES = 3


def healthz(port, timeout):
    """Status of GET /healthz on a new connection, or the exception's text."""
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    try:
        s.settimeout(timeout)
        s.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        data = b""
        while b"\r\n" not in data:
            chunk = s.recv(4096)
            if not chunk:
                break
            data += chunk
        m = re.match(rb"HTTP/1\.1 (\d+)", data)
        return int(m.group(1)) if m else data
    finally:
        s.close()


def main():
    args = bin_args()
    failures = []
    with tempfile.TemporaryDirectory() as workdir:
        log = os.path.join(workdir, "server.log")
        with open(log, "w") as logf:
            # Port 0: the server says which port it took (read below).
            proc = serve(args.bin, os.path.join(workdir, "pool.db"), 0,
                         stdout=logf, stderr=subprocess.STDOUT,
                         preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_NOFILE,
                                                               (NOFILE, NOFILE)))
        try:
            deadline = time.time() + 20
            port = None
            while port is None:
                with open(log, errors="replace") as f:
                    m = re.search(r"serving on 127\.0\.0\.1:(\d+)", f.read())
                if m:
                    port = int(m.group(1))
                elif proc.poll() is not None or time.time() > deadline:
                    print(open(log, errors="replace").read())
                    print("FAIL: server did not start")
                    return 1
                else:
                    time.sleep(0.01)
            idle = []
            for _ in range(IDLE_CONNECTIONS):
                idle.append(socket.create_connection(("127.0.0.1", port), timeout=5))
            time.sleep(0.3)  # let the server accept what it can
            with open(log, errors="replace") as f:
                before = f.read().count("accept failed")
            for attempt in range(3):
                started = time.time()
                try:
                    status = healthz(port, ANSWER_WITHIN_S)
                except OSError as e:
                    status = f"{type(e).__name__}: {e}"
                took = time.time() - started
                print(f"healthz #{attempt} with {IDLE_CONNECTIONS} idle: {status} in {took:.2f} s")
                if status != 200:
                    failures.append(f"healthz #{attempt} answered {status!r} after {took:.2f} s")
            time.sleep(WATCH_S)
            with open(log, errors="replace") as f:
                text = f.read()
            lines = text.count("accept failed") - before
            print(f"'accept failed' lines in {WATCH_S:.0f} s: {lines}")
            if lines > MAX_ACCEPT_LOG_LINES:
                failures.append(f"{lines} 'accept failed' lines in {WATCH_S} s "
                                f"(at most {MAX_ACCEPT_LOG_LINES})")
            if proc.poll() is not None:
                failures.append(f"server exited with {proc.returncode}")
            for s in idle:
                s.close()
        finally:
            proc.kill()
            proc.wait()
        if failures:
            print(open(log, errors="replace").read()[-3000:])
    for f in failures:
        print("FAIL:", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
