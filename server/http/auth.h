#ifndef EDGEALLOC_SERVER_HTTP_AUTH_H_
#define EDGEALLOC_SERVER_HTTP_AUTH_H_

#include <array>
#include <cstddef>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/shared_slot.h"
#include "store/status.h"
#include "store/types.h"

namespace server {

// kMetrics: a scraper's key (`KEY metrics`): /metrics and the capacity
// reads the dashboard makes, nothing else.
enum class Role { kAdmin, kTenant, kContainer, kMetrics };

// What a route asks of its caller.
enum class Access {
  kPublic,     // no key needed (/healthz, /readyz, /dashboard)
  kAdmin,      // admin only (containers)
  kTenant,     // tenant or admin (sessions)
  kContainer,  // container or admin (heartbeats)
  kCapacity,   // tenant, admin or metrics (capacity and its history)
  // /metrics: no key needed unless the keys file has a metrics key; then a
  // metrics or an admin key.
  kMetrics,
};

// Who a request comes from, once its key is known.
struct Principal {
  Role role = Role::kAdmin;
  std::string tenant = "default";
  // Container keys only: the ids the key may report heartbeats for, an exact
  // id or a prefix ending in '*'; empty for any id (an unscoped key).
  std::string report_ids;
  // The limits of `tenant` from the keys file (every key of that tenant,
  // admin keys naming it too, gets the same); unset where none were given.
  store::TenantLimits limits;
  // Names the key, never its text: what a budget of the key's own (its
  // heartbeat items a second) is kept under. Stable across reloads of the
  // keys file; empty in open mode.
  std::string key_id;

  // True if this caller may send heartbeats naming container `id`: always
  // for an admin or an unscoped container key; else if `id` fits report_ids.
  bool MayReport(std::string_view id) const;
};

// A keys file that its group or every user may read gives the service's keys
// away, and one they may write lets them add their own: either is refused
// (InvalidArgument naming the mode and the fix) when the server listens
// beyond loopback, else Ok with *warning set for the log.
// Ok with no warning if it is private, or cannot be stat()ed (Load says why).
store::Status CheckKeysFileAccess(const std::string& path, bool beyond_loopback,
                                  std::string* warning);

// A tenant's webhook: where its events are POSTed, and the file holding
// the secret that signs them (read when delivering, not by Parse).
struct WebhookTarget {
  std::string url;
  std::string secret_file;
  bool operator==(const WebhookTarget& o) const {
    return url == o.url && secret_file == o.secret_file;
  }
};

// Outcome of checking a request against a route's Access.
enum class AuthVerdict { kAllowed, kUnauthorized, kForbidden };

// A KeyStore holds the bearer keys of a keys file and says whose a key is.
// Safe to share between io threads. Assigning another KeyStore to it
// replaces its keys at once (a reload): each call reads one set, the old or
// the new, never a mix. Keys are compared in constant time and never logged
// or put into messages. Reading a keys file (Load, Parse, and
// CheckKeysFileAccess above) is in auth_keys_file.cc; the rest in auth.cc.
class KeyStore {
 public:
  static constexpr size_t kMaxKeyBytes = 256;

  // An empty store: open mode (no keys configured).
  KeyStore() = default;
  KeyStore(const KeyStore& other) : table_(other.table_.Load()) {}
  KeyStore& operator=(const KeyStore& other) {
    if (this != &other) table_.Store(other.table_.Load());
    return *this;
  }

  // Longest ids pattern of a container key, in bytes.
  static constexpr size_t kMaxPatternBytes = 1024;

  // Reads `path` and parses it as Parse does; IOError if it cannot be read.
  static store::Status Load(const std::string& path, KeyStore* out);

  // Parses the text of a keys file. A pure function of its arguments (no I/O,
  // no globals), so it can be fuzzed. One key a line:
  //   key admin [tenant]
  //   key tenant TENANT [LIMIT=VALUE ...]
  //   key container [IDS]   IDS: an exact container id, or a prefix ending
  //                         in '*' ("weur-1*"); without it, any id
  //   key metrics           may read /metrics (and capacity), nothing else
  // LIMITs, each at most once a line: max_sessions=N (0 to 1e9, 0 unlimited;
  // overrides --max-sessions-per-tenant), claims_per_s=R (a decimal number,
  // 0 to 1e6, 0 none; new claims a second on this node, burst R),
  // max_waiters=N (0 to 1e6; claims waiting at once, overriding
  // --max-claim-waiters-per-tenant); webhook=URL (http:// or https://) with
  // webhook_secret_file=PATH, both or neither (server/webhooks/). The limits are the tenant's: given on
  // one of its lines they hold for all its keys (admin keys naming it too);
  // the same limit given on two of its lines must have the same value.
  // `#` starts a comment; blank lines are ignored; a UTF-8 byte order mark at
  // the very start is skipped. Returns Ok and sets *out; else InvalidArgument
  // naming `name`, the line number and what is wrong, and *out is untouched.
  // A message never holds any text of the file (a key could be anywhere in a
  // malformed line, e.g. with its columns swapped), only the names of known
  // limits.
  static store::Status Parse(std::string_view text, const std::string& name, KeyStore* out);

  // False in open mode.
  bool configured() const { return !table_.Load()->keys.empty(); }
  size_t size() const { return table_.Load()->keys.size(); }
  // Container keys without an ids pattern: each may report any container.
  size_t unscoped_container_keys() const;
  // True if a `metrics` key is configured: /metrics then asks for a key.
  bool has_metrics_keys() const { return table_.Load()->metrics_keys > 0; }
  // Every tenant a key of the file names (tenant keys, admin keys naming
  // one), with its limits (unset where none were given), by name: a copy,
  // as a reload may replace them.
  std::map<std::string, store::TenantLimits> tenants() const { return table_.Load()->tenants; }
  // The tenants that name a webhook, by name: a copy, as tenants().
  std::map<std::string, WebhookTarget> webhooks() const { return table_.Load()->webhooks; }
  // The limits of `tenant`: unset for a tenant the file does not name.
  store::TenantLimits LimitsOf(const std::string& tenant) const;

  // Finds the key; true and *who set if known. Takes the same time whatever
  // the key and wherever it differs (every stored key is compared in full).
  bool Lookup(std::string_view key, Principal* who) const;

 private:
  struct Entry {
    std::array<unsigned char, kMaxKeyBytes> bytes{};
    size_t length = 0;
    Principal who;
  };
  // One keys file's keys, never changed once made: a reload swaps in another.
  struct Table {
    std::vector<Entry> keys;
    std::map<std::string, store::TenantLimits> tenants;
    std::map<std::string, WebhookTarget> webhooks;
    size_t metrics_keys = 0;
  };
  static bool LookupIn(const Table& table, std::string_view key, Principal* who);
  friend AuthVerdict Authorize(const KeyStore& keys, std::string_view authorization,
                               Access access, Principal* who);

  base::SharedSlot<const Table> table_{std::make_shared<const Table>()};
};

// Checks the Authorization header value (may be empty) against `access`.
// The scheme `Bearer` is matched case-insensitively (RFC 9110 11.1), followed
// by one or more spaces and the key.
// In open mode every request is allowed as admin of tenant "default".
// Sets *who when allowed, and when forbidden (so the refusal can name the
// key's role).
AuthVerdict Authorize(const KeyStore& keys, std::string_view authorization, Access access,
                      Principal* who);

// "admin", "tenant", "container", "metrics": as the keys file spells them.
std::string_view RoleName(Role role);

// The message of a 403 for a key of `who`'s role on a route of `access`:
// the role it has and the roles the route takes.
std::string ForbiddenMessage(Role role, Access access);

}  // namespace server

#endif  // EDGEALLOC_SERVER_HTTP_AUTH_H_
