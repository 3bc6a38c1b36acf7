#ifndef EDGEALLOC_STORE_SQLITE_WAL_VFS_H_
#define EDGEALLOC_STORE_SQLITE_WAL_VFS_H_

#include <cstdint>

#include "store/status.h"

namespace store {

// The name of an SQLite VFS that writes a WAL commit with one pwrite.
//
// SQLite writes each WAL frame with two pwrite calls (its 24-byte header,
// then the page): two system calls a frame, a large share of the writer
// thread's time (docs/performance.md says how much). This VFS wraps the
// default one and, for WAL files only, gathers consecutive
// writes in a buffer that goes to the file in one call when SQLite syncs the
// WAL, reads it, truncates it, asks its size or closes it.
//
// It is only correct with synchronous=FULL, and Db::Open uses it only then:
// in FULL, walFrames syncs the WAL after writing a commit's frames and before
// it publishes them in the wal-index, so no other connection can see a frame
// that is still in the buffer. Under NORMAL there is no such sync, and the
// buffer would hide published frames from readers. The main database file
// and the wal-index pass straight through. On a connection through it,
// PRAGMA synchronous below FULL and PRAGMA locking_mode=EXCLUSIVE (which
// hides the write lock, below) fail with an error that says why.
//
// After a sync of the WAL in a write transaction (other than the sync of a
// fresh WAL's header) writes go straight through: with powersafe overwrite
// off (?psow=0, or a device without SQLITE_IOCAP_POWERSAFE_OVERWRITE) SQLite
// pads a commit to a sector boundary with copies of its last frame, syncs
// at the boundary, in the middle of a copy, and writes the rest of that copy
// after the sync; no later sync of the transaction would flush it.
//
// What is gathered is only ever written inside the write transaction that
// wrote it: when the connection lets go of the WAL write lock (commit,
// rollback, or SQLite's own rollback after an error) or closes, whatever is
// left is dropped, since a committed transaction's frames were synced and so
// flushed before (and what it wrote after that sync went through). A WAL that cannot be paired with its connection's main
// file (so its write lock cannot be seen) is written through. A flush that
// fails makes every call on that WAL fail with SQLITE_IOERR_WRITE until the
// write lock goes, so SQLite rolls the whole transaction back (a plain
// SQLITE_FULL could roll back one statement and commit the rest without the
// frames that were lost). tests/store/sqlite/wal_vfs_test.cc and
// tests/fault/ inject both.
inline constexpr char kCoalescingWalVfs[] = "edgealloc-wal";

// Registers the VFS (not as the default). Thread-safe and idempotent.
Status RegisterCoalescingWalVfs();

// Counters of the VFS, for tests and benchmarks.
struct CoalescingWalStats {
  uint64_t writes = 0;   // xWrite calls on WAL files
  uint64_t flushes = 0;  // pwrites that carried them
};
CoalescingWalStats GetCoalescingWalStats();

}  // namespace store

#endif  // EDGEALLOC_STORE_SQLITE_WAL_VFS_H_
