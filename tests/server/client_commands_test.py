"""`edgealloc sessions ...` and `edgealloc containers ...` against the real
server: each prints the JSON reply and exits 0 for 2xx, 3 for 409/410, 4 for
another 4xx, 5 for 5xx or no answer (docs/api.md "Client commands"); the key
comes from --key or EDGEALLOC_KEY, the flag first."""

import json
import os
import subprocess
import sys
import tempfile

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
                                        ["--keys", keys, "--demo"],
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
            rc, refused, _ = run(["sessions", "claim", s, "--region", "nowhere"], key="k-acme")
            assert rc == 5 and refused["error"]["code"] == "no_capacity", (rc, refused)
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
