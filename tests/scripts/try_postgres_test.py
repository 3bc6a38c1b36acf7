"""scripts/try-postgres.sh does what README.md says: one command gives a
throwaway PostgreSQL and two nodes on it; a session claimed on one node is
the same session on the other; Ctrl-C (SIGINT to its process group, as a
terminal sends it) stops it as a user asked, not as a failure, and nothing
is left running and its folder is gone."""

import glob
import json
import os
import signal
import subprocess
import sys
import time
import urllib.request

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tests", "support"))
import edgealloc_server  # noqa: E402


def main():
    binary = sys.argv[1]
    ports = [edgealloc_server.free_port(), edgealloc_server.free_port()]
    before = set(glob.glob("/tmp/edgealloc-try-postgres.*"))
    env = dict(os.environ, EDGEALLOC_BIN=binary, TRY_POSTGRES_PORTS="%d %d" % tuple(ports))
    # A process group of its own, as a shell's foreground job.
    script = subprocess.Popen([os.path.join(ROOT, "scripts", "try-postgres.sh")],
                              env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                              start_new_session=True, preexec_fn=edgealloc_server.die_with_parent)
    try:
        for port in ports:
            assert edgealloc_server.wait_answers(port, "/readyz", script, timeout=60), \
                "node on %d never ready" % port
        time.sleep(1.5)  # the demo fleet's first heartbeats
        claim = urllib.request.Request("http://127.0.0.1:%d/v1/sessions" % ports[0], method="POST",
                                       data=b'{"region":"weur","pool":"chrome"}',
                                       headers={"Content-Type": "application/json"})
        session = json.load(urllib.request.urlopen(claim, timeout=10))
        seen = json.load(urllib.request.urlopen(
            "http://127.0.0.1:%d/v1/sessions/%s" % (ports[1], session["session_id"]), timeout=10))
        # served_by says how the claim was routed: the 201's alone.
        session.pop("served_by", None)
        assert seen == session, (seen, session)
    finally:
        os.killpg(script.pid, signal.SIGINT)  # Ctrl-C
        out, _ = script.communicate(timeout=90)
    print(out)
    assert script.returncode == 0, script.returncode
    assert "two nodes on postgresql://edgealloc@" in out, out
    assert "stopping the nodes and the database" in out, out
    assert "stopped by itself" not in out, out
    left = set(glob.glob("/tmp/edgealloc-try-postgres.*")) - before
    assert not left, "left behind: %s" % left
    for port in ports:
        assert edgealloc_server.status_of(port, "/healthz") is None, "a node still answers"
    print("ok: two nodes on one throwaway PostgreSQL, the same session on both, nothing left")


if __name__ == "__main__":
    main()
