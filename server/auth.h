#ifndef EDGEALLOC_SERVER_AUTH_H_
#define EDGEALLOC_SERVER_AUTH_H_

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
};

// A KeyStore holds the bearer keys of a keys file and says whose a key is.
// Immutable after Load; safe to share between io threads. Keys are compared
// in constant time and never logged or put into messages.
class KeyStore {
 public:
  static constexpr size_t kMaxKeyBytes = 256;

  // An empty store: open mode (no keys configured).
  KeyStore() = default;

  // Reads `path`: one `key role [tenant]` a line, roles admin|tenant|container,
  // `#` comments and blank lines ignored; role tenant needs its tenant name.
  // Returns InvalidArgument naming the file and line on a bad line, IOError if
  // the file cannot be read. *out is set only on success.
  static store::Status Load(const std::string& path, KeyStore* out);
  // As Load, from text; `name` is used in messages.
  static store::Status Parse(std::string_view text, const std::string& name, KeyStore* out);

  // False in open mode.
  bool configured() const { return !keys_.empty(); }
  size_t size() const { return keys_.size(); }

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
// In open mode every request is allowed as admin of tenant "default".
// Sets *who when allowed.
AuthVerdict Authorize(const KeyStore& keys, std::string_view authorization, Access access,
                      Principal* who);

}  // namespace server

#endif  // EDGEALLOC_SERVER_AUTH_H_
