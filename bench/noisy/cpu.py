"""Where the cores go in a noisy-neighbour phase: which cores the server, the
victim's client and the abuser's load generator run on, what each of the
server's threads is (its io threads, the reader pool, the group writer, the
heartbeat lanes...), and the CPU each of them used over a phase.

Roles are read once from the running server's stacks (`gdb -batch`, a pause
of about a second before anything is measured): the server names none of
its threads, and a thread's role is what its stack's outermost frames run
(the loop it was started in, not whatever it happened to call then). A
binary without symbols, or a machine without gdb, gives only the total."""

import os
import re
import subprocess

CLK_TCK = os.sysconf("SC_CLK_TCK")
VICTIM_NICE = -10

# A frame's text to the role of its thread; the first that matches wins.
ROLES = [
    ("ReaderPool", "readers"),
    ("GroupWriter", "writer"),
    ("LaneLoop", "heartbeat lanes"),
    ("ReaperLoop", "heartbeat reaper"),
    ("Hearing", "hearing watch"),
    ("WaitingRoom", "waiting room"),
    ("LeaseReaper", "lease reaper"),
    ("FleetClaims", "fleet claims"),
    ("kvmirror", "mirror"),
    ("TenantLimitsWatch", "limits watch"),
    ("HttpServer", "io"),
    ("io_context::run", "io"),
    ("scheduler::run", "io"),
    (" main ", "main"),
]


class Placement:
    """Cores for the server, the victim (this process) and the abuser's load
    generator (its child). Three or more cores: the victim and the
    generator each alone on one, the server on the rest. Two: the server on
    one, both clients on the other. One (or --no-pin): nothing pinned."""

    def __init__(self, pin=True, server_nice=0):
        cores = sorted(os.sched_getaffinity(0))
        self.all = set(cores)
        self.victim_nice = 0
        self.server_nice = server_nice
        if not pin or len(cores) < 2:
            self.server = self.victim = self.attacker = None
            self.text = ("not pinned (%s): the server, both clients and whatever else runs share %d core%s"
                         % ("--no-pin" if pin is False else "one core", len(cores), "s" * (len(cores) > 1)))
        elif len(cores) == 2:
            self.server, self.victim, self.attacker = {cores[0]}, {cores[1]}, {cores[1]}
            self.text = ("pinned: the server on core %d, tenant B's client and tenant A's load generator "
                         "both on core %d (2 cores)" % (cores[0], cores[1]))
        else:
            self.server = set(cores[:-2])
            self.victim, self.attacker = {cores[-1]}, {cores[-2]}
            self.text = ("pinned: the server on cores %s, tenant B's client alone on core %d, tenant A's "
                         "load generator alone on core %d" % (
                             ",".join(map(str, cores[:-2])), cores[-1], cores[-2]))

    def preexec(self, cores, nice=0):
        """A Popen preexec_fn that pins the child (and every thread it starts)
        at priority `nice` (the ordinary one unless told), whatever this
        process's; a priority it may not take leaves it at the ordinary one."""
        def run():
            if cores:
                os.sched_setaffinity(0, cores)
            try:
                os.setpriority(os.PRIO_PROCESS, 0, nice)
            except OSError:
                os.setpriority(os.PRIO_PROCESS, 0, 0)
        return run

    def server_preexec(self):
        return self.preexec(self.server, self.server_nice)

    def pin_self(self):
        """This process (B's client) on its cores, and ahead of A's generator
        where they share one: B's threads, started after it, inherit both."""
        if self.victim:
            os.sched_setaffinity(0, self.victim)
        try:
            os.setpriority(os.PRIO_PROCESS, 0, VICTIM_NICE)
            self.victim_nice = VICTIM_NICE
        except OSError:  # not permitted: B competes with A's generator as an equal
            self.victim_nice = 0

    def unpin_self(self):
        os.sched_setaffinity(0, self.all)
        os.setpriority(os.PRIO_PROCESS, 0, 0)

    def describe(self):
        if self.victim_nice:
            s = self.text + "; B's client at nice %d, so that it runs before A's generator" % self.victim_nice
        else:
            s = self.text + "; B's client at the ordinary priority (raising it was not permitted)"
        if self.server_nice:
            s += "; the server at nice %d (--server-nice: ahead of other work on its core)" % self.server_nice
        return s


def thread_roles(pid, timeout=30):
    """{tid: role} from one gdb backtrace of every thread; {} without gdb."""
    try:
        out = subprocess.run(["gdb", "-p", str(pid), "-batch", "-nx", "-ex", "set pagination off",
                              "-ex", "thread apply all bt -12"],
                             capture_output=True, text=True, timeout=timeout).stdout
    except (OSError, subprocess.TimeoutExpired):
        return {}
    roles = {}
    for block in re.split(r"\n(?=Thread \d+ )", out):
        m = re.match(r"Thread \d+ \(Thread 0x[0-9a-f]+ \(LWP (\d+)\)", block)
        if not m:
            continue
        frames = block.replace("(", " ").replace(")", " ")
        roles[int(m.group(1))] = next((role for needle, role in ROLES if needle in frames), "other")
    return roles


def _ticks(stat_path):
    """utime + stime of /proc/.../stat, in ticks; None when it is gone."""
    try:
        with open(stat_path) as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return int(fields[11]) + int(fields[12])


def _cores_busy():
    """{core: (busy ticks, all ticks)} from /proc/stat."""
    out = {}
    with open("/proc/stat") as f:
        for line in f:
            m = re.match(r"cpu(\d+) (.*)", line)
            if m:
                v = [int(x) for x in m.group(2).split()]
                idle = v[3] + v[4]  # idle, iowait
                out[int(m.group(1))] = (sum(v) - idle, sum(v))
    return out


def rss_mb(pid):
    try:
        with open("/proc/%d/status" % pid) as f:
            m = re.search(r"^VmRSS:\s+(\d+) kB", f.read(), re.M)
        return round(int(m.group(1)) / 1024, 1) if m else None
    except OSError:
        return None


def waited_ns(task_dir="/proc/thread-self"):
    """Time a thread has spent runnable but waiting for a core (schedstat)."""
    try:
        with open(task_dir + "/schedstat") as f:
            return int(f.read().split()[1])
    except (OSError, IndexError, ValueError):
        return 0


def _tasks(pid):
    try:
        return os.listdir("/proc/%s/task" % pid)
    except OSError:
        return []


class Sample:
    """CPU of the server's threads, of the generator, of this process and of
    each core, at one moment; `since` an earlier one gives cores used."""

    def __init__(self, server_pid, child_pid):
        self.server, self.server_wait = {}, {}
        for tid in _tasks(server_pid):
            t = _ticks("/proc/%d/task/%s/stat" % (server_pid, tid))
            if t is not None:
                self.server[int(tid)] = t
                self.server_wait[int(tid)] = waited_ns("/proc/%d/task/%s" % (server_pid, tid))
        self.child = _ticks("/proc/%d/stat" % child_pid) if child_pid else None
        self.me = _ticks("/proc/self/stat")
        self.cores = _cores_busy()
        self.t = os.times().elapsed

    def since(self, before, roles, placement):
        dt = max(self.t - before.t, 1e-6)
        per = lambda ticks: ticks / CLK_TCK / dt  # noqa: E731
        by_role, waited = {}, {}
        for tid, t in self.server.items():
            role = roles.get(tid, "unknown")
            by_role[role] = by_role.get(role, 0) + per(t - before.server.get(tid, 0))
            w = (self.server_wait[tid] - before.server_wait.get(tid, 0)) / 1e9 / dt
            waited[role] = waited.get(role, 0) + w
        busy = {c: (b - before.cores[c][0]) / max(1, a - before.cores[c][1])
                for c, (b, a) in self.cores.items() if c in before.cores}
        out = {"server": round(sum(by_role.values()), 2),
               "server_roles": {k: round(v, 2) for k, v in sorted(by_role.items(), key=lambda kv: -kv[1])},
               "generator": round(per(self.child - before.child), 2) if self.child is not None
               and before.child is not None else None,
               "server_waited": round(sum(waited.values()), 2),
               "server_roles_waited": {k: round(v, 2) for k, v in sorted(waited.items(), key=lambda kv: -kv[1])},
               "victim_client": round(per(self.me - before.me), 2),

               "machine_busy": round(sum(busy.values()), 2)}
        if placement.server:
            out["server_cores_busy"] = round(sum(busy[c] for c in placement.server) / len(placement.server), 2)
            clients = placement.victim | placement.attacker
            out["client_cores_busy"] = round(sum(busy[c] for c in clients) / len(clients), 2)
        return out


def describe(cpu):
    """One line of what a phase's CPU went to."""
    roles = ", ".join("%s %.2f" % kv for kv in cpu["server_roles"].items() if kv[1] >= 0.01)
    waited = ", ".join("%s %.2f" % kv for kv in cpu["server_roles_waited"].items() if kv[1] >= 0.01)
    s = ("server %.2f cores (%s), its threads runnable but waiting for a core %.2f s a second (%s); "
         "A's generator %s; B's client %.2f, waiting for its core %.3f s a second; all cores %.2f busy" % (
             cpu["server"], roles or "idle", cpu["server_waited"], waited or "none",
             "%.2f" % cpu["generator"] if cpu["generator"] is not None else "-",
             cpu["victim_client"], cpu.get("victim_client_waited", 0), cpu["machine_busy"]))
    if "server_cores_busy" in cpu:
        s += " (the server's cores %d%%, the clients' %d%%)" % (
            100 * cpu["server_cores_busy"], 100 * cpu["client_cores_busy"])
    return s
