#ifndef EDGEALLOC_SERVER_KEYS_RELOAD_H_
#define EDGEALLOC_SERVER_KEYS_RELOAD_H_

#include <map>
#include <string>

#include "server/http/auth.h"
#include "store/status.h"
#include "store/types.h"

namespace server {

// Reading the --keys file, at start and at each reload (SIGHUP), the same
// way both times.

// Reads the keys file at `path` into *out: refused (InvalidArgument) if its
// group or every user may read or write it while the server listens beyond
// loopback (a warning in the log on loopback), InvalidArgument naming the
// line for a malformed one, IOError if it cannot be read. Logs a warning for
// container keys that may report any id. *out is untouched unless Ok.
store::Status ReadKeysFile(const std::string& path, bool beyond_loopback, KeyStore* out);

// The log line of a reload that took: how many keys and tenants now, and
// which tenants of `before` the file no longer names (their sessions are
// kept until released or their leases end; no key of theirs is left).
std::string DescribeReload(const std::string& path,
                           const std::map<std::string, store::TenantLimits>& before,
                           const KeyStore& now);

}  // namespace server

#endif  // EDGEALLOC_SERVER_KEYS_RELOAD_H_
