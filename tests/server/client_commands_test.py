"""`edgealloc sessions ...`, `edgealloc containers ...`, `edgealloc pressure` and
`edgealloc events watch` against the real server: each prints the JSON reply and exits 0 for 2xx, 3 for 409/410, 4 for
another 4xx, 5 for 5xx or no answer (docs/api.md "Client commands"); the key
comes from --key or EDGEALLOC_KEY, the flag first."""

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

BIN = sys.argv[1]


def run(args, key=None, env_key=None):
    env = dict(os.environ)
    env.pop("EDGEALLOC_KEY", None)
    if env_key:
        env["EDGEALLOC_KEY"] = env_key
    argv = [BIN] + args + (["--key", key] if key else [])
    p = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=30)
    body = json.loads(p.stdout) if p.stdout.strip() else None
    return p.returncode, body, p.stderr


def main():
    with tempfile.TemporaryDirectory() as tmp:
        keys = edgealloc_server.keys_file(tmp, "k-admin admin\nk-acme tenant acme\n")
        port = edgealloc_server.free_port()
        server = edgealloc_server.serve(BIN, os.path.join(tmp, "c.db"), port,
                                        ["--keys", keys, "--demo",
                                         "--backup-region", "edge=weur"],
                                        preexec_fn=edgealloc_server.die_with_parent)
        s = "--server=http://127.0.0.1:%d" % port
        try:
            assert edgealloc_server.wait_answers(port, "/readyz", server)
            # A claim with the key from the environment, labels and a lease.
            rc, claim, err = run(["sessions", "claim", s, "--region", "weur", "--pool", "chrome",
                                  "--label", "owner=ci", "--lease-ms", "30000"], env_key="k-acme")
            assert rc == 0, (rc, claim, err)
            assert claim["tenant"] == "acme" and claim["labels"] == {"owner": "ci"}, claim
            sid, token = claim["session_id"], claim["token"]
            rc, got, _ = run(["sessions", "get", sid, s], key="k-acme")
            assert rc == 0 and got["session_id"] == sid, (rc, got)
            assert claim["served_by"] == "home" and "served by" not in err, (claim, err)
            # A region with nothing of the pool is served by its backup, and says so.
            rc, backed, err = run(["sessions", "claim", s, "--region", "edge", "--pool", "chrome"],
                                  key="k-acme")
            assert rc == 0 and backed["region"] == "weur" and backed["served_by"] == "backup", \
                (rc, backed, err)
            assert "served by the backup region weur" in err, err
            rc, _, _ = run(["sessions", "release", backed["session_id"], s,
                            "--token", str(backed["token"])], key="k-acme")
            assert rc == 0
            # A flag beats the environment, as for serve: a typed key is used.
            rc, got, err = run(["sessions", "get", sid, s], key="k-acme", env_key="wrong")
            assert rc == 0 and got["session_id"] == sid, (rc, got, err)
            rc, page, err = run(["containers", "list", s, "--limit", "1"], key="k-admin",
                                env_key="k-acme")
            assert rc == 0 and len(page["containers"]) == 1, (rc, page, err)
            rc, renewed, _ = run(["sessions", "renew", sid, s, "--token", str(token)], key="k-acme")
            assert rc == 0 and renewed["token"] == token, (rc, renewed)
            rc, stale, _ = run(["sessions", "renew", sid, s, "--token", str(token + 7)], key="k-acme")
            assert rc == 3 and stale["error"]["code"] == "stale_token", (rc, stale)
            rc, page, _ = run(["sessions", "list", s, "--label", "owner:ci"], key="k-acme")
            assert rc == 0 and [x["session_id"] for x in page["sessions"]] == [sid], page
            rc, none, _ = run(["sessions", "release", sid, s, "--token", str(token)], key="k-acme")
            assert rc == 0 and none is None, (rc, none)
            rc, missing, _ = run(["sessions", "get", "s_no_such", s], key="k-acme")
            assert rc == 4 and missing["error"]["code"] == "not_found", (rc, missing)
            rc, unauthorized, _ = run(["sessions", "get", sid, s], key="wrong")
            assert rc == 4 and unauthorized["error"]["code"] == "unauthorized", unauthorized
            # A pool nobody registered cannot free up: 4, not 5 ("retry later").
            rc, refused, _ = run(["sessions", "claim", s, "--region", "nowhere"], key="k-acme")
            assert rc == 4 and refused["error"]["code"] == "unknown_pool", (rc, refused)
            # Containers, as the admin.
            rc, page, _ = run(["containers", "list", s, "--region", "weur", "--limit", "2"],
                              key="k-admin")
            assert rc == 0 and len(page["containers"]) == 2 and page["next_cursor"], page
            rc, drained, _ = run(["containers", "drain", "demo-weur-chrome-0", s], key="k-admin")
            assert rc == 0 and drained["status"] == "draining", drained
            rc, forbidden, _ = run(["containers", "drain", "demo-weur-chrome-0", s], key="k-acme")
            assert rc == 4 and forbidden["error"]["code"] == "forbidden", forbidden
            rc, got, _ = run(["containers", "get", "demo-weur-chrome-0", s], key="k-admin")
            assert rc == 0 and got["id"] == "demo-weur-chrome-0", got
            # Attributes, a selector and the attribute filter.
            fleet = {"containers": [
                {"id": "gpu-1", "region": "weur", "pool": "gpu", "attributes": {"gpu": "a100"}},
                {"id": "gpu-2", "region": "weur", "pool": "gpu",
                 "attributes": {"gpu": "t4", "zone": "b"}}]}
            urllib.request.urlopen(urllib.request.Request(
                "http://127.0.0.1:%d/v1/containers" % port, data=json.dumps(fleet).encode(),
                headers={"Authorization": "Bearer k-admin", "Content-Type": "application/json"}))
            rc, page, err = run(["containers", "list", s, "--attribute", "gpu=t4"], key="k-admin")
            assert rc == 0 and [c["id"] for c in page["containers"]] == ["gpu-2"], (rc, page, err)
            rc, got, err = run(["sessions", "claim", s, "--region", "weur", "--pool", "gpu",
                                "--selector", "gpu=h100,t4", "--selector", "zone=b"], key="k-acme")
            assert rc == 0 and got["container_id"] == "gpu-2", (rc, got, err)
            got_gpu = got["session_id"]
            rc, none, _ = run(["sessions", "claim", s, "--region", "weur", "--pool", "gpu",
                               "--selector", "gpu=h100", "--wait-ms", "20000"], key="k-acme")
            assert rc == 4 and none["error"]["code"] == "no_match", (rc, none)
            rc, _, err = run(["containers", "list", s, "--attribute", "gpu"], key="k-admin")
            assert rc == 2 and "--attribute" in err, (rc, err)
            # The gpu pool's pressure, once the mirror saw it (a tenant key).
            for _ in range(100):
                rc, got, err = run(["pressure", s, "--region", "weur", "--pool", "gpu"], key="k-acme")
                if rc == 0 and got["slots_used"] == 1:
                    break
                time.sleep(0.1)
            assert rc == 0 and (got["region"], got["pool"], got["slots"]) == ("weur", "gpu", 2), got
            assert got["slots_free"] == 1 and got["recommended_buffer"] == 0, got
            rc, none, _ = run(["pressure", s, "--region", "weur", "--pool", "gpus"], key="k-acme")
            assert rc == 4 and none["error"]["code"] == "unknown_pool", (rc, none)
            rc, _, err = run(["pressure", s, "--pool", "gpu"], key="k-acme")
            assert rc == 2 and "--region" in err, (rc, err)
            # The tenant's own session.claimed events, one JSON line each, in order.
            w = subprocess.run([BIN, "events", "watch", s, "--type", "session.claimed",
                                "--max-events", "3", "--key", "k-acme"],
                               capture_output=True, text=True, timeout=30)
            lines = [json.loads(line) for line in w.stdout.splitlines()]
            assert w.returncode == 0 and [e["session_id"] for e in lines] == \
                [sid, backed["session_id"], got_gpu], (w.returncode, w.stdout, w.stderr)
            # A usage error is 2 and names the flag; nothing answering is 5.
            rc, _, err = run(["sessions", "claim", s, "--label", "nolabel", "--region", "weur"],
                             key="k-acme")
            assert rc == 2 and "--label" in err, (rc, err)
        finally:
            edgealloc_server.stop(server)
        rc, _, err = run(["sessions", "get", "x", "--server=http://127.0.0.1:%d" % port])
        assert rc == 5 and "did not answer" in err, (rc, err)
    print("ok: the client commands print the reply and exit by its status")


if __name__ == "__main__":
    main()
