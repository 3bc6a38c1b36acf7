#include "server/http/auth.h"

#include <sys/stat.h>

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <sstream>

namespace server {
namespace {

std::string ModeText(mode_t mode) {
  char text[8];
  std::snprintf(text, sizeof(text), "%03o", static_cast<unsigned>(mode & 0777));
  return text;
}

std::vector<std::string> Words(std::string_view line) {
  std::vector<std::string> words;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t' || line[i] == '\r')) ++i;
    size_t start = i;
    while (i < line.size() && line[i] != ' ' && line[i] != '\t' && line[i] != '\r') ++i;
    if (i > start) words.emplace_back(line.substr(start, i - start));
  }
  return words;
}

// 0 if equal, nonzero otherwise; looks at every byte of both buffers.
unsigned ConstantTimeDiff(const std::array<unsigned char, KeyStore::kMaxKeyBytes>& a, size_t alen,
                          const std::array<unsigned char, KeyStore::kMaxKeyBytes>& b,
                          size_t blen) {
  unsigned diff = static_cast<unsigned>(alen ^ blen);
  for (size_t i = 0; i < KeyStore::kMaxKeyBytes; ++i) diff |= a[i] ^ b[i];
  return diff;
}

bool IsRole(std::string_view word) {
  return word == "admin" || word == "tenant" || word == "container" || word == "metrics";
}

// Bounds of the limits a tenant line may carry.
constexpr int64_t kMaxSessionsLimit = 1000000000;
constexpr int64_t kMaxWaitersLimit = 1000000;
constexpr double kMaxClaimsPerSecond = 1000000;

// The limits one tenant's lines gave, each at most once.
struct GivenLimits {
  std::optional<int64_t> max_sessions, max_waiters;
  std::optional<double> claims_per_s;
};

bool ParseCount(std::string_view text, int64_t max, int64_t* out) {
  if (text.empty() || text.size() > 12) return false;
  for (char c : text) {
    if (c < '0' || c > '9') return false;
  }
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), *out);
  return ec == std::errc() && end == text.data() + text.size() && *out <= max;
}

// A plain decimal: digits, at most one '.', digits after it (no sign, no
// exponent, no "inf").
bool ParseRate(std::string_view text, double* out) {
  if (text.empty() || text.size() > 24 || text.front() == '.' || text.back() == '.') return false;
  int dots = 0;
  for (char c : text) {
    if (c == '.') {
      ++dots;
    } else if (c < '0' || c > '9') {
      return false;
    }
  }
  if (dots > 1) return false;
  *out = std::strtod(std::string(text).c_str(), nullptr);
  return *out <= kMaxClaimsPerSecond;
}

// One `name=value` field of a tenant line into *given; "" if taken, else
// what is wrong (naming the field by its position and only known names).
std::string ParseLimit(std::string_view word, size_t field, GivenLimits* given) {
  const std::string where = "field " + std::to_string(field + 1) + ": ";
  const size_t eq = word.find('=');
  if (eq == std::string_view::npos) {
    return where + "expected a limit as NAME=VALUE (max_sessions, claims_per_s, max_waiters)";
  }
  const std::string_view name = word.substr(0, eq), value = word.substr(eq + 1);
  if (name == "max_sessions" || name == "max_waiters") {
    const bool sessions = name == "max_sessions";
    std::optional<int64_t>& slot = sessions ? given->max_sessions : given->max_waiters;
    if (slot) return where + std::string(name) + " given twice on the line";
    const int64_t max = sessions ? kMaxSessionsLimit : kMaxWaitersLimit;
    int64_t n = 0;
    if (!ParseCount(value, max, &n)) {
      return where + std::string(name) + " must be a whole number from 0 to " +
             std::to_string(max) + (sessions ? " (0: unlimited)" : "");
    }
    slot = n;
    return "";
  }
  if (name == "claims_per_s") {
    if (given->claims_per_s) return where + "claims_per_s given twice on the line";
    double rate = 0;
    if (!ParseRate(value, &rate)) {
      return where + "claims_per_s must be a number from 0 to 1000000, like 20 or 0.5 (0: none)";
    }
    given->claims_per_s = rate;
    return "";
  }
  return where + "unknown limit; the limits are max_sessions, claims_per_s, max_waiters";
}

// True if `word` looks like a limit (NAME=...), for a clearer refusal of one
// on a line that takes none.
bool LooksLikeLimit(std::string_view word) {
  for (std::string_view name : {"max_sessions=", "claims_per_s=", "max_waiters="}) {
    if (word.substr(0, name.size()) == name) return true;
  }
  return false;
}

// Folds one line's limits into the tenant's; "" if they agree with what
// earlier lines gave, else which limit conflicts.
std::string MergeLimits(const GivenLimits& line, GivenLimits* tenant) {
  auto merge = [](const auto& from, auto* into, const char* name) -> std::string {
    if (!from) return "";
    if (*into && **into != *from) {
      return std::string(name) +
             " differs from the value an earlier line gave the same tenant; a tenant's limits "
             "are its own, whichever of its keys is used: give each once, or the same on every "
             "line";
    }
    *into = from;
    return "";
  };
  std::string error = merge(line.max_sessions, &tenant->max_sessions, "max_sessions");
  if (error.empty()) error = merge(line.claims_per_s, &tenant->claims_per_s, "claims_per_s");
  if (error.empty()) error = merge(line.max_waiters, &tenant->max_waiters, "max_waiters");
  return error;
}

store::TenantLimits LimitsOfGiven(const GivenLimits& given) {
  store::TenantLimits limits;
  if (given.max_sessions) {
    // 0 is unlimited, as for --max-sessions-per-tenant.
    limits.max_sessions = *given.max_sessions == 0 ? store::kUnlimited : *given.max_sessions;
  }
  if (given.max_waiters) limits.max_waiters = *given.max_waiters;
  if (given.claims_per_s) limits.claims_per_s = *given.claims_per_s;
  return limits;
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
  auto it = tenants_.find(tenant);
  return it == tenants_.end() ? store::TenantLimits{} : it->second;
}

size_t KeyStore::unscoped_container_keys() const {
  size_t n = 0;
  for (const Entry& e : keys_) n += e.who.role == Role::kContainer && e.who.report_ids.empty();
  return n;
}

store::Status CheckKeysFileAccess(const std::string& path, bool beyond_loopback,
                                  std::string* warning) {
  warning->clear();
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return store::Status::Ok();  // Load says why
  if ((st.st_mode & (S_IRGRP | S_IROTH)) == 0) return store::Status::Ok();
  const std::string what = "the keys file " + path + " may be read by " +
                           ((st.st_mode & S_IROTH) != 0 ? "every user" : "its group") +
                           " (mode " + ModeText(st.st_mode) + "): its keys are the service's";
  if (beyond_loopback) {
    return store::Status::InvalidArgument(what + "; serving beyond loopback, this is refused: "
                                                 "chmod 600 " + path);
  }
  *warning = what + "; chmod 600 " + path;
  return store::Status::Ok();
}

store::Status KeyStore::Load(const std::string& path, KeyStore* out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return store::Status::IOError("cannot read keys file " + path);
  std::stringstream text;
  text << in.rdbuf();
  return Parse(text.str(), path, out);
}

store::Status KeyStore::Parse(std::string_view text, const std::string& name, KeyStore* out) {
  // Editors on Windows save UTF-8 with a byte order mark; it is not a key's.
  constexpr std::string_view kBom = "\xEF\xBB\xBF";
  if (text.substr(0, kBom.size()) == kBom) text.remove_prefix(kBom.size());
  KeyStore result;
  std::map<std::string, GivenLimits> given;  // every tenant a line names
  int line_no = 0;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string_view::npos) nl = text.size();
    std::string_view line = text.substr(pos, nl - pos);
    pos = nl + 1;
    ++line_no;
    size_t hash = line.find('#');
    if (hash != std::string_view::npos) line = line.substr(0, hash);
    std::vector<std::string> w = Words(line);
    if (w.empty()) continue;
    // No message below may quote a field: with its columns swapped or split
    // oddly, any field of the line may be the key.
    std::string where = name + ":" + std::to_string(line_no) + ": ";
    if (w.size() < 2 || (w.size() > 3 && w[1] != "tenant")) {
      if (w.size() > 3 && w[1] == "admin" &&
          std::any_of(w.begin() + 2, w.end(), [](const std::string& x) { return LooksLikeLimit(x); })) {
        return store::Status::InvalidArgument(
            where + "limits are given on tenant lines only ('key tenant NAME max_sessions=N'); "
                    "an admin key naming that tenant has them too");
      }
      return store::Status::InvalidArgument(
          where + std::to_string(w.size()) +
          " fields; expected 'key role [tenant or ids]', or 'key tenant NAME [limits]'");
    }
    Entry e;
    if (w[0].size() > kMaxKeyBytes) {
      return store::Status::InvalidArgument(where + "key longer than " +
                                            std::to_string(kMaxKeyBytes) + " bytes");
    }
    if (w[1] == "admin") {
      e.who.role = Role::kAdmin;
    } else if (w[1] == "tenant") {
      e.who.role = Role::kTenant;
      if (w.size() < 3) {
        return store::Status::InvalidArgument(
            where + "role tenant needs a tenant name: 'key tenant NAME'");
      }
    } else if (w[1] == "container") {
      e.who.role = Role::kContainer;
    } else if (w[1] == "metrics") {
      e.who.role = Role::kMetrics;
      if (w.size() > 2) {
        return store::Status::InvalidArgument(
            where + "a metrics key takes no third field: 'key metrics'");
      }
    } else if (IsRole(w[0])) {
      return store::Status::InvalidArgument(
          where + "the first field is a role and the second is not: columns swapped? A line is "
                  "'key role [tenant or ids]', roles admin, tenant, container, metrics");
    } else {
      return store::Status::InvalidArgument(
          where + "the second field is not a role: one of admin, tenant, container, metrics");
    }
    if (w.size() == 3 && e.who.role == Role::kAdmin && LooksLikeLimit(w[2])) {
      return store::Status::InvalidArgument(
          where + "limits are given on tenant lines only ('key tenant NAME max_sessions=N'); an "
                  "admin key naming that tenant has them too");
    }
    GivenLimits line_limits;
    for (size_t i = 3; i < w.size(); ++i) {
      std::string error = ParseLimit(w[i], i, &line_limits);
      if (!error.empty()) return store::Status::InvalidArgument(where + error);
    }
    if (w.size() == 3 && e.who.role == Role::kContainer) {
      const std::string& ids = w[2];
      if (ids.size() > kMaxPatternBytes) {
        return store::Status::InvalidArgument(where + "ids pattern longer than " +
                                              std::to_string(kMaxPatternBytes) + " bytes");
      }
      if (ids.find('*') < ids.size() - 1) {
        return store::Status::InvalidArgument(
            where + "ids pattern has '*' before its end: give an exact id or a prefix ending in "
                    "'*' ('key container weur-1*')");
      }
      e.who.report_ids = ids;
    } else if (w.size() >= 3) {
      if (LooksLikeLimit(w[2])) {
        return store::Status::InvalidArgument(
            where + "the third field is a limit, not a tenant name: 'key tenant NAME [limits]'");
      }
      if (w[2].size() > 256) {
        return store::Status::InvalidArgument(where + "tenant name longer than 256 characters");
      }
      if (w[2] == Principal{}.tenant) {
        // An admin key's own sessions are tenant "default"s: a tenant key of
        // that name could list and release them.
        return store::Status::InvalidArgument(
            where + "the tenant name 'default' is reserved for the sessions admin keys claim; "
                    "give the tenant another name");
      }
      e.who.tenant = w[2];
      std::string error = MergeLimits(line_limits, &given[e.who.tenant]);
      if (!error.empty()) return store::Status::InvalidArgument(where + error);
    }
    std::copy(w[0].begin(), w[0].end(), e.bytes.begin());
    e.length = w[0].size();
    Principal ignored;
    if (result.Lookup(w[0], &ignored)) {
      return store::Status::InvalidArgument(where + "the same key appears twice");
    }
    result.metrics_keys_ += e.who.role == Role::kMetrics;
    result.keys_.push_back(std::move(e));
    if (pos > text.size()) break;
  }
  if (result.keys_.empty()) {
    return store::Status::InvalidArgument(name + ": no keys; a keys file needs at least one line");
  }
  // The limits are the tenant's, whichever line gave them.
  for (const auto& [tenant, limits] : given) result.tenants_[tenant] = LimitsOfGiven(limits);
  for (Entry& entry : result.keys_) {
    auto it = result.tenants_.find(entry.who.tenant);
    if (it != result.tenants_.end() && entry.who.role != Role::kContainer) {
      entry.who.limits = it->second;
    }
  }
  *out = std::move(result);
  return store::Status::Ok();
}

bool KeyStore::Lookup(std::string_view key, Principal* who) const {
  if (key.empty() || key.size() > kMaxKeyBytes) return false;
  std::array<unsigned char, kMaxKeyBytes> probe{};
  std::copy(key.begin(), key.end(), probe.begin());
  // Every key is compared in full, and the match is selected without a branch
  // on the data, so the time says nothing about which byte differed.
  size_t found = keys_.size();
  for (size_t i = 0; i < keys_.size(); ++i) {
    unsigned diff = ConstantTimeDiff(keys_[i].bytes, keys_[i].length, probe, key.size());
    size_t mask = static_cast<size_t>(0) - static_cast<size_t>(diff == 0);
    found = (i & mask) | (found & ~mask);
  }
  if (found == keys_.size()) return false;
  *who = keys_[found].who;
  return true;
}

AuthVerdict Authorize(const KeyStore& keys, std::string_view authorization, Access access,
                      Principal* who) {
  if (access == Access::kPublic) return AuthVerdict::kAllowed;
  // /metrics is public until a metrics key is configured.
  if (access == Access::kMetrics && !keys.has_metrics_keys()) return AuthVerdict::kAllowed;
  if (!keys.configured()) {
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
  if (!keys.Lookup(key, &p)) return AuthVerdict::kUnauthorized;
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
  if (!ok) return AuthVerdict::kForbidden;
  *who = p;
  return AuthVerdict::kAllowed;
}

}  // namespace server
