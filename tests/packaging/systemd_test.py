"""packaging/edgealloc.service and the binary's sd_notify, checked offline.

1. `systemd-analyze verify` on the unit (ExecStart pointed at the built
   binary): it must pass and print nothing (a warning is a failure too).
2. The binary as systemd would start it (NOTIFY_SOCKET set to a datagram
   socket of ours): READY=1 arrives, and by then the port answers /healthz;
   after SIGTERM, STOPPING=1 arrives and the process exits 0.

    python3 tests/packaging/systemd_test.py --bin build/edgealloc --unit packaging/edgealloc.service
"""
import argparse
import os
import signal
import socket
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from edgealloc_server import free_port, serve, status_of  # noqa: E402


def fail(msg):
    print("FAIL " + msg, file=sys.stderr)
    sys.exit(1)


def verify_unit(unit, binary, tmp):
    text = open(unit).read()
    if "ExecStart=/usr/local/bin/edgealloc serve" not in text:
        fail("the unit's ExecStart is not /usr/local/bin/edgealloc serve")
    for needed in ("Type=notify", "DynamicUser=yes", "ProtectSystem=strict", "StateDirectory=edgealloc",
                   "ExecReload=/bin/kill -HUP $MAINPID"):
        if needed not in text:
            fail("the unit lacks " + needed)
    local = os.path.join(tmp, "edgealloc.service")
    with open(local, "w") as f:
        f.write(text.replace("/usr/local/bin/edgealloc", os.path.abspath(binary)))
    r = subprocess.run(["systemd-analyze", "verify", local], capture_output=True, text=True)
    out = (r.stdout + r.stderr).strip()
    if r.returncode != 0 or out:
        fail("systemd-analyze verify (exit %d):\n%s" % (r.returncode, out))
    print("ok systemd-analyze verify: no error, no warning")


def notify(binary, tmp):
    path = os.path.join(tmp, "notify.sock")
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(path)
    sock.settimeout(30)
    port = free_port()
    env = dict(os.environ, NOTIFY_SOCKET=path)
    proc = serve(binary, os.path.join(tmp, "pool.db"), port, ["--demo"],
                 env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        msg = sock.recv(4096).decode()
        if "READY=1" not in msg.split("\n"):
            fail("first notification is not READY=1: %r" % msg)
        if status_of(port, "/healthz", timeout=2) != 200:
            fail("READY=1 came before the port answered /healthz")
        print("ok READY=1 (%s), /healthz 200 at that moment" % msg.replace("\n", " "))
        proc.send_signal(signal.SIGTERM)
        msg = sock.recv(4096).decode()
        if "STOPPING=1" not in msg.split("\n"):
            fail("after SIGTERM the notification is not STOPPING=1: %r" % msg)
        code = proc.wait(timeout=30)
        if code != 0:
            fail("exit %d after SIGTERM; stderr:\n%s" % (code, proc.stderr.read()))
        print("ok STOPPING=1 after SIGTERM, exit 0")
    except socket.timeout:
        fail("no notification within 30 s; stderr:\n" + (proc.stderr.read() if proc.poll() is not None else ""))
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--unit", required=True)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        verify_unit(args.unit, args.bin, tmp)
        notify(args.bin, tmp)


if __name__ == "__main__":
    main()
