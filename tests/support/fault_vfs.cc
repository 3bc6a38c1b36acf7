#include "tests/support/fault_vfs.h"

#include "store/sqlite/forwarding_vfs.h"

#include <fcntl.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

namespace testing {
namespace {

// What a file held before a write or truncate since its last sync changed it.
struct Undo {
  int64_t offset;
  std::string old;  // the bytes that were there, up to the size at that time
};

struct FileState {
  int64_t synced_size = 0;
  std::vector<Undo> undo;  // in the order the changes happened
};

constexpr int kTargets = 3;

struct Global {
  std::mutex mu;
  sqlite3_vfs vfs{};
  sqlite3_io_methods methods{};

  bool armed = false;
  FaultSpec spec;
  int64_t matched = 0;
  int64_t fired = 0;

  int64_t counts[kTargets][kFaultOps] = {};
  int64_t mutations = 0;

  int64_t crash_at = 0;  // 0: no crash point armed
  int64_t crash_seen = 0;
  bool crashed = false;
  FaultVfs::CrashMode crash_mode = FaultVfs::CrashMode::kFail;
  bool real_sync = false;

  std::map<std::string, FileState> files;  // by full path
};

Global& G() {
  static Global* g = new Global;  // never destroyed: SQLite may use it at exit
  return *g;
}

// The wrapped file of the VFS below lives right behind it.
struct File : store::ForwardingFile {
  bool wal;
  bool main;
  std::string* path;  // null for files without a name (temp files): not tracked
};

File* Cast(sqlite3_file* f) { return static_cast<File*>(store::AsForwardingFile(f)); }

bool Matches(const File* f, FaultTarget target) {
  switch (target) {
    case FaultTarget::kAny: return true;
    case FaultTarget::kWal: return f->wal;
    case FaultTarget::kMainDb: return f->main;
  }
  return false;
}

int IoErrCode(FaultOp op) {
  switch (op) {
    case FaultOp::kWrite: return SQLITE_IOERR_WRITE;
    case FaultOp::kSync: return SQLITE_IOERR_FSYNC;
    case FaultOp::kRead: return SQLITE_IOERR_READ;
    case FaultOp::kTruncate: return SQLITE_IOERR_TRUNCATE;
  }
  return SQLITE_IOERR;
}

// What to do with one operation. REQUIRES: G().mu held.
struct Decision {
  int rc = SQLITE_OK;     // non-OK: fail with it (and do nothing, unless short)
  int short_bytes = -1;   // >= 0: write only that many bytes, then fail with rc
  bool drop = false;      // after a kDrop crash: do nothing, report success
};

// A mutating operation at or after the crash point.
Decision Crashed(FaultOp op) {
  Decision d;
  if (G().crash_mode == FaultVfs::CrashMode::kDrop) {
    d.drop = true;
  } else {
    d.rc = IoErrCode(op);
  }
  return d;
}

Decision Decide(File* f, FaultOp op, int amount) {
  Global& g = G();
  const int o = static_cast<int>(op);
  ++g.counts[static_cast<int>(FaultTarget::kAny)][o];
  if (f->wal) ++g.counts[static_cast<int>(FaultTarget::kWal)][o];
  if (f->main) ++g.counts[static_cast<int>(FaultTarget::kMainDb)][o];
  Decision d;
  const bool mutating = op != FaultOp::kRead;
  if (mutating) {
    ++g.mutations;
    if (g.crashed) return Crashed(op);
    if (g.crash_at > 0 && ++g.crash_seen == g.crash_at) {
      g.crashed = true;
      return Crashed(op);
    }
  }
  if (!g.armed || g.spec.op != op || !Matches(f, g.spec.target)) return d;
  ++g.matched;
  if (g.matched < g.spec.nth || (g.matched > g.spec.nth && !g.spec.sticky)) return d;
  ++g.fired;
  switch (g.spec.kind) {
    case FaultKind::kIoError:
      d.rc = IoErrCode(op);
      break;
    case FaultKind::kNoSpace:
      d.rc = SQLITE_FULL;
      break;
    case FaultKind::kShortWrite:
      d.rc = SQLITE_FULL;
      if (op == FaultOp::kWrite) {
        d.short_bytes = g.spec.short_bytes >= 0 ? std::min(g.spec.short_bytes, amount) : amount / 2;
      }
      break;
  }
  return d;
}

FileState* StateOf(File* f) {
  if (f->path == nullptr) return nullptr;
  return &G().files[*f->path];
}

int64_t RealSize(File* f) {
  sqlite3_int64 size = 0;
  if (f->real->pMethods->xFileSize(f->real, &size) != SQLITE_OK) return 0;
  return size;
}

// Remembers the bytes of [offset, offset + n) that exist now, before a change.
// False if they cannot be read: the change must then not be made (an
// exception must not cross SQLite's C frames).
bool Remember(File* f, int64_t offset, int64_t n) {
  FileState* st = StateOf(f);
  if (st == nullptr || n <= 0) return true;
  const int64_t size = RealSize(f);
  // Bytes past the end need no record: the truncate to the synced size
  // takes them away.
  if (offset >= size) return true;
  const int64_t len = std::min(n, size - offset);
  Undo u;
  u.offset = offset;
  u.old.resize(static_cast<size_t>(len));
  int rc = f->real->pMethods->xRead(f->real, u.old.data(), static_cast<int>(len), offset);
  if (rc != SQLITE_OK && rc != SQLITE_IOERR_SHORT_READ) return false;
  st->undo.push_back(std::move(u));
  return true;
}

// ---- io methods ----

int Close(sqlite3_file* file) {
  File* f = Cast(file);
  int rc = f->real->pMethods->xClose(f->real);
  delete f->path;
  f->path = nullptr;
  return rc;
}

int Read(sqlite3_file* file, void* out, int amount, sqlite3_int64 offset) {
  File* f = Cast(file);
  std::lock_guard<std::mutex> lock(G().mu);
  Decision d = Decide(f, FaultOp::kRead, amount);
  if (d.rc != SQLITE_OK) return d.rc;
  return f->real->pMethods->xRead(f->real, out, amount, offset);
}

int Write(sqlite3_file* file, const void* data, int amount, sqlite3_int64 offset) {
  File* f = Cast(file);
  std::lock_guard<std::mutex> lock(G().mu);
  Decision d = Decide(f, FaultOp::kWrite, amount);
  if (d.drop) return SQLITE_OK;
  if (d.rc != SQLITE_OK && d.short_bytes < 0) return d.rc;
  const int n = d.short_bytes >= 0 ? d.short_bytes : amount;
  if (!Remember(f, offset, n)) return SQLITE_IOERR_WRITE;
  int rc = n > 0 ? f->real->pMethods->xWrite(f->real, data, n, offset) : SQLITE_OK;
  return d.rc != SQLITE_OK ? d.rc : rc;
}

int Truncate(sqlite3_file* file, sqlite3_int64 size) {
  File* f = Cast(file);
  std::lock_guard<std::mutex> lock(G().mu);
  Decision d = Decide(f, FaultOp::kTruncate, 0);
  if (d.drop) return SQLITE_OK;
  if (d.rc != SQLITE_OK) return d.rc;
  const int64_t old = RealSize(f);
  if (size < old && !Remember(f, size, old - size)) return SQLITE_IOERR_TRUNCATE;
  return f->real->pMethods->xTruncate(f->real, size);
}

int Sync(sqlite3_file* file, int flags) {
  File* f = Cast(file);
  Global& g = G();
  std::lock_guard<std::mutex> lock(g.mu);
  Decision d = Decide(f, FaultOp::kSync, 0);
  if (d.drop) return SQLITE_OK;
  if (d.rc != SQLITE_OK) return d.rc;
  int rc = g.real_sync ? f->real->pMethods->xSync(f->real, flags) : SQLITE_OK;
  if (rc == SQLITE_OK) {
    if (FileState* st = StateOf(f)) {
      st->undo.clear();
      st->synced_size = RealSize(f);
    }
  }
  return rc;
}

// No memory-mapped reads: every read goes through xRead, to be counted and
// failed (SQLite falls back to xRead when xFetch hands out no pointer).
int Fetch(sqlite3_file*, sqlite3_int64, int, void** out) {
  *out = nullptr;
  return SQLITE_OK;
}
int Unfetch(sqlite3_file*, sqlite3_int64, void*) { return SQLITE_OK; }

// ---- vfs methods ----

int Open(sqlite3_vfs* vfs, sqlite3_filename name, sqlite3_file* file, int flags, int* out_flags) {
  Global& g = G();
  File* f = Cast(file);
  *f = File{};
  f->wal = (flags & SQLITE_OPEN_WAL) != 0;
  f->main = (flags & SQLITE_OPEN_MAIN_DB) != 0;
  int rc = store::OpenBaseFile(vfs, name, f, sizeof(File), &g.methods, flags, out_flags);
  if (f->base.pMethods == nullptr) return rc;  // a failed open: SQLite will not call xClose
  if (name != nullptr) {
    f->path = new std::string(name);
    if (!f->wal && f->path->size() > 4 &&
        f->path->compare(f->path->size() - 4, 4, "-wal") == 0) {
      f->wal = true;
    }
    std::lock_guard<std::mutex> lock(g.mu);
    auto [it, inserted] = g.files.try_emplace(*f->path);
    // First seen: what it holds now is taken as durable.
    if (inserted) it->second.synced_size = RealSize(f);
  }
  return rc;
}

int Delete(sqlite3_vfs* vfs, const char* name, int sync_dir) {
  Global& g = G();
  std::lock_guard<std::mutex> lock(g.mu);
  ++g.mutations;
  if (g.crash_at > 0 && !g.crashed && ++g.crash_seen == g.crash_at) g.crashed = true;
  if (g.crashed) {
    return g.crash_mode == FaultVfs::CrashMode::kDrop ? SQLITE_OK : SQLITE_IOERR_DELETE;
  }
  sqlite3_vfs* base = store::BaseVfs(vfs);
  int rc = base->xDelete(base, name, sync_dir);
  if (rc == SQLITE_OK) g.files.erase(name);
  return rc;
}

void RegisterOnce() {
  Global& g = G();
  if (sqlite3_vfs_find("edgealloc-wal") != nullptr) {
    throw std::logic_error(
        "FaultVfs::Install after the coalescing WAL VFS was registered: it would not wrap us");
  }
  sqlite3_vfs* base = sqlite3_vfs_find(nullptr);
  if (base == nullptr || base->iVersion < 2 || base->xCurrentTimeInt64 == nullptr) {
    throw std::runtime_error("fault_vfs: no usable default SQLite VFS");
  }
  // Everything else passes through to the wrapped VFS as it is.
  sqlite3_io_methods& m = g.methods;
  m = store::ForwardingIoMethods();
  m.xClose = Close;
  m.xRead = Read;
  m.xWrite = Write;
  m.xTruncate = Truncate;
  m.xSync = Sync;
  m.xFetch = Fetch;
  m.xUnfetch = Unfetch;
  sqlite3_vfs& v = g.vfs;
  v = store::ForwardingVfs(base, FaultVfs::kName, sizeof(File));
  v.xOpen = Open;
  v.xDelete = Delete;
  if (sqlite3_vfs_register(&v, /*makeDflt=*/1) != SQLITE_OK) {
    throw std::runtime_error("fault_vfs: sqlite3_vfs_register failed");
  }
}

bool EndsWith(const std::string& s, const char* suffix) {
  const size_t n = std::strlen(suffix);
  return s.size() >= n && s.compare(s.size() - n, n, suffix) == 0;
}

}  // namespace

// Names by enum value, in the order the enums in fault_vfs.h declare them.
const char* FaultOpName(FaultOp op) {
  static constexpr const char* kNames[kFaultOps] = {"write", "sync", "read", "truncate"};
  return kNames[static_cast<int>(op)];
}

const char* FaultTargetName(FaultTarget target) {
  static constexpr const char* kNames[kTargets] = {"any", "wal", "maindb"};
  return kNames[static_cast<int>(target)];
}

const char* FaultKindName(FaultKind kind) {
  static constexpr const char* kNames[] = {"EIO", "ENOSPC", "short"};
  return kNames[static_cast<int>(kind)];
}

std::string FaultSpec::ToString() const {
  return std::string(FaultKindName(kind)) + " on " + FaultOpName(op) + " #" + std::to_string(nth) +
         " of " + FaultTargetName(target) + (sticky ? " (sticky)" : "");
}

FaultVfs& FaultVfs::Install() {
  static FaultVfs* vfs = [] {
    RegisterOnce();
    return new FaultVfs();
  }();
  return *vfs;
}

void FaultVfs::Reset() {
  Global& g = G();
  std::lock_guard<std::mutex> lock(g.mu);
  g.armed = false;
  g.matched = g.fired = 0;
  std::memset(g.counts, 0, sizeof(g.counts));
  g.mutations = 0;
  g.crash_at = g.crash_seen = 0;
  g.crashed = false;
  g.files.clear();
}

void FaultVfs::Arm(const FaultSpec& spec) {
  Global& g = G();
  std::lock_guard<std::mutex> lock(g.mu);
  g.armed = true;
  g.spec = spec;
  g.matched = g.fired = 0;
}

void FaultVfs::Disarm() {
  std::lock_guard<std::mutex> lock(G().mu);
  G().armed = false;
}

int64_t FaultVfs::fired() const {
  std::lock_guard<std::mutex> lock(G().mu);
  return G().fired;
}

FaultCounts FaultVfs::Counts(FaultTarget target) const {
  std::lock_guard<std::mutex> lock(G().mu);
  FaultCounts c;
  for (int o = 0; o < kFaultOps; ++o) c.ops[o] = G().counts[static_cast<int>(target)][o];
  return c;
}

int64_t FaultVfs::Mutations() const {
  std::lock_guard<std::mutex> lock(G().mu);
  return G().mutations;
}

void FaultVfs::ResetCounts() {
  std::lock_guard<std::mutex> lock(G().mu);
  std::memset(G().counts, 0, sizeof(G().counts));
  G().mutations = 0;
}

void FaultVfs::ArmCrash(int64_t nth, CrashMode mode) {
  std::lock_guard<std::mutex> lock(G().mu);
  G().crash_at = nth;
  G().crash_seen = 0;
  G().crash_mode = mode;
}

void FaultVfs::Crash(CrashMode mode) {
  std::lock_guard<std::mutex> lock(G().mu);
  G().crashed = true;
  G().crash_mode = mode;
}

bool FaultVfs::crashed() const {
  std::lock_guard<std::mutex> lock(G().mu);
  return G().crashed;
}

void FaultVfs::set_real_sync(bool on) {
  std::lock_guard<std::mutex> lock(G().mu);
  G().real_sync = on;
}

void FaultVfs::SimulatePowerLoss() {
  Global& g = G();
  std::lock_guard<std::mutex> lock(g.mu);
  for (auto& [path, st] : g.files) {
    struct stat sb;
    if (::stat(path.c_str(), &sb) == 0) {
      int fd = ::open(path.c_str(), O_RDWR);
      if (fd < 0) throw std::runtime_error("fault_vfs: cannot open " + path);
      for (auto it = st.undo.rbegin(); it != st.undo.rend(); ++it) {
        const char* p = it->old.data();
        size_t left = it->old.size();
        off_t at = it->offset;
        while (left > 0) {
          ssize_t w = ::pwrite(fd, p, left, at);
          if (w <= 0) {
            ::close(fd);
            throw std::runtime_error("fault_vfs: cannot restore " + path);
          }
          p += w;
          left -= static_cast<size_t>(w);
          at += w;
        }
      }
      if (::ftruncate(fd, st.synced_size) != 0) {
        ::close(fd);
        throw std::runtime_error("fault_vfs: cannot truncate " + path);
      }
      ::close(fd);
    }
    // The wal-index is shared memory: never durable.
    std::string shm = EndsWith(path, "-wal") ? path.substr(0, path.size() - 4) + "-shm"
                                             : path + "-shm";
    ::unlink(shm.c_str());
  }
  g.files.clear();
  g.crashed = false;
  g.crash_at = g.crash_seen = 0;
  g.armed = false;
}

}  // namespace testing
