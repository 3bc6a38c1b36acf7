"""The files of examples/ do what examples/README.md says, against the real
binary: fleet.json registers (by `edgealloc register` and by POST
/v1/containers), and heartbeat-loop.sh keeps its containers alive past
--dead-after-ms while one it does not name dies."""

import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.request

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tests", "support"))
import edgealloc_server  # noqa: E402

FLEET = os.path.join(ROOT, "examples", "fleet.json")
DEAD_AFTER_MS = 1500
JSON = {"Content-Type": "application/json"}


def get(port, path):
    return json.load(urllib.request.urlopen("http://127.0.0.1:%d%s" % (port, path), timeout=5))


def main():
    binary = sys.argv[1]
    with open(FLEET) as f:
        fleet = json.load(f)
    ids = [c["id"] for c in fleet["containers"]]
    with tempfile.TemporaryDirectory() as tmp:
        db = os.path.join(tmp, "e.db")
        out = subprocess.run([binary, "register", "--db", db, FLEET], capture_output=True,
                             text=True, check=True)
        print(out.stdout.strip(), out.stderr.strip())
        port = edgealloc_server.free_port()
        server = edgealloc_server.serve(binary, db, port, ["--dead-after-ms", str(DEAD_AFTER_MS)],
                                        preexec_fn=edgealloc_server.die_with_parent)
        loop = None
        try:
            assert edgealloc_server.wait_answers(port, "/readyz", server)
            body = json.dumps(fleet).encode()
            req = urllib.request.Request("http://127.0.0.1:%d/v1/containers" % port, data=body,
                                         method="POST", headers=JSON)
            assert json.load(urllib.request.urlopen(req, timeout=5)) == {"registered": len(ids)}
            # One more container that nobody reports for: it must die, or the
            # test could not tell a loop that works from a reaper that sleeps.
            lone = json.dumps({"containers": [{"id": "lone-1", "region": "weur"}]}).encode()
            urllib.request.urlopen(urllib.request.Request(
                "http://127.0.0.1:%d/v1/containers" % port, data=lone, method="POST",
                headers=JSON), timeout=5)
            env = dict(os.environ, EDGEALLOC_SERVER="http://127.0.0.1:%d" % port, EVERY_S="0.3")
            loop = subprocess.Popen([os.path.join(ROOT, "examples", "heartbeat-loop.sh")] + ids,
                                    env=env, preexec_fn=edgealloc_server.die_with_parent)
            time.sleep(3 * DEAD_AFTER_MS / 1000)
            statuses = {i: get(port, "/v1/containers/" + i)["status"] for i in ids}
            assert set(statuses.values()) == {"available"}, statuses
            assert get(port, "/v1/containers/lone-1")["status"] == "dead"
        finally:
            if loop is not None:
                loop.kill()
                loop.wait()
            edgealloc_server.stop(server)
    print("ok: examples/fleet.json registers %d containers; heartbeat-loop.sh keeps them alive" %
          len(ids))


if __name__ == "__main__":
    main()
