#include "store/sqlite/forwarding_vfs.h"

namespace store {
namespace {

sqlite3_file* Real(sqlite3_file* f) { return AsForwardingFile(f)->real; }

// ---- io methods: each goes to the wrapped file ----

int Close(sqlite3_file* f) { return Real(f)->pMethods->xClose(Real(f)); }
int Read(sqlite3_file* f, void* out, int amount, sqlite3_int64 offset) {
  return Real(f)->pMethods->xRead(Real(f), out, amount, offset);
}
int Write(sqlite3_file* f, const void* data, int amount, sqlite3_int64 offset) {
  return Real(f)->pMethods->xWrite(Real(f), data, amount, offset);
}
int Truncate(sqlite3_file* f, sqlite3_int64 size) {
  return Real(f)->pMethods->xTruncate(Real(f), size);
}
int Sync(sqlite3_file* f, int flags) { return Real(f)->pMethods->xSync(Real(f), flags); }
int FileSize(sqlite3_file* f, sqlite3_int64* size) {
  return Real(f)->pMethods->xFileSize(Real(f), size);
}
int Lock(sqlite3_file* f, int level) { return Real(f)->pMethods->xLock(Real(f), level); }
int Unlock(sqlite3_file* f, int level) { return Real(f)->pMethods->xUnlock(Real(f), level); }
int CheckReservedLock(sqlite3_file* f, int* out) {
  return Real(f)->pMethods->xCheckReservedLock(Real(f), out);
}
int FileControl(sqlite3_file* f, int op, void* arg) {
  return Real(f)->pMethods->xFileControl(Real(f), op, arg);
}
int SectorSize(sqlite3_file* f) { return Real(f)->pMethods->xSectorSize(Real(f)); }
int DeviceCharacteristics(sqlite3_file* f) {
  return Real(f)->pMethods->xDeviceCharacteristics(Real(f));
}
int ShmMap(sqlite3_file* f, int page, int size, int extend, void volatile** out) {
  return Real(f)->pMethods->xShmMap(Real(f), page, size, extend, out);
}
int ShmLock(sqlite3_file* f, int offset, int n, int flags) {
  return Real(f)->pMethods->xShmLock(Real(f), offset, n, flags);
}
void ShmBarrier(sqlite3_file* f) { Real(f)->pMethods->xShmBarrier(Real(f)); }
int ShmUnmap(sqlite3_file* f, int del) { return Real(f)->pMethods->xShmUnmap(Real(f), del); }
int Fetch(sqlite3_file* f, sqlite3_int64 offset, int amount, void** out) {
  return Real(f)->pMethods->xFetch(Real(f), offset, amount, out);
}
int Unfetch(sqlite3_file* f, sqlite3_int64 offset, void* p) {
  return Real(f)->pMethods->xUnfetch(Real(f), offset, p);
}

// ---- VFS calls: each goes to the wrapped VFS ----

int Delete(sqlite3_vfs* v, const char* name, int sync_dir) {
  return BaseVfs(v)->xDelete(BaseVfs(v), name, sync_dir);
}
int Access(sqlite3_vfs* v, const char* name, int flags, int* out) {
  return BaseVfs(v)->xAccess(BaseVfs(v), name, flags, out);
}
int FullPathname(sqlite3_vfs* v, const char* name, int n, char* out) {
  return BaseVfs(v)->xFullPathname(BaseVfs(v), name, n, out);
}
void* DlOpen(sqlite3_vfs* v, const char* name) { return BaseVfs(v)->xDlOpen(BaseVfs(v), name); }
void DlError(sqlite3_vfs* v, int n, char* out) { BaseVfs(v)->xDlError(BaseVfs(v), n, out); }
void (*DlSym(sqlite3_vfs* v, void* h, const char* sym))(void) {
  return BaseVfs(v)->xDlSym(BaseVfs(v), h, sym);
}
void DlClose(sqlite3_vfs* v, void* h) { BaseVfs(v)->xDlClose(BaseVfs(v), h); }
int Randomness(sqlite3_vfs* v, int n, char* out) {
  return BaseVfs(v)->xRandomness(BaseVfs(v), n, out);
}
int SleepFor(sqlite3_vfs* v, int micros) { return BaseVfs(v)->xSleep(BaseVfs(v), micros); }
int CurrentTime(sqlite3_vfs* v, double* out) { return BaseVfs(v)->xCurrentTime(BaseVfs(v), out); }
int GetLastError(sqlite3_vfs* v, int n, char* out) {
  return BaseVfs(v)->xGetLastError(BaseVfs(v), n, out);
}
int CurrentTimeInt64(sqlite3_vfs* v, sqlite3_int64* out) {
  return BaseVfs(v)->xCurrentTimeInt64(BaseVfs(v), out);
}

}  // namespace

sqlite3_io_methods ForwardingIoMethods() {
  // In the order sqlite3.h declares them (version 3: through xUnfetch).
  return sqlite3_io_methods{3, Close, Read, Write, Truncate, Sync, FileSize, Lock, Unlock,
                            CheckReservedLock, FileControl, SectorSize, DeviceCharacteristics,
                            ShmMap, ShmLock, ShmBarrier, ShmUnmap, Fetch, Unfetch};
}

sqlite3_vfs ForwardingVfs(sqlite3_vfs* base, const char* name, size_t file_struct_size) {
  // The calls of version 2, in the order sqlite3.h declares them.
  return sqlite3_vfs{.iVersion = 2,
                     .szOsFile = static_cast<int>(file_struct_size) + base->szOsFile,
                     .mxPathname = base->mxPathname, .pNext = nullptr, .zName = name,
                     .pAppData = base, .xOpen = nullptr,  // the shim's own
                     .xDelete = Delete, .xAccess = Access, .xFullPathname = FullPathname,
                     .xDlOpen = DlOpen, .xDlError = DlError, .xDlSym = DlSym, .xDlClose = DlClose,
                     .xRandomness = Randomness, .xSleep = SleepFor, .xCurrentTime = CurrentTime,
                     .xGetLastError = GetLastError, .xCurrentTimeInt64 = CurrentTimeInt64,
                     .xSetSystemCall = nullptr, .xGetSystemCall = nullptr,
                     .xNextSystemCall = nullptr};
}

int OpenBaseFile(sqlite3_vfs* vfs, sqlite3_filename name, ForwardingFile* file,
                 size_t file_struct_size, const sqlite3_io_methods* methods, int flags,
                 int* out_flags) {
  file->real = reinterpret_cast<sqlite3_file*>(reinterpret_cast<char*>(file) + file_struct_size);
  sqlite3_vfs* base = BaseVfs(vfs);
  const int rc = base->xOpen(base, name, file->real, flags, out_flags);
  file->base.pMethods = file->real->pMethods != nullptr ? methods : nullptr;
  return rc;
}

}  // namespace store
