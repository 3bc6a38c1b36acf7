"""The nemesis test's view of the database (samples, the audit trigger) and
the nemesis itself: its faults and their schedule."""

import collections
import json
import subprocess
import threading
import time

from edgealloc_server import die_with_parent
import nemesis_faults
from nemesis_common import DEAD_AFTER_MS, KINDS, SHORT_KINDS, fleet_ids, log, now
from pg_server import DBNAME, PG_USER, clean_env, psql

# ---------------------------------------------------------------- database view

# Every change of a container's session, with the database's clock: when and
# how each session began and ended (a row's old values say why it ended);
# and every container made dead, with or without a session.
AUDIT_SQL = r"""
CREATE TABLE IF NOT EXISTS nemesis_audit (
  seq bigserial PRIMARY KEY, at_ms bigint, id text, old_session text, old_gen bigint,
  old_lease bigint, old_hb bigint, old_dead_reported boolean, new_session text, new_gen bigint,
  new_status text, new_lease bigint, new_tenant text, new_key text, slot bigint);
-- A session's row made (its claim) or deleted (its end), with its
-- container as the statement left it (an AFTER trigger sees the whole
-- statement's changes: a death ends the sessions and makes the container
-- dead in one statement).
CREATE OR REPLACE FUNCTION nemesis_audit_session() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  c containers%ROWTYPE;
  at bigint := (extract(epoch FROM clock_timestamp()) * 1000)::bigint;
BEGIN
  IF TG_OP = 'INSERT' THEN
    SELECT * INTO c FROM containers WHERE id = NEW.container_id;
    INSERT INTO nemesis_audit (at_ms, id, old_session, old_gen, old_lease, old_hb,
                               old_dead_reported, new_session, new_gen, new_status, new_lease,
                               new_tenant, new_key, slot)
    VALUES (at, NEW.container_id, NULL, NULL, NULL, c.last_heartbeat_ms, c.dead_reported,
            NEW.session_id, NEW.generation, c.status, NEW.lease_expires_at_ms, NEW.tenant,
            NEW.idempotency_key, NEW.slot);
  ELSE
    SELECT * INTO c FROM containers WHERE id = OLD.container_id;
    INSERT INTO nemesis_audit (at_ms, id, old_session, old_gen, old_lease, old_hb,
                               old_dead_reported, new_session, new_gen, new_status, new_lease,
                               new_tenant, new_key, slot)
    VALUES (at, OLD.container_id, OLD.session_id, OLD.generation, OLD.lease_expires_at_ms,
            c.last_heartbeat_ms, c.dead_reported, NULL, c.generation, c.status, NULL, NULL,
            NULL, OLD.slot);
  END IF;
  RETURN NULL;
END $$;
DROP TRIGGER IF EXISTS nemesis_audit_session ON sessions;
CREATE TRIGGER nemesis_audit_session AFTER INSERT OR DELETE ON sessions FOR EACH ROW
  EXECUTE FUNCTION nemesis_audit_session();
-- A container made dead (with or without sessions: theirs are above).
CREATE OR REPLACE FUNCTION nemesis_audit() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO nemesis_audit (at_ms, id, old_session, old_gen, old_lease, old_hb,
                             old_dead_reported, new_session, new_gen, new_status, new_lease,
                             new_tenant, new_key)
  VALUES ((extract(epoch FROM clock_timestamp()) * 1000)::bigint, NEW.id, NULL,
          OLD.generation, NULL, OLD.last_heartbeat_ms, OLD.dead_reported,
          NULL, NEW.generation, NEW.status, NULL, NULL, NULL);
  RETURN NULL;
END $$;
DROP TRIGGER IF EXISTS nemesis_audit ON containers;
CREATE TRIGGER nemesis_audit AFTER UPDATE ON containers FOR EACH ROW
  WHEN (NEW.status = 'dead' AND OLD.status IS DISTINCT FROM 'dead')
  EXECUTE FUNCTION nemesis_audit();
"""

# Each container with each of its sessions (a row a session; generation the
# session's token, container_generation the container's).
SAMPLE_SQL = r"""
SELECT json_build_object(
  'now', (extract(epoch FROM clock_timestamp()) * 1000)::bigint,
  'rows', (SELECT coalesce(json_agg(c), '[]') FROM (
     SELECT c.id, c.status, coalesce(s.generation, c.generation) AS generation,
            c.generation AS container_generation, s.session_id, s.slot, s.tenant,
            s.idempotency_key, s.lease_expires_at_ms, c.last_heartbeat_ms, c.drain_requested
     FROM containers c LEFT JOIN sessions s ON s.container_id = c.id) c),
  'quota', (SELECT coalesce(json_object_agg(tenant, n), '{}') FROM (
     SELECT tenant, count(*) AS n FROM sessions
     WHERE lease_expires_at_ms > (extract(epoch FROM clock_timestamp()) * 1000)::bigint
     GROUP BY tenant) q))
"""


def take_sample(hist, port):
    t0 = now()
    w0 = time.time()
    out = psql(port, SAMPLE_SQL, timeout=10)
    t1 = now()
    w1 = time.time()
    js = json.loads(out)
    s = {"a": t0, "b": t1, "db_ms": js["now"], "rows": js["rows"], "quota": js["quota"],
         "offset_ms": js["now"] - (w0 + w1) * 500.0}
    with hist.lock:
        hist.samples.append(s)
    return s


def read_audit(port):
    out = psql(port, "SELECT coalesce(json_agg(a ORDER BY seq), '[]') FROM nemesis_audit a",
               timeout=30)
    return json.loads(out)


# ---------------------------------------------------------------- nemesis

class Nemesis:
    def __init__(self, hist, nodes, proxies, primary, standby, rng, args):
        self.hist, self.nodes, self.proxies = hist, nodes, proxies
        self.primary, self.standby = primary, standby
        self.rng, self.args = rng, args
        self.db_port = primary.port      # where the test reads the database
        self.failed_over = False
        self.problems = []               # a fault that could not be injected or undone
        self.fsync_file = None           # the slow-fsync shim's delay, if preloaded
        self.required = [k for k in KINDS if k != "failover"]

    def record(self, kind, node, t0, detail, **extra):
        a = {"kind": kind, "node": node, "start": t0, "end": now(), "detail": detail}
        a.update(extra)
        with self.hist.lock:
            self.hist.actions.append(a)
        log("%-9s node %s  %.1f s  %s" % (kind, node, a["end"] - t0, detail))

    def restart(self, node, skew=None):
        node.kill()
        node.skew = skew
        if not node.start():
            self.problems.append("node %d did not restart (log %s)" % (node.idx, node.log_path))

    def run(self, kind):
        """One action of `kind`; True if it fired (was recorded)."""
        fired = len(self.hist.actions)
        self.act(kind)
        return len(self.hist.actions) > fired

    def act(self, kind):
        i = self.rng.randrange(len(self.nodes))
        node, proxy = self.nodes[i], self.proxies[i]
        t0 = now()
        if kind == "kill9":
            self.restart(node)
            self.record(kind, i, t0, "restart attempts failed so far: %d" % node.start_failures)
        elif kind == "pause":
            secs = self.rng.uniform(5, 12)
            node.pause()
            time.sleep(secs)
            node.resume()
            self.record(kind, i, t0, "SIGSTOP %.1f s" % secs)
        elif kind == "skew":
            secs = self.args.skew_seconds * self.rng.choice([1, -1])
            if self.args.skew_seconds >= 60:
                secs = abs(secs)  # the pre-fix check: ahead, past long leases
            self.restart(node, skew="%+ds" % secs)
            time.sleep(self.args.skew_hold)
            self.restart(node)
            self.record(kind, i, t0, "wall clock %+d s for %.0f s" % (secs, self.args.skew_hold))
        elif kind == "stall":
            secs = self.rng.uniform(*self.args.stall_range)
            proxy.stalled = True
            time.sleep(secs)
            proxy.stalled = False
            self.record(kind, i, t0, "database path stalled %.1f s" % secs)
        elif kind == "drop":
            secs = self.rng.uniform(1, 4)
            statements, commits = proxy.drop(secs)
            time.sleep(secs)
            self.record(kind, i, t0, "connections dropped, refused %.1f s; %d with a statement "
                        "in flight, %d with a COMMIT" % (secs, statements, commits))
        elif kind == "commitcut":
            before = proxy.commit_cuts
            proxy.armed_cut = True
            deadline = now() + 10
            while proxy.commit_cuts == before and now() < deadline:
                time.sleep(0.01)
            proxy.armed_cut = False
            cut = proxy.commit_cuts - before
            time.sleep(2)
            if cut:
                self.record(kind, i, t0, "a COMMIT's answer cut off in flight")
        elif kind == "longtxn":
            secs = self.rng.uniform(10, 20)
            # Like pg_dump: a lock on containers held in an open transaction.
            sql = "BEGIN; SELECT 1 FROM containers LIMIT 1; SELECT pg_sleep(%.1f); COMMIT;" % secs
            p = subprocess.Popen(["psql", "-X", "-q", "-h", "127.0.0.1", "-p", str(self.db_port),
                                  "-U", PG_USER, "-d", DBNAME, "-c", sql], env=clean_env(),
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                 preexec_fn=die_with_parent)
            time.sleep(1)
            held = p.poll() is None
            self.restart(node)
            try:
                p.wait(secs + 15)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
            if held:
                self.record(kind, i, t0, "transaction held %.0f s while node %d restarted (ready "
                            "after %.1f s)" % (secs, i, node.down[-1][1] - node.down[-1][0]
                                                if node.down[-1][1] else -1))
            else:
                self.problems.append("longtxn: psql ended at once (exit %s)" % p.returncode)
        elif kind in ("outage", "pause_db_restart"):
            self.db_restart(kind, i, node, t0)
        elif kind == "clockstep":
            nemesis_faults.clock_step(self, i, node, t0)
        elif kind == "rowlock":
            nemesis_faults.row_lock(self, i, self.rng.choice(fleet_ids()), t0)
        elif kind == "syncrep_cancel":
            nemesis_faults.syncrep_cancel(self, t0)
        elif kind == "slowfsync":
            nemesis_faults.slow_fsync(self, t0)
        elif kind == "failover":
            self.primary.stop_immediate()
            t_kill = now()
            # Longer than dead-after, as a failover manager's detection and
            # promotion are: no container is judged by the silence.
            time.sleep(self.rng.uniform(DEAD_AFTER_MS / 1000.0 + 1, DEAD_AFTER_MS / 1000.0 + 3))
            self.standby.promote()
            self.db_port = self.standby.port
            self.failed_over = True
            # Wait until some node answers a claim path again (any status but
            # 503 and no answer) to tell how long the outage was.
            self.record(kind, None, t0, "primary killed (immediate), standby promoted %.1f s "
                        "later (dead-after %.0f s)" % (now() - t_kill, DEAD_AFTER_MS / 1000.0))

    def db_restart(self, kind, i, node, t0):
        """outage: the database primary stopped (immediate) for longer than
        dead-after, then started, while every node goes on. pause_db_restart:
        node i paused while the primary stops and starts again."""
        pg = self.standby if self.failed_over else self.primary
        if kind == "outage":
            secs = self.rng.uniform(DEAD_AFTER_MS / 1000.0 + 1, DEAD_AFTER_MS / 1000.0 + 4)
        else:
            secs = self.rng.uniform(1, 3)
            node.pause()
        pg.stop_immediate()
        time.sleep(secs)
        try:
            pg.start()
        except (RuntimeError, subprocess.TimeoutExpired) as e:
            self.problems.append("%s: the database did not start again: %s %s"
                                 % (kind, e, pg.log_tail(5)))
            if kind != "outage":
                node.resume()
            return
        if kind == "outage":
            self.record(kind, None, t0, "database primary down %.1f s (immediate stop), "
                        "started again" % secs)
        else:
            time.sleep(self.rng.uniform(0.5, 2))
            node.resume()
            self.record(kind, i, t0, "node %d paused %.1f s; the database down %.1f s in it"
                        % (i, now() - t0, secs))

    def schedule(self, seconds):
        """Each kind at least once (failover last, late), then random kinds
        until `seconds` have passed, with quiet gaps between. A short run
        (up to 300 s, as in CI) draws SHORT_KINDS of the kinds, so that it
        stays as long as it was; a long one has them all."""
        start = now()
        order = [k for k in KINDS if k != "failover"]
        if self.args.kinds:
            order = [k for k in self.args.kinds.split(",") if k != "failover"]
        elif seconds <= 300:
            order = self.rng.sample(order, SHORT_KINDS)
        self.required = list(order)
        self.rng.shuffle(order)
        end = start + seconds
        fo_at = start + seconds * 0.75
        first = True
        tries = collections.Counter()
        while now() < end - 5 or order:
            time.sleep(self.rng.uniform(1.5, 3.5) if not first else 3)
            first = False
            if not self.failed_over and (now() >= fo_at and not order):
                kind = "failover"
            elif order:
                kind = order.pop()
            else:
                kind = self.rng.choice(self.required)
            tries[kind] += 1
            if not self.run(kind) and tries[kind] < 3 and kind != "failover":
                order.insert(0, kind)  # did not fire (no COMMIT passed): later, again
        if not self.failed_over:
            self.run("failover")


class Sampler(threading.Thread):
    def __init__(self, hist, nem, every=2.0):
        super().__init__(daemon=True)
        self.hist, self.nem, self.every = hist, nem, every
        self.stop = threading.Event()
        self.errors = 0

    def run(self):
        while not self.stop.wait(self.every):
            try:
                take_sample(self.hist, self.nem.db_port)
            except (RuntimeError, subprocess.TimeoutExpired, ValueError):
                self.errors += 1  # a failover in progress: the next one


