#ifndef EDGEALLOC_STORE_SQLITE_FORWARDING_VFS_H_
#define EDGEALLOC_STORE_SQLITE_FORWARDING_VFS_H_

#include <sqlite3.h>

#include <cstddef>

namespace store {

// The base of an SQLite shim VFS, one that wraps another VFS and changes a
// few of its calls (as SQLite's own test shims and vfstrace do): every call
// passes through to the wrapped VFS or file unless the shim sets its own.
// The coalescing WAL VFS (store/sqlite/wal_vfs.cc) and the tests'
// fault-injecting VFS (tests/support/fault_vfs.cc) are both built on it, so
// the pass-through is written once.

// The start of a shim's file struct: SQLite allocates szOsFile bytes for it,
// and the wrapped VFS's file lives right behind the shim's struct. A shim
// derives its own file from it (no virtual functions) and casts with
// AsForwardingFile.
struct ForwardingFile {
  sqlite3_file base;
  sqlite3_file* real;  // the wrapped VFS's file
};

inline ForwardingFile* AsForwardingFile(sqlite3_file* f) {
  return reinterpret_cast<ForwardingFile*>(f);
}

// io methods (version 3) that all pass through to ForwardingFile::real; a
// shim overrides the ones it changes.
sqlite3_io_methods ForwardingIoMethods();

// A VFS (version 2) named `name` over `base` (kept in pAppData) whose calls
// all pass through to it; its files are `file_struct_size` bytes of the
// shim's struct plus the base's. xOpen is left null: the shim's opens the
// base file with OpenBaseFile. REQUIRES: base is version 2 or later.
sqlite3_vfs ForwardingVfs(sqlite3_vfs* base, const char* name, size_t file_struct_size);

// The VFS a ForwardingVfs wraps.
inline sqlite3_vfs* BaseVfs(sqlite3_vfs* vfs) { return static_cast<sqlite3_vfs*>(vfs->pAppData); }

// Opens the base VFS's file behind `file` (whose struct is file_struct_size
// bytes) and points file->real at it; file answers to `methods`, or to none
// when the base open left none (SQLite then does not call xClose).
int OpenBaseFile(sqlite3_vfs* vfs, sqlite3_filename name, ForwardingFile* file,
                 size_t file_struct_size, const sqlite3_io_methods* methods, int flags,
                 int* out_flags);

}  // namespace store

#endif  // EDGEALLOC_STORE_SQLITE_FORWARDING_VFS_H_
