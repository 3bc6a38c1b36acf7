"""Starting and stopping `edgealloc serve` from the Python tests and benches:
a free loopback port, the wait until the server answers, and the stop. One
copy, so that every script starts and stops the server the same way.
Standard library only; a script imports it with

    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
"""

import argparse
import ctypes
import http.client
import os
import signal
import socket
import subprocess
import tempfile
import time


def free_port():
    """A loopback port free at this moment (another process may still take it
    before the server binds it)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def die_with_parent():
    """In a child before exec: SIGKILL it if this script dies (a ctest
    timeout), so that no server outlives the test."""
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except OSError:
        pass


def keys_file(folder, text, mode=None):
    """Writes `text` (lines of `key role [limits]`, docs/api.md) as the file
    keys in folder, with `mode` when given; returns its path, for --keys."""
    path = os.path.join(folder, "keys")
    with open(path, "w") as f:
        f.write(text)
    if mode is not None:
        os.chmod(path, mode)
    return path


def serve(binary, db, port, args=(), **popen):
    """`binary serve --db db --listen 127.0.0.1:port args...`, started with
    subprocess.Popen's keyword arguments popen (output, env, preexec_fn)."""
    argv = [binary, "serve", "--db", db, "--listen", "127.0.0.1:%d" % port]
    return subprocess.Popen(argv + list(args), **popen)


def status_of(port, path, timeout=1):
    """The status of GET path on a new connection, or None when nothing
    answers."""
    try:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
        try:
            conn.request("GET", path)
            return conn.getresponse().status
        finally:
            conn.close()
    except (OSError, http.client.HTTPException):
        return None


def call(port, method, path, body=None, key=None, timeout=10):
    """One request on a new connection: (status, the body's bytes). A body
    goes as application/json, a key as the bearer."""
    headers = {"Authorization": "Bearer " + key} if key is not None else {}
    if body is not None:
        headers["Content-Type"] = "application/json"
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.request(method, path, body=body, headers=headers)
        r = conn.getresponse()
        return r.status, r.read()
    finally:
        conn.close()


def wait_answers(port, path="/healthz", proc=None, timeout=10.0, poll_s=0.05):
    """True once GET path answers 200 (/healthz: the port is served; /readyz:
    the batcher runs and the database is open); False when proc exits first or
    timeout seconds pass."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            return False
        if status_of(port, path) == 200:
            return True
        time.sleep(poll_s)
    return False


def stop(proc, timeout=30, kill_late=False):
    """SIGTERM, and its exit code once it exits. Not exited within timeout
    seconds: SIGKILL, then subprocess.TimeoutExpired is raised unless
    kill_late (a bench that only has to leave nothing running)."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
    try:
        return proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        if not kill_late:
            raise
        return proc.returncode


def kill(proc):
    """SIGKILL (SIGCONT first, so a stopped process dies too), and its exit
    status."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGCONT)
        proc.kill()
    return proc.wait()


def bin_args(*flags):
    """A test script's command line, parsed: --bin (the edgealloc binary,
    required) and the script's own flags, each a (flag, keyword arguments
    of ArgumentParser.add_argument) pair."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    for flag, options in flags:
        ap.add_argument(flag, **options)
    return ap.parse_args()


def main_with_bin(*steps):
    """A test script's main: parses --bin (the edgealloc binary) and calls
    each step(binary, tmp) in turn, with one temporary folder removed after."""
    args = bin_args()
    with tempfile.TemporaryDirectory() as tmp:
        for step in steps:
            step(args.bin, tmp)
