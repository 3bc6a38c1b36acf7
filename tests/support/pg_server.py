"""A PostgreSQL 15 server for the Python tests (the nemesis, the deafness
test): its own folder and port, started and stopped with pg_ctl, run as the
`postgres` user when the test runs as root. Standard library only; import it
as tests/support/edgealloc_server.py says.
"""

import os
import pwd
import subprocess

from edgealloc_server import free_port

PG_BIN = "/usr/lib/postgresql/15/bin/"
# libfaketime for a PostgreSQL server whose wall clock a test steps: one
# process a backend, so the single-threaded variant.
FAKETIME_LIB = "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1"
PG_USER = "edgealloc"
DBNAME = "fleet"


def clean_env():
    """PG* variables of our environment left out: only arguments say where."""
    return {k: v for k, v in os.environ.items() if not k.startswith("PG")}


def psql(port, sql, db=DBNAME, timeout=20):
    """One psql call over TCP; its output (unaligned, tuples only)."""
    r = subprocess.run(["psql", "-X", "-q", "-At", "-v", "ON_ERROR_STOP=1", "-h", "127.0.0.1",
                        "-p", str(port), "-U", PG_USER, "-d", db, "-c", sql],
                       env=clean_env(), capture_output=True, text=True, timeout=timeout)
    if r.returncode != 0:
        raise RuntimeError("psql: %s: %s" % (sql[:60], r.stderr.strip()))
    return r.stdout


class PgServer:
    """A PostgreSQL 15 server in its own folder (`fsync` off for speed where a
    test does not lose power); as root it runs as the
    `postgres` user through setpriv (initdb and postgres refuse root)."""

    def __init__(self, root, name, fsync, faketime=False, env=None):
        self.dir = os.path.join(root, name)
        os.mkdir(self.dir)
        self.data = os.path.join(self.dir, "data")
        self.log = os.path.join(self.dir, "server.log")
        self.fsync = fsync
        self.port = None
        # faketime: the server's wall clock is libfaketime's, offset by
        # what step_clock last set (its monotonic clock left alone), as a
        # database host's whose clock an NTP step or `date -s` moves.
        # env: more environment for its processes (an LD_PRELOAD shim).
        self.env = dict(env or {})
        if faketime:
            self.clock_file = os.path.join(self.dir, "clock")
            preload = ":".join(p for p in (self.env.get("LD_PRELOAD"), FAKETIME_LIB) if p)
            self.env.update({"LD_PRELOAD": preload, "FAKETIME_TIMESTAMP_FILE": self.clock_file,
                             "FAKETIME_NO_CACHE": "1", "FAKETIME_DONT_FAKE_MONOTONIC": "1"})
            self.step_clock(0)
        if os.geteuid() == 0:
            pw = pwd.getpwnam("postgres")
            os.chown(self.dir, pw.pw_uid, pw.pw_gid)
            p = os.path.dirname(self.dir)
            while p and p != "/":  # the postgres user must pass through
                st = os.stat(p)
                if not st.st_mode & 0o001:
                    os.chmod(p, (st.st_mode & 0o7777) | 0o001)
                p = os.path.dirname(p)

    def step_clock(self, offset_s):
        """Sets the wall clock of a faketime server to the real time plus
        offset_s, at once for every process of it (libfaketime reads the
        file at each call): replaced whole, so no read sees half of it."""
        tmp = self.clock_file + ".tmp"
        with open(tmp, "w") as f:
            f.write("%+d\n" % offset_s)
        os.chmod(tmp, 0o644)
        os.rename(tmp, self.clock_file)

    def run(self, argv, timeout=60):
        env = dict(clean_env(), **self.env)
        if os.geteuid() == 0:
            # libfaketime is loaded past setpriv: loaded in it, it would make
            # its semaphore as root, which the postgres user may not open.
            argv = ["/usr/bin/setpriv", "--reuid=postgres", "--regid=postgres",
                    "--init-groups", "--", "/usr/bin/env"] + [
                        "%s=%s" % kv for kv in sorted(self.env.items())] + argv
            env = clean_env()
        out = os.path.join(self.dir, "command.out")
        # A file, not a pipe: the server pg_ctl starts would hold a pipe open.
        with open(out, "wb") as f:
            r = subprocess.run(argv, cwd=self.dir, stdout=f, stderr=subprocess.STDOUT,
                               stdin=subprocess.DEVNULL, env=env, timeout=timeout)
        if r.returncode != 0:
            with open(out, errors="replace") as f:
                text = f.read()
            raise RuntimeError("%s failed (%d):\n%s\n%s" % (" ".join(argv), r.returncode, text,
                                                           self.log_tail()))

    def write_conf(self, extra):
        self.port = free_port()
        path = os.path.join(self.data, "test.conf")
        with open(path, "w") as f:
            f.write("port = %d\nlisten_addresses = '127.0.0.1'\n"
                    "unix_socket_directories = '%s'\nmax_connections = 200\n"
                    "fsync = %s\nrecovery_init_sync_method = syncfs\n"
                    # Waits on locks of a second or more are logged: a node
                    # that does not answer is then explained.
                    "log_lock_waits = on\nlog_line_prefix = '%%m [%%p] %%a '\n%s\n"
                    % (self.port, self.dir, "on" if self.fsync else "off", extra))
        if os.geteuid() == 0:
            pw = pwd.getpwnam("postgres")
            os.chown(path, pw.pw_uid, pw.pw_gid)

    def init_primary(self, sync_standby=True):
        self.run([PG_BIN + "initdb", "-D", self.data, "-A", "trust", "-U", PG_USER, "--no-sync",
                  "-E", "UTF8", "--locale=C"])
        with open(os.path.join(self.data, "postgresql.conf"), "a") as f:
            f.write("\ninclude 'test.conf'\n")
        # Commits wait for the standby named 'standby': an acknowledged write
        # is on both.
        self.write_conf("synchronous_standby_names = 'standby'" if sync_standby else "")
        self.start()

    def init_standby(self, primary):
        # -R: standby.signal and primary_conninfo; -X stream: the WAL of the
        # backup streamed with it. The copied test.conf is rewritten.
        self.run([PG_BIN + "pg_basebackup", "-D", self.data, "-R", "-X", "stream", "-c", "fast",
                  "--no-sync", "-h", "127.0.0.1", "-p", str(primary.port), "-U", PG_USER])
        # cluster_name is what the primary's synchronous_standby_names names;
        # an empty one of its own, so once promoted its commits do not wait
        # for a standby that does not exist.
        self.write_conf("cluster_name = 'standby'\nsynchronous_standby_names = ''")
        self.start()

    def start(self):
        self.run([PG_BIN + "pg_ctl", "-D", self.data, "-l", self.log, "-w", "-t", "30", "start"])

    def stop_immediate(self):
        try:
            self.run([PG_BIN + "pg_ctl", "-D", self.data, "-m", "immediate", "-w", "-t", "30",
                      "stop"])
        except (RuntimeError, subprocess.TimeoutExpired):
            pass

    def promote(self):
        self.run([PG_BIN + "pg_ctl", "-D", self.data, "-w", "-t", "30", "promote"])

    def log_tail(self, n=20):
        try:
            with open(self.log, errors="replace") as f:
                return "".join(f.readlines()[-n:])
        except OSError:
            return ""
