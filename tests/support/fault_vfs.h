#ifndef EDGEALLOC_TESTS_SUPPORT_FAULT_VFS_H_
#define EDGEALLOC_TESTS_SUPPORT_FAULT_VFS_H_

// A fault-injecting SQLite VFS for tests, in the spirit of Chromium's sql
// error-test VFS and LevelDB's fault_injection_test. Test support only: it is
// never linked into the product.
//
// Install() registers it as SQLite's default VFS (makeDflt=1), wrapping the
// default VFS that was there before (unix). store::Db::Open registers the
// product's coalescing WAL VFS (store/sqlite/wal_vfs.h) at its first call and wraps
// whatever is the default at that moment, so in a test binary that calls
// Install() before any store::Db::Open the stack is
//
//   SQLite pager/WAL -> edgealloc-wal (coalescing) -> edgealloc-fault -> unix
//
// and read-only connections (which use the default VFS) go straight to
// edgealloc-fault. A fault armed on "the Nth write of the -wal file" therefore
// hits the pwrite that the coalescing VFS issues when it flushes its buffer.
//
// What it models
//  - Failures of single operations: the Nth xWrite / xSync / xRead /
//    xTruncate (counted from Arm, on every file or only on files whose name
//    ends in -wal, or only on main database files) fails with an EIO-like
//    code (SQLITE_IOERR_WRITE / _FSYNC / _READ / _TRUNCATE) or with
//    SQLITE_FULL (ENOSPC), once or, if `sticky`, for every later matching
//    operation until Disarm(). A failed operation does nothing to the file.
//  - Short writes: the Nth write puts only its first `short_bytes` bytes (half
//    by default) into the file and then fails with SQLITE_FULL, which is what
//    the unix VFS answers for a short pwrite (ENOSPC).
//  - Power loss. For every file it has seen, it remembers what was written
//    since that file's last successful xSync: the old bytes of every range a
//    write or truncate changed, and the size at that sync. ArmCrash(N) makes
//    the Nth mutating operation (write, sync, truncate or delete, counted
//    together from the call) the crash point: it and every later mutating
//    operation change nothing, and either fail with SQLITE_IOERR_* (kFail)
//    or report success (kDrop), as if the machine had stopped there; reads
//    still see what the OS page cache would hold.
//    After every connection is closed, SimulatePowerLoss() puts each file
//    back to its content at its last sync (undoing the remembered writes in
//    reverse order, then truncating to the synced size) and deletes every
//    -shm file (the wal-index is shared memory, never durable; SQLite
//    rebuilds it from the WAL on the next open).
//  - It counts the operations it sees (per kind, per file class), so that a
//    sweep can run a workload once and learn how many of each there are.
//
// What it does NOT model (each is a way real disks lose more than this):
//  - Directory fsync. Creating, deleting and renaming a file are durable at
//    once; a file created and never synced survives power loss with size 0
//    (its synced size), instead of possibly vanishing.
//  - Torn or partially persisted writes at power loss: a write since the last
//    sync is either undone whole (power loss) or there whole. No sector is
//    left half old, half new; no garbage is ever read back.
//  - Reordering: a sync makes everything written to that file before it
//    durable, and nothing written after it. There is no reordering between
//    files beyond "each file is durable up to its own last sync".
//  - Corrupted reads (bit flips), EINTR, slow I/O, and errors of xLock,
//    xShmMap or xFileSize.
//  - Real durability: by default xSync does not call fsync (set_real_sync),
//    since power loss is simulated above and fsyncs only make tests slow.
//
// Thread-safe: every entry point and every intercepted file operation take one
// mutex (the Writer runs on its own thread, readers on others).

#include <cstdint>
#include <string>

namespace testing {

enum class FaultOp { kWrite = 0, kSync = 1, kRead = 2, kTruncate = 3 };
inline constexpr int kFaultOps = 4;
const char* FaultOpName(FaultOp op);

// Which files an armed fault and a count look at.
enum class FaultTarget {
  kAny,     // every file (main db, -wal, journals, temp files)
  kWal,     // files whose name ends in "-wal"
  kMainDb,  // main database files (SQLITE_OPEN_MAIN_DB)
};
const char* FaultTargetName(FaultTarget target);

enum class FaultKind {
  kIoError,     // SQLITE_IOERR_WRITE / _FSYNC / _READ / _TRUNCATE (EIO)
  kNoSpace,     // SQLITE_FULL (ENOSPC)
  kShortWrite,  // writes only: short_bytes of the data, then SQLITE_FULL
};
const char* FaultKindName(FaultKind kind);

struct FaultSpec {
  FaultOp op = FaultOp::kWrite;
  int64_t nth = 1;  // 1-based, among matching operations counted from Arm
  FaultTarget target = FaultTarget::kAny;
  FaultKind kind = FaultKind::kIoError;
  bool sticky = false;    // also fail every later matching operation
  int short_bytes = -1;   // kShortWrite: bytes written before failing; -1: half
  std::string ToString() const;
};

struct FaultCounts {
  int64_t ops[kFaultOps] = {0, 0, 0, 0};
  int64_t operator[](FaultOp op) const { return ops[static_cast<int>(op)]; }
};

class FaultVfs {
 public:
  static constexpr const char* kName = "edgealloc-fault";

  // Registers the VFS as the default, once per process; returns it. Call it
  // before the first store::Db::Open of the process (REQUIREs otherwise that
  // the coalescing WAL VFS is not registered yet).
  static FaultVfs& Install();

  // Disarms, leaves crash mode, zeroes the counters and forgets everything
  // remembered for power loss: every file is taken as durable as it is on its
  // next use. Call between cases, with no connection open.
  void Reset();

  // Arms one fault (replacing any armed one); matching starts at zero.
  void Arm(const FaultSpec& spec);
  void Disarm();
  // Faults injected since the last Arm (0: the Nth operation never came).
  int64_t fired() const;

  // Operations seen since Reset/ResetCounts, of files of `target`.
  FaultCounts Counts(FaultTarget target = FaultTarget::kAny) const;
  // Mutating operations (writes, syncs, truncates, deletes) since the last
  // Reset/ResetCounts, all files: what ArmCrash counts.
  int64_t Mutations() const;
  void ResetCounts();

  // What a mutating operation at or after the crash point does: either way
  // it changes nothing in the file.
  enum class CrashMode {
    kFail,  // fails with SQLITE_IOERR_* (the process sees its I/O die)
    kDrop,  // "succeeds" (the process runs on, unaware, as if it had lost
            // power at that instant): SQLite may then acknowledge commits
            // that are not on disk, so a test must only count
            // acknowledgements it recorded while !crashed().
  };
  // Crash point at the Nth mutating operation from now (1-based); Crash()
  // now. From then on every write, sync, truncate and delete changes nothing
  // and fails or is dropped, as `mode` says, until SimulatePowerLoss/Reset.
  void ArmCrash(int64_t nth, CrashMode mode = CrashMode::kFail);
  void Crash(CrashMode mode = CrashMode::kFail);
  bool crashed() const;

  // Puts every file back to its last synced content and deletes -shm files.
  // REQUIRES: every connection to those files is closed. Leaves crash mode
  // and forgets the remembered writes (the files are now all "synced").
  void SimulatePowerLoss();

  // Whether xSync calls the real fsync (default false).
  void set_real_sync(bool on);

 private:
  FaultVfs() = default;
};

}  // namespace testing

#endif  // EDGEALLOC_TESTS_SUPPORT_FAULT_VFS_H_
