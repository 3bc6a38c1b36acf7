#include "store/sqlite/wal_vfs.h"

#include "base/mutex.h"
#include "store/sqlite/forwarding_vfs.h"

#include <sqlite3.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <unordered_map>

namespace store {
namespace {

// Writes gathered per flush at most; a bigger run of frames is flushed in
// pieces of this size. A group commit writes a few hundred KiB.
constexpr size_t kMaxBuffer = 4 << 20;

std::atomic<uint64_t> g_writes{0};
std::atomic<uint64_t> g_flushes{0};

sqlite3_vfs g_vfs;  // over the default VFS
sqlite3_io_methods g_methods;

// Our file; the wrapped file of the default VFS lives right behind it.
struct File : ForwardingFile {
  bool wal;
  // A WAL file and the main database file of the same connection point at
  // each other (set when the WAL is opened, cleared when either closes): the
  // WAL's write lock is taken and released on the main file's wal-index.
  File* partner;
  const char* db_name;    // main files only: SQLite's name, our registry's key
  // Only a paired WAL gathers: on any other file length stays 0 and failed
  // false, so Flush is a no-op there.
  char* buffer;           // malloc'ed on the first WAL write, grown to kMaxBuffer
  size_t capacity;
  size_t length;          // bytes gathered
  sqlite3_int64 offset;   // where buffer[0] goes in the file
  // A flush failed: the frames SQLite believes written are not. Every call
  // on this WAL fails with IOERR until the write transaction ends, so SQLite
  // rolls the whole transaction back and can never commit without them.
  bool failed;
  // The WAL was synced in this write transaction (not just its header):
  // whatever SQLite writes after that goes straight to the file, since no
  // sync of this transaction follows to flush it. With powersafe overwrite
  // off SQLite pads a commit to a sector boundary with copies of its last
  // frame and syncs at that boundary, in the middle of a copy (wal.c,
  // walWriteToLog); the rest of the copy comes after the sync and is as much
  // part of the WAL as the frames before it: the next commit's frames follow
  // it, and recovery stops at the first frame that does not check out.
  bool through;
};

File* Cast(sqlite3_file* f) { return static_cast<File*>(AsForwardingFile(f)); }

// Main database files opened through this VFS, by the name SQLite gave them,
// so that a WAL opened later finds its connection's main file
// (sqlite3_filename_database of the WAL's name is that same pointer).
// Touched only on open and close.
base::Mutex g_registry_mu;
std::unordered_map<const char*, File*>* g_main_files GUARDED_BY(g_registry_mu) = nullptr;

// The header a fresh WAL starts with (WAL_HDRSIZE in wal.c): SQLite syncs it
// on its own before the first frame of a restarted WAL, and that
// transaction's frames are synced again at its commit.
constexpr sqlite3_int64 kWalHeaderSize = 32;

// The unix VFS writes at most 0x1ffff bytes a call (its seekAndWrite masks
// the length), so a flush goes out in pieces of at most this many.
constexpr size_t kMaxWrite = 0x1ffff & ~size_t{4095};

// What a failed flush answers: an I/O error, whatever the write said (a full
// disk's SQLITE_FULL would roll back only the statement), so that SQLite
// rolls back the whole transaction.
constexpr int kFlushFailed = SQLITE_IOERR_WRITE;

int Flush(File* f) {
  if (f->failed) return kFlushFailed;
  int rc = SQLITE_OK;
  for (size_t done = 0; done < f->length && rc == SQLITE_OK;) {
    const size_t n = std::min(f->length - done, kMaxWrite);
    rc = f->real->pMethods->xWrite(f->real, f->buffer + done, static_cast<int>(n),
                                   f->offset + static_cast<sqlite3_int64>(done));
    g_flushes.fetch_add(1, std::memory_order_relaxed);
    done += n;
  }
  f->length = 0;
  if (rc != SQLITE_OK) {
    f->failed = true;
    return kFlushFailed;
  }
  return SQLITE_OK;
}

// The write transaction of f's connection ended (committed, whose frames
// were synced before, or rolled back): whatever is still gathered
// belongs to no commit and must never reach the file, where another
// connection may write frames at the same offsets next.
void DropUncommitted(File* wal) {
  wal->length = 0;
  wal->failed = false;
  wal->through = false;
}

int Close(sqlite3_file* file) {
  File* f = Cast(file);
  {
    base::MutexLock lock(&g_registry_mu);
    if (f->partner != nullptr) f->partner->partner = nullptr;
    f->partner = nullptr;
    if (f->db_name != nullptr && g_main_files != nullptr) {
      auto it = g_main_files->find(f->db_name);
      if (it != g_main_files->end() && it->second == f) g_main_files->erase(it);
    }
  }
  // Under synchronous=FULL a commit's frames are synced before it returns,
  // so anything still gathered at close was never committed: dropped.
  DropUncommitted(f);
  int rc = f->real->pMethods->xClose(f->real);
  std::free(f->buffer);
  f->buffer = nullptr;
  return rc;
}

int Read(sqlite3_file* file, void* out, int amount, sqlite3_int64 offset) {
  File* f = Cast(file);
  if (f->length > 0 || f->failed) {
    // SQLite reads back frames of its own transaction (a spilled page, a
    // checksum rewrite, a checkpoint): they must be in the file first.
    if (int rc = Flush(f); rc != SQLITE_OK) return rc;
  }
  return f->real->pMethods->xRead(f->real, out, amount, offset);
}

int Write(sqlite3_file* file, const void* data, int amount, sqlite3_int64 offset) {
  File* f = Cast(file);
  if (f->failed) return kFlushFailed;
  // Gathering is safe only where the end of each write transaction is seen
  // (the WAL paired with its main file); anything else writes through.
  if (!f->wal || f->partner == nullptr) {
    return f->real->pMethods->xWrite(f->real, data, amount, offset);
  }
  g_writes.fetch_add(1, std::memory_order_relaxed);
  if (f->through) {  // after this transaction's sync (the buffer is empty)
    g_flushes.fetch_add(1, std::memory_order_relaxed);
    return f->real->pMethods->xWrite(f->real, data, amount, offset);
  }
  const size_t n = static_cast<size_t>(amount);
  const bool follows = f->length > 0 && offset == f->offset + static_cast<sqlite3_int64>(f->length);
  if (!follows || f->length + n > kMaxBuffer) {
    if (int rc = Flush(f); rc != SQLITE_OK) return rc;
  }
  if (n > kMaxWrite) return f->real->pMethods->xWrite(f->real, data, amount, offset);
  if (f->length + n > f->capacity) {
    size_t want = f->capacity ? f->capacity : 256 << 10;
    while (want < f->length + n) want *= 2;
    if (want > kMaxBuffer) want = kMaxBuffer;
    char* grown = static_cast<char*>(std::realloc(f->buffer, want));
    if (grown == nullptr) {  // no memory for more: write as SQLite would
      if (int rc = Flush(f); rc != SQLITE_OK) return rc;
      return f->real->pMethods->xWrite(f->real, data, amount, offset);
    }
    f->buffer = grown;
    f->capacity = want;
  }
  if (f->length == 0) f->offset = offset;
  std::memcpy(f->buffer + f->length, data, n);
  f->length += n;
  return SQLITE_OK;
}

int Truncate(sqlite3_file* file, sqlite3_int64 size) {
  File* f = Cast(file);
  if (int rc = Flush(f); rc != SQLITE_OK) return rc;
  return f->real->pMethods->xTruncate(f->real, size);
}

int Sync(sqlite3_file* file, int flags) {
  File* f = Cast(file);
  // Only a fresh WAL's header sync is followed by frames that a later sync
  // of the same transaction flushes (the commit's); after any other sync
  // (the commit's, or the one at the sector boundary with powersafe
  // overwrite off) writes go through until the write lock goes.
  const bool header_only = f->length == static_cast<size_t>(kWalHeaderSize) && f->offset == 0;
  if (f->wal && !header_only) f->through = true;
  if (int rc = Flush(f); rc != SQLITE_OK) return rc;
  return f->real->pMethods->xSync(f->real, flags);
}

int FileSize(sqlite3_file* file, sqlite3_int64* size) {
  File* f = Cast(file);
  if (int rc = Flush(f); rc != SQLITE_OK) return rc;
  return f->real->pMethods->xFileSize(f->real, size);
}

// SQLite's WAL write lock is slot 0 of the wal-index locks (WAL_WRITE_LOCK
// in its wal.c), taken and released through the main file's xShmLock. A
// connection that lets it go has ended its write transaction; since the
// buffer is dropped then, and only a paired WAL gathers, a transaction that
// takes it always starts with an empty buffer.
constexpr int kWalWriteLockSlot = 0;

int ShmLock(sqlite3_file* file, int offset, int n, int flags) {
  File* f = Cast(file);
  const bool write_lock = (flags & SQLITE_SHM_EXCLUSIVE) != 0 && offset <= kWalWriteLockSlot &&
                          kWalWriteLockSlot < offset + n;
  if (write_lock && (flags & SQLITE_SHM_UNLOCK) != 0 && f->partner != nullptr) {
    // Before the lock goes: once it is gone another connection may append.
    DropUncommitted(f->partner);
  }
  const int rc = f->real->pMethods->xShmLock(f->real, offset, n, flags);
  if (rc == SQLITE_OK && write_lock && (flags & SQLITE_SHM_LOCK) != 0 && f->partner != nullptr) {
    // A write transaction starts gathering, whatever a sync outside one (a
    // checkpoint's) left set.
    f->partner->through = false;
  }
  return rc;
}

// The level `PRAGMA synchronous=<value>` would set, as SQLite's pragma.c
// reads it (getSafetyLevel, plus one): 1 OFF, 2 NORMAL, 3 FULL, 4 EXTRA.
int SynchronousLevel(const char* value) {
  int level = 1;  // what pragma.c takes an unknown word for: NORMAL, after the +1
  if (value[0] >= '0' && value[0] <= '9') {
    level = std::atoi(value);
  } else {
    static constexpr struct { const char* word; int level; } kWords[] = {
        {"on", 1}, {"no", 0}, {"off", 0}, {"false", 0},
        {"yes", 1}, {"true", 1}, {"extra", 3}, {"full", 2}};
    for (const auto& w : kWords) {
      if (sqlite3_stricmp(value, w.word) == 0) level = w.level;
    }
  }
  level = (level + 1) & 7;
  return level == 0 ? 1 : level;
}

// The pragmas that would take away what the VFS relies on, refused on every
// connection through it: synchronous below FULL (no sync before a commit is
// published, so readers would miss frames still gathered), and
// locking_mode=EXCLUSIVE (SQLite then takes and releases the WAL write lock
// without xShmLock, so the end of a write transaction is never seen and a
// rolled-back transaction's frames could be written over another
// connection's after the mode is back to normal). Returns null to let the
// pragma run, or why not.
const char* RefusedPragma(const char* name, const char* value) {
  if (name == nullptr || value == nullptr) return nullptr;  // a query, not a change
  if (sqlite3_stricmp(name, "synchronous") == 0 && SynchronousLevel(value) < 3) {
    return "synchronous below FULL";
  }
  if (sqlite3_stricmp(name, "locking_mode") == 0 && sqlite3_stricmp(value, "exclusive") == 0) {
    return "locking_mode=EXCLUSIVE";
  }
  return nullptr;
}

int FileControl(sqlite3_file* f, int op, void* arg) {
  if (op == SQLITE_FCNTL_PRAGMA) {
    char** words = static_cast<char**>(arg);  // [0] error out, [1] name, [2] value
    if (const char* why = RefusedPragma(words[1], words[2])) {
      words[0] = sqlite3_mprintf(
          "PRAGMA %s=%s refused: the coalescing WAL VFS (%s) needs synchronous=FULL or EXTRA "
          "and locking_mode=NORMAL, and %s breaks that (store/sqlite/wal_vfs.h); open the Db "
          "with Sync::kNormal or coalesce_wal_writes=false for the default VFS",
          words[1], words[2], kCoalescingWalVfs, why);
      return SQLITE_ERROR;
    }
  }
  return Cast(f)->real->pMethods->xFileControl(Cast(f)->real, op, arg);
}

int Open(sqlite3_vfs* vfs, sqlite3_filename name, sqlite3_file* file, int flags, int* out_flags) {
  File* f = Cast(file);
  *f = File{};
  f->wal = (flags & SQLITE_OPEN_WAL) != 0;
  const int rc = OpenBaseFile(vfs, name, f, sizeof(File), &g_methods, flags, out_flags);
  if (rc != SQLITE_OK || f->base.pMethods == nullptr || name == nullptr) return rc;
  base::MutexLock lock(&g_registry_mu);
  if (g_main_files == nullptr) g_main_files = new std::unordered_map<const char*, File*>();
  if ((flags & SQLITE_OPEN_MAIN_DB) != 0) {
    f->db_name = name;
    (*g_main_files)[name] = f;
  } else if (f->wal) {
    auto it = g_main_files->find(sqlite3_filename_database(name));
    if (it != g_main_files->end()) {
      f->partner = it->second;
      it->second->partner = f;
    }
  }
  return rc;
}

Status RegisterOnce() {
  sqlite3_vfs* base = sqlite3_vfs_find(nullptr);
  if (base == nullptr) return Status::IOError("SQLite has no default VFS");
  if (base->iVersion < 2 || base->xCurrentTimeInt64 == nullptr) {
    return Status::IOError("the default SQLite VFS is too old to wrap");
  }
  // Everything else passes through to the default VFS's file as it is.
  g_methods = ForwardingIoMethods();
  g_methods.xClose = Close;
  g_methods.xRead = Read;
  g_methods.xWrite = Write;
  g_methods.xTruncate = Truncate;
  g_methods.xSync = Sync;
  g_methods.xFileSize = FileSize;
  g_methods.xFileControl = FileControl;
  g_methods.xShmLock = ShmLock;
  g_vfs = ForwardingVfs(base, kCoalescingWalVfs, sizeof(File));
  g_vfs.xOpen = Open;
  int rc = sqlite3_vfs_register(&g_vfs, /*makeDflt=*/0);
  if (rc != SQLITE_OK) {
    return Status::IOError(std::string("cannot register the WAL VFS: ") + sqlite3_errstr(rc));
  }
  return Status::Ok();
}

}  // namespace

Status RegisterCoalescingWalVfs() {
  static const Status registered = RegisterOnce();
  return registered;
}

CoalescingWalStats GetCoalescingWalStats() {
  return {g_writes.load(std::memory_order_relaxed), g_flushes.load(std::memory_order_relaxed)};
}

}  // namespace store
