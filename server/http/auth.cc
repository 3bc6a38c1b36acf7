#include "server/http/auth.h"

#include <algorithm>
#include <array>
#include <memory>
#include <string>
#include <string_view>

// Whose a key is and what it may call; reading a keys file is auth_keys_file.cc.

namespace server {
namespace {

// 0 if equal, nonzero otherwise; looks at every byte of both buffers.
unsigned ConstantTimeDiff(const std::array<unsigned char, KeyStore::kMaxKeyBytes>& a, size_t alen,
                          const std::array<unsigned char, KeyStore::kMaxKeyBytes>& b,
                          size_t blen) {
  unsigned diff = static_cast<unsigned>(alen ^ blen);
  for (size_t i = 0; i < KeyStore::kMaxKeyBytes; ++i) diff |= a[i] ^ b[i];
  return diff;
}

bool EqualsIgnoreAsciiCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    auto lower = [](char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; };
    if (lower(a[i]) != lower(b[i])) return false;
  }
  return true;
}

}  // namespace

bool Principal::MayReport(std::string_view id) const {
  if (role != Role::kContainer || report_ids.empty()) return true;
  if (report_ids.back() == '*') {
    std::string_view prefix(report_ids.data(), report_ids.size() - 1);
    return id.substr(0, prefix.size()) == prefix;
  }
  return id == report_ids;
}

store::TenantLimits KeyStore::LimitsOf(const std::string& tenant) const {
  const std::shared_ptr<const Table> table = table_.Load();
  auto it = table->tenants.find(tenant);
  return it == table->tenants.end() ? store::TenantLimits{} : it->second;
}

size_t KeyStore::unscoped_container_keys() const {
  size_t n = 0;
  // Held by name: in a range-for the temporary would die first, and a
  // reload could free the table under the loop.
  const std::shared_ptr<const Table> table = table_.Load();
  for (const Entry& e : table->keys) {
    n += e.who.role == Role::kContainer && e.who.report_ids.empty();
  }
  return n;
}

bool KeyStore::Lookup(std::string_view key, Principal* who) const {
  return LookupIn(*table_.Load(), key, who);
}

bool KeyStore::LookupIn(const Table& table, std::string_view key, Principal* who) {
  if (key.empty() || key.size() > kMaxKeyBytes) return false;
  std::array<unsigned char, kMaxKeyBytes> probe{};
  std::copy(key.begin(), key.end(), probe.begin());
  // Every key is compared in full, and the match is selected without a branch
  // on the data, so the time says nothing about which byte differed.
  const std::vector<Entry>& keys = table.keys;
  size_t found = keys.size();
  for (size_t i = 0; i < keys.size(); ++i) {
    unsigned diff = ConstantTimeDiff(keys[i].bytes, keys[i].length, probe, key.size());
    size_t mask = static_cast<size_t>(0) - static_cast<size_t>(diff == 0);
    found = (i & mask) | (found & ~mask);
  }
  if (found == keys.size()) return false;
  *who = keys[found].who;
  return true;
}

AuthVerdict Authorize(const KeyStore& keys, std::string_view authorization, Access access,
                      Principal* who) {
  if (access == Access::kPublic) return AuthVerdict::kAllowed;
  // One set of keys for the whole check, though a reload may swap in another.
  const std::shared_ptr<const KeyStore::Table> table = keys.table_.Load();
  // /metrics is public until a metrics key is configured.
  if (access == Access::kMetrics && table->metrics_keys == 0) return AuthVerdict::kAllowed;
  if (table->keys.empty()) {
    *who = Principal{};  // the admin of tenant "default", any id
    return AuthVerdict::kAllowed;
  }
  // RFC 9110 11.1: the scheme is case-insensitive; at least one space follows.
  constexpr std::string_view kBearer = "bearer";
  if (authorization.size() <= kBearer.size() + 1 ||
      !EqualsIgnoreAsciiCase(authorization.substr(0, kBearer.size()), kBearer) ||
      authorization[kBearer.size()] != ' ') {
    return AuthVerdict::kUnauthorized;
  }
  std::string_view key = authorization.substr(kBearer.size() + 1);
  while (!key.empty() && key.front() == ' ') key.remove_prefix(1);
  while (!key.empty() && key.back() == ' ') key.remove_suffix(1);
  Principal p;
  if (!KeyStore::LookupIn(*table, key, &p)) return AuthVerdict::kUnauthorized;
  bool ok = false;
  switch (access) {
    case Access::kPublic: ok = true; break;
    case Access::kAdmin: ok = p.role == Role::kAdmin; break;
    case Access::kTenant: ok = p.role == Role::kAdmin || p.role == Role::kTenant; break;
    case Access::kContainer: ok = p.role == Role::kAdmin || p.role == Role::kContainer; break;
    case Access::kCapacity:
      ok = p.role == Role::kAdmin || p.role == Role::kTenant || p.role == Role::kMetrics;
      break;
    case Access::kMetrics: ok = p.role == Role::kAdmin || p.role == Role::kMetrics; break;
  }
  *who = p;
  return ok ? AuthVerdict::kAllowed : AuthVerdict::kForbidden;
}

std::string_view RoleName(Role role) {
  switch (role) {
    case Role::kAdmin: return "admin";
    case Role::kTenant: return "tenant";
    case Role::kContainer: return "container";
    case Role::kMetrics: return "metrics";
  }
  return "unknown";
}

std::string ForbiddenMessage(Role role, Access access) {
  std::string_view needs = "";
  switch (access) {
    case Access::kPublic: needs = "no key"; break;
    case Access::kAdmin: needs = "an admin key"; break;
    case Access::kTenant: needs = "a tenant or admin key"; break;
    case Access::kContainer: needs = "a container or admin key"; break;
    case Access::kCapacity: needs = "a tenant, admin or metrics key"; break;
    case Access::kMetrics: needs = "a metrics or admin key"; break;
  }
  return "a " + std::string(RoleName(role)) + " key may not do this; it needs " +
         std::string(needs);
}

}  // namespace server
