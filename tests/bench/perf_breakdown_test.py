#!/usr/bin/env python3
"""bench/perf_breakdown.py sorts perf samples by part of the request path.

Feeds it a hand-written `perf script` text (the shape perf 6 prints) and
checks the shares and the microseconds a cycle it derives."""
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "bench" / "perf_breakdown.py"


def Sample(*frames):
    head = "edgealloc  9392  1653.876372:     500250 cpu-clock:ppp: \n"
    return head + "".join(f"\t  {i:x} {f}+0x10 (/x)\n" for i, f in enumerate(frames)) + "\n"


# Leaf first, as perf prints them.
COMMIT = Sample("iowrite16", "__GI_fdatasync", "sqlite3WalFrames", "sqlite3_step",
                "store::Transaction::Commit", "store::Writer::CommitGroup", "store::Writer::Loop")
CLAIM = Sample("_int_malloc", "sqlite3VdbeExec", "sqlite3_step",
               "allocator::Allocator::ClaimJob::Apply", "store::Writer::CommitGroup")
WRITE = Sample("tcp_sendmsg_locked", "__libc_sendmsg", "server::Api::Release",
               "server::Router::Handle", "boost::asio::detail::scheduler::run")
# A release whose leaf is in mimalloc, which is stripped.
RELEASE = Sample("store::SqliteStorage::RunSessionCas", "store::Writer::Apply").replace(
    "\t  0 store::SqliteStorage::RunSessionCas+0x10 (/x)",
    "\t  0 [unknown] (/usr/lib/x86_64-linux-gnu/libmimalloc.so.2.0)\n"
    "\t  0 store::SqliteStorage::RunSessionCas+0x10 (/x)")
OTHER = Sample("clone3")
TEXT = COMMIT * 2 + CLAIM + WRITE * 4 + OTHER * 2 + RELEASE


def Run(*args):
    out = subprocess.run([sys.executable, str(SCRIPT), *args], input=TEXT, text=True,
                         capture_output=True, check=True).stdout
    return out


def Shares(out):
    """{part: percent} from lines `  40.0%  [  12.3 us]  part`."""
    shares = {}
    for line in out.splitlines():
        if line.startswith("#"):
            continue
        percent, rest = line.split("%", 1)
        rest = rest.strip()
        if rest[:1].isdigit():  # the us column
            rest = rest.split("us", 1)[1].strip()
        shares[rest] = float(percent)
    return shares


def Check(cond, what, out):
    if not cond:
        sys.exit(f"FAIL: {what}\n{out}")


def main():
    out = Run()
    Check("# 10 samples" in out, "counts every sample", out)
    by_part = Shares(out)
    Check(by_part.get("io: write response (serialize + sendmsg)") == 40.0,
          "a sendmsg under a route handler is the response write, not the handler", out)
    Check(by_part.get("writer: commit (WAL write + fdatasync)") == 20.0,
          "an fdatasync inside COMMIT is the commit", out)
    Check(by_part.get("writer: claim statement") == 10.0, "the claim's SQL", out)
    Check(by_part.get("writer: release statement") == 10.0, "the release's job", out)
    Check(by_part.get("(across the parts: in malloc/free)") == 20.0,
          "malloc near the leaf, glibc's by name and mimalloc's by its library", out)
    Check(any(k.startswith("other") and v == 20.0 for k, v in by_part.items()),
          "unknown stacks are other", out)

    # 10 samples at 1,000 Hz over 1 s is 0.01 core; at 100 cycles/s that is
    # 100 us a cycle, 40 of them writing responses.
    out = Run("--frequency", "1000", "--seconds", "1", "--cycles-per-s", "100")
    Check("server used 0.01 cores: 100.0 us of CPU a cycle" in out, "CPU a cycle", out)
    Check(any("40.0 us" in line and "write response" in line for line in out.splitlines()),
          "us a cycle of a part", out)
    Check(Shares(out).get("io: write response (serialize + sendmsg)") == 40.0,
          "the shares do not change with the us column", out)

    empty = subprocess.run([sys.executable, str(SCRIPT)], input="", text=True,
                           capture_output=True)
    Check(empty.returncode != 0 and "no samples" in empty.stderr, "no input is an error",
          empty.stderr)
    print("perf_breakdown: ok")


if __name__ == "__main__":
    main()
