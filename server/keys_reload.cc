#include "server/keys_reload.h"

#include "server/webhooks/webhook_signature.h"
#include "server/http/log.h"

namespace server {

store::Status ReadKeysFile(const std::string& path, bool beyond_loopback, KeyStore* out) {
  std::string exposed;
  RETURN_IF_ERROR(CheckKeysFileAccess(path, beyond_loopback, &exposed));
  KeyStore next;
  RETURN_IF_ERROR(KeyStore::Load(path, &next));
  if (!exposed.empty()) LogWarn("edgealloc: " + exposed);
  if (size_t n = next.unscoped_container_keys()) {
    // Such a key can report every container dead. The count, never the keys.
    LogWarn("edgealloc: " + std::to_string(n) +
            " container key(s) in the keys file may report any container id; give each the "
            "ids it may report as a third field ('KEY container weur-1*')");
  }
  // A webhook that could never be signed is refused now, not at its first
  // event (its URL was parsed with the keys file).
  for (const auto& [tenant, target] : next.webhooks()) {
    std::string key, error;
    if (!ReadWebhookSecret(target.secret_file, &key, &error)) {
      return store::Status::InvalidArgument(path + ": tenant " + tenant + "'s webhook: " + error);
    }
  }
  *out = next;
  return store::Status::Ok();
}

std::string DescribeReload(const std::string& path,
                           const std::map<std::string, store::TenantLimits>& before,
                           const KeyStore& now) {
  const std::map<std::string, store::TenantLimits> tenants = now.tenants();
  std::string gone;
  for (const auto& entry : before) {
    if (tenants.count(entry.first) != 0) continue;
    gone += (gone.empty() ? "" : ", ") + entry.first;
  }
  std::string line = "edgealloc: keys file " + path + " reloaded: " + std::to_string(now.size()) +
                     " keys, " + std::to_string(tenants.size()) + " tenants";
  if (!gone.empty()) {
    line += "; no longer named: " + gone +
            " (their sessions stay until an admin releases them or their leases end)";
  }
  return line;
}

}  // namespace server
