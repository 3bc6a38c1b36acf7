#ifndef EDGEALLOC_SERVER_HTTP_AUTH_H_
#define EDGEALLOC_SERVER_HTTP_AUTH_H_

#include <array>
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "store/status.h"

namespace server {

enum class Role { kAdmin, kTenant, kContainer };

// What a route asks of its caller.
enum class Access {
  kPublic,     // no key needed (/healthz, /readyz, /metrics, /dashboard)
  kAdmin,      // admin only (containers)
  kTenant,     // tenant or admin (sessions, capacity)
  kContainer,  // container or admin (heartbeats)
};

// Who a request comes from, once its key is known.
struct Principal {
  Role role = Role::kAdmin;
  std::string tenant = "default";
  // Container keys only: the ids the key may report heartbeats for, an exact
  // id or a prefix ending in '*'; empty for any id (an unscoped key).
  std::string report_ids;

  // True if this caller may send heartbeats naming container `id`: always
  // for an admin or an unscoped container key; else if `id` fits report_ids.
  bool MayReport(std::string_view id) const;
};

// A keys file that its group or every user may read gives the service's keys
// away: refused (InvalidArgument naming the mode and the fix) when the
// server listens beyond loopback, else Ok with *warning set for the log.
// Ok with no warning if it is private, or cannot be stat()ed (Load says why).
store::Status CheckKeysFileAccess(const std::string& path, bool beyond_loopback,
                                  std::string* warning);

// A KeyStore holds the bearer keys of a keys file and says whose a key is.
// Immutable after Load; safe to share between io threads. Keys are compared
// in constant time and never logged or put into messages.
class KeyStore {
 public:
  static constexpr size_t kMaxKeyBytes = 256;

  // An empty store: open mode (no keys configured).
  KeyStore() = default;

  // Longest ids pattern of a container key, in bytes.
  static constexpr size_t kMaxPatternBytes = 1024;

  // Reads `path` and parses it as Parse does; IOError if it cannot be read.
  static store::Status Load(const std::string& path, KeyStore* out);

  // Parses the text of a keys file. A pure function of its arguments (no I/O,
  // no globals), so it can be fuzzed. One key a line:
  //   key admin [tenant]
  //   key tenant TENANT
  //   key container [IDS]   IDS: an exact container id, or a prefix ending
  //                         in '*' ("weur-1*"); without it, any id
  // `#` starts a comment; blank lines are ignored; a UTF-8 byte order mark at
  // the very start is skipped. Returns Ok and sets *out; else InvalidArgument
  // naming `name`, the line number and what is wrong, and *out is untouched.
  // A message never holds any text of the file (a key could be anywhere in a
  // malformed line, e.g. with its columns swapped).
  static store::Status Parse(std::string_view text, const std::string& name, KeyStore* out);

  // False in open mode.
  bool configured() const { return !keys_.empty(); }
  size_t size() const { return keys_.size(); }
  // Container keys without an ids pattern: each may report any container.
  size_t unscoped_container_keys() const;

  // Finds the key; true and *who set if known. Takes the same time whatever
  // the key and wherever it differs (every stored key is compared in full).
  bool Lookup(std::string_view key, Principal* who) const;

 private:
  struct Entry {
    std::array<unsigned char, kMaxKeyBytes> bytes{};
    size_t length = 0;
    Principal who;
  };
  std::vector<Entry> keys_;
};

// Outcome of checking a request against a route's Access.
enum class AuthVerdict { kAllowed, kUnauthorized, kForbidden };

// Checks the Authorization header value (may be empty) against `access`.
// The scheme `Bearer` is matched case-insensitively (RFC 9110 11.1), followed
// by one or more spaces and the key.
// In open mode every request is allowed as admin of tenant "default".
// Sets *who when allowed.
AuthVerdict Authorize(const KeyStore& keys, std::string_view authorization, Access access,
                      Principal* who);

}  // namespace server

#endif  // EDGEALLOC_SERVER_HTTP_AUTH_H_
