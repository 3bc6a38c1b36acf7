#!/usr/bin/env python3
"""Where the server's CPU went, by part of the request path.

Reads `perf script` output of the server (recorded with call graphs) on
stdin and sorts each sample into the first part whose frames it holds:

    perf script -i server.perf | bench/perf_breakdown.py --cycles-per-s N --seconds S

With the cycles a second of the load and the length of the recording, it
also gives each part in microseconds of CPU a claim+release cycle. Used by
bench/profile.sh; the order of RULES matters (a commit runs inside the
writer's loop, a response is written from inside a handler's completion).
"""
import argparse
import collections
import re
import sys

RULES = [
    ("writer: commit (WAL write + fdatasync)",
     ["Transaction::Commit", "sqlite3WalFrames", "fdatasync", "unixSync"]),
    ("writer: claim statement", ["ClaimJob::Apply"]),
    ("writer: release statement", ["SessionCasJob::Apply", "RunSessionCas"]),
    ("writer: queue, Done, post to io", ["store::Writer::"]),
    ("io: write response (serialize + sendmsg)",
     ["sendmsg", "write_op", "async_write", "WriteResponse", "Serialize"]),
    ("io: JSON", ["nlohmann"]),
    ("io: route + handler", ["server::Router", "server::Api", "allocator::Allocator"]),
    ("io: read + parse request",
     ["read_op", "read_some_op", "basic_parser", "recvmsg", "transfer_op<true"]),
    ("io: epoll + scheduler", ["epoll_wait", "scheduler::run", "scheduler::do_run"]),
]
OTHER = "other (threads outside the request path, unknown frames)"
MALLOC = re.compile(r"^(_int_malloc|_int_free|malloc|free|cfree|__GI___libc_malloc|"
                    r"__GI___libc_free|operator new|operator delete|malloc_consolidate|"
                    r"_int_realloc|realloc)\b")
# mimalloc, the server's malloc (CMakeLists.txt), is stripped: its frames are
# "[unknown] (.../libmimalloc.so...)".
MALLOC_LIBRARY = "libmimalloc"


def Samples(lines):
    """Yields the frames (leaf first) of each sample of `perf script`."""
    stack, in_sample = [], False
    for line in lines:
        line = line.rstrip("\n")
        if not line:
            if in_sample:
                yield stack
            stack, in_sample = [], False
        elif line[0] not in " \t":
            in_sample = True
        else:
            parts = line.strip().split(" ", 1)
            stack.append(parts[1] if len(parts) > 1 else parts[0])
    if in_sample:
        yield stack


def Main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cycles-per-s", type=float, default=0,
                    help="cycles a second of the load during the recording")
    ap.add_argument("--seconds", type=float, default=0, help="length of the recording")
    ap.add_argument("--frequency", type=float, default=0, help="perf record -F")
    args = ap.parse_args()

    total, in_malloc = 0, 0
    parts = collections.Counter()
    for stack in Samples(sys.stdin):
        total += 1
        if any(MALLOC.match(frame) or MALLOC_LIBRARY in frame for frame in stack[:3]):
            in_malloc += 1
        joined = "\n".join(stack)
        for name, keys in RULES:
            if any(k in joined for k in keys):
                parts[name] += 1
                break
        else:
            parts[OTHER] += 1
    if total == 0:
        sys.exit("perf_breakdown: no samples on stdin")

    # CPU microseconds a cycle: samples / frequency = CPU seconds.
    per_cycle = 0.0
    if args.cycles_per_s > 0 and args.seconds > 0 and args.frequency > 0:
        per_cycle = 1e6 / (args.frequency * args.seconds * args.cycles_per_s)
        cores = total / (args.frequency * args.seconds)
        print(f"# server used {cores:.2f} cores: {total * per_cycle:.1f} us of CPU a cycle")
    print(f"# {total} samples; share of the server's CPU, then us a claim+release cycle")

    def Row(count, name):
        us = f"{count * per_cycle:6.1f} us" if per_cycle else ""
        print(f"{100.0 * count / total:5.1f}%  {us}  {name}")

    names = [name for name, _ in RULES] + [OTHER]
    for name in sorted(names, key=lambda n: -parts[n]):
        Row(parts[name], name)
    Row(in_malloc, "(across the parts: in malloc/free)")


if __name__ == "__main__":
    Main()
