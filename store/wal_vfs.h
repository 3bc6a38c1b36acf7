#ifndef EDGEALLOC_STORE_WAL_VFS_H_
#define EDGEALLOC_STORE_WAL_VFS_H_

#include <cstdint>

#include "store/status.h"

namespace store {

// The name of an SQLite VFS that writes a WAL commit with one pwrite.
//
// SQLite writes each WAL frame with two pwrite calls (its 24-byte header,
// then the page), so a group commit of 60 claims, about 35 frames, costs 70
// system calls; in this VM that was half of the writer thread's time. This
// VFS wraps the default one and, for WAL files only, gathers consecutive
// writes in a buffer that goes to the file in one call when SQLite syncs the
// WAL, reads it, truncates it, asks its size or closes it.
//
// It is only correct with synchronous=FULL, and Db::Open uses it only then:
// in FULL, walFrames syncs the WAL after writing a commit's frames and before
// it publishes them in the wal-index, so no other connection can see a frame
// that is still in the buffer. Under NORMAL there is no such sync, and the
// buffer would hide published frames from readers. The main database file
// and the wal-index pass straight through.
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

#endif  // EDGEALLOC_STORE_WAL_VFS_H_
