#include "store/wal_vfs.h"

#include <sqlite3.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <mutex>

namespace store {
namespace {

// Writes gathered per flush at most; a bigger run of frames is flushed in
// pieces of this size. A group commit writes a few hundred KiB.
constexpr size_t kMaxBuffer = 4 << 20;

std::atomic<uint64_t> g_writes{0};
std::atomic<uint64_t> g_flushes{0};

sqlite3_vfs* g_base = nullptr;  // the default VFS we wrap
sqlite3_vfs g_vfs;
sqlite3_io_methods g_methods;

// Our file: SQLite allocates szOsFile bytes for it; the wrapped file of the
// base VFS lives right behind it.
struct File {
  sqlite3_file base;
  sqlite3_file* real;
  bool wal;
  char* buffer;           // malloc'ed on the first WAL write, grown to kMaxBuffer
  size_t capacity;
  size_t length;          // bytes gathered
  sqlite3_int64 offset;   // where buffer[0] goes in the file
};

File* Cast(sqlite3_file* f) { return reinterpret_cast<File*>(f); }

// The unix VFS writes at most 0x1ffff bytes a call (its seekAndWrite masks
// the length), so a flush goes out in pieces of at most this many.
constexpr size_t kMaxWrite = 0x1ffff & ~size_t{4095};

int Flush(File* f) {
  int rc = SQLITE_OK;
  for (size_t done = 0; done < f->length && rc == SQLITE_OK;) {
    const size_t n = std::min(f->length - done, kMaxWrite);
    rc = f->real->pMethods->xWrite(f->real, f->buffer + done, static_cast<int>(n),
                                   f->offset + static_cast<sqlite3_int64>(done));
    g_flushes.fetch_add(1, std::memory_order_relaxed);
    done += n;
  }
  f->length = 0;
  return rc;
}

int Close(sqlite3_file* file) {
  File* f = Cast(file);
  int rc = Flush(f);
  int rc2 = f->real->pMethods->xClose(f->real);
  std::free(f->buffer);
  f->buffer = nullptr;
  return rc != SQLITE_OK ? rc : rc2;
}

int Read(sqlite3_file* file, void* out, int amount, sqlite3_int64 offset) {
  File* f = Cast(file);
  if (f->length > 0) {
    // SQLite reads back frames of its own transaction (a spilled page, a
    // checksum rewrite, a checkpoint): they must be in the file first.
    if (int rc = Flush(f); rc != SQLITE_OK) return rc;
  }
  return f->real->pMethods->xRead(f->real, out, amount, offset);
}

int Write(sqlite3_file* file, const void* data, int amount, sqlite3_int64 offset) {
  File* f = Cast(file);
  if (!f->wal) return f->real->pMethods->xWrite(f->real, data, amount, offset);
  g_writes.fetch_add(1, std::memory_order_relaxed);
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
  if (int rc = Flush(f); rc != SQLITE_OK) return rc;
  return f->real->pMethods->xSync(f->real, flags);
}

int FileSize(sqlite3_file* file, sqlite3_int64* size) {
  File* f = Cast(file);
  if (int rc = Flush(f); rc != SQLITE_OK) return rc;
  return f->real->pMethods->xFileSize(f->real, size);
}

// The rest passes straight through.
int Lock(sqlite3_file* f, int l) { return Cast(f)->real->pMethods->xLock(Cast(f)->real, l); }
int Unlock(sqlite3_file* f, int l) { return Cast(f)->real->pMethods->xUnlock(Cast(f)->real, l); }
int CheckReservedLock(sqlite3_file* f, int* out) {
  return Cast(f)->real->pMethods->xCheckReservedLock(Cast(f)->real, out);
}
int FileControl(sqlite3_file* f, int op, void* arg) {
  return Cast(f)->real->pMethods->xFileControl(Cast(f)->real, op, arg);
}
int SectorSize(sqlite3_file* f) { return Cast(f)->real->pMethods->xSectorSize(Cast(f)->real); }
int DeviceCharacteristics(sqlite3_file* f) {
  return Cast(f)->real->pMethods->xDeviceCharacteristics(Cast(f)->real);
}
int ShmMap(sqlite3_file* f, int page, int size, int extend, void volatile** out) {
  return Cast(f)->real->pMethods->xShmMap(Cast(f)->real, page, size, extend, out);
}
int ShmLock(sqlite3_file* f, int offset, int n, int flags) {
  return Cast(f)->real->pMethods->xShmLock(Cast(f)->real, offset, n, flags);
}
void ShmBarrier(sqlite3_file* f) { Cast(f)->real->pMethods->xShmBarrier(Cast(f)->real); }
int ShmUnmap(sqlite3_file* f, int del) {
  return Cast(f)->real->pMethods->xShmUnmap(Cast(f)->real, del);
}
int Fetch(sqlite3_file* f, sqlite3_int64 offset, int amount, void** out) {
  return Cast(f)->real->pMethods->xFetch(Cast(f)->real, offset, amount, out);
}
int Unfetch(sqlite3_file* f, sqlite3_int64 offset, void* p) {
  return Cast(f)->real->pMethods->xUnfetch(Cast(f)->real, offset, p);
}

int Open(sqlite3_vfs*, sqlite3_filename name, sqlite3_file* file, int flags, int* out_flags) {
  File* f = Cast(file);
  std::memset(f, 0, sizeof(File));
  f->real = reinterpret_cast<sqlite3_file*>(f + 1);
  f->wal = (flags & SQLITE_OPEN_WAL) != 0;
  int rc = g_base->xOpen(g_base, name, f->real, flags, out_flags);
  // A failed open leaves pMethods null, so SQLite will not call xClose.
  f->base.pMethods = f->real->pMethods != nullptr ? &g_methods : nullptr;
  return rc;
}

// The VFS-level calls go to the base VFS as they are.
int Delete(sqlite3_vfs*, const char* name, int sync_dir) {
  return g_base->xDelete(g_base, name, sync_dir);
}
int Access(sqlite3_vfs*, const char* name, int flags, int* out) {
  return g_base->xAccess(g_base, name, flags, out);
}
int FullPathname(sqlite3_vfs*, const char* name, int n, char* out) {
  return g_base->xFullPathname(g_base, name, n, out);
}
void* DlOpen(sqlite3_vfs*, const char* name) { return g_base->xDlOpen(g_base, name); }
void DlError(sqlite3_vfs*, int n, char* out) { g_base->xDlError(g_base, n, out); }
void (*DlSym(sqlite3_vfs*, void* h, const char* sym))(void) { return g_base->xDlSym(g_base, h, sym); }
void DlClose(sqlite3_vfs*, void* h) { g_base->xDlClose(g_base, h); }
int Randomness(sqlite3_vfs*, int n, char* out) { return g_base->xRandomness(g_base, n, out); }
int Sleep(sqlite3_vfs*, int micros) { return g_base->xSleep(g_base, micros); }
int CurrentTime(sqlite3_vfs*, double* out) { return g_base->xCurrentTime(g_base, out); }
int GetLastError(sqlite3_vfs*, int n, char* out) { return g_base->xGetLastError(g_base, n, out); }
int CurrentTimeInt64(sqlite3_vfs*, sqlite3_int64* out) {
  return g_base->xCurrentTimeInt64(g_base, out);
}

Status RegisterOnce() {
  g_base = sqlite3_vfs_find(nullptr);
  if (g_base == nullptr) return Status::IOError("SQLite has no default VFS");
  if (g_base->iVersion < 2 || g_base->xCurrentTimeInt64 == nullptr) {
    return Status::IOError("the default SQLite VFS is too old to wrap");
  }
  g_methods = sqlite3_io_methods{};
  g_methods.iVersion = 3;
  g_methods.xClose = Close;
  g_methods.xRead = Read;
  g_methods.xWrite = Write;
  g_methods.xTruncate = Truncate;
  g_methods.xSync = Sync;
  g_methods.xFileSize = FileSize;
  g_methods.xLock = Lock;
  g_methods.xUnlock = Unlock;
  g_methods.xCheckReservedLock = CheckReservedLock;
  g_methods.xFileControl = FileControl;
  g_methods.xSectorSize = SectorSize;
  g_methods.xDeviceCharacteristics = DeviceCharacteristics;
  g_methods.xShmMap = ShmMap;
  g_methods.xShmLock = ShmLock;
  g_methods.xShmBarrier = ShmBarrier;
  g_methods.xShmUnmap = ShmUnmap;
  g_methods.xFetch = Fetch;
  g_methods.xUnfetch = Unfetch;

  g_vfs = sqlite3_vfs{};
  g_vfs.iVersion = 2;
  g_vfs.szOsFile = static_cast<int>(sizeof(File)) + g_base->szOsFile;
  g_vfs.mxPathname = g_base->mxPathname;
  g_vfs.zName = kCoalescingWalVfs;
  g_vfs.xOpen = Open;
  g_vfs.xDelete = Delete;
  g_vfs.xAccess = Access;
  g_vfs.xFullPathname = FullPathname;
  g_vfs.xDlOpen = DlOpen;
  g_vfs.xDlError = DlError;
  g_vfs.xDlSym = DlSym;
  g_vfs.xDlClose = DlClose;
  g_vfs.xRandomness = Randomness;
  g_vfs.xSleep = Sleep;
  g_vfs.xCurrentTime = CurrentTime;
  g_vfs.xGetLastError = GetLastError;
  g_vfs.xCurrentTimeInt64 = CurrentTimeInt64;
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
