#include "server/http/auth.h"

#include <sys/stat.h>

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/http_url.h"
#include "base/read_file.h"

// Reading a keys file into a KeyStore (KeyStore::Load, KeyStore::Parse), and
// checking who may read it; the keys' use is in auth.cc.

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
  std::optional<std::string> webhook, webhook_secret_file;
};

constexpr size_t kMaxWebhookTextBytes = 2048;

// webhook= and webhook_secret_file=, as ParseLimit takes a limit.
std::string ParseWebhookField(std::string_view name, std::string_view value,
                              const std::string& where, GivenLimits* given) {
  const bool url = name == "webhook";
  std::optional<std::string>& slot = url ? given->webhook : given->webhook_secret_file;
  if (slot) return where + std::string(name) + " given twice on the line";
  if (value.empty() || value.size() > kMaxWebhookTextBytes) {
    return where + std::string(name) + " must be 1 to 2048 bytes";
  }
  base::HttpUrl parsed;
  std::string error;
  if (url && !base::ParseHttpUrl(value, /*https=*/true, &parsed, &error)) {
    return where + "webhook must be an http:// or https:// URL: " + error;
  }
  slot = std::string(value);
  return "";
}

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
    return where + "expected a limit as NAME=VALUE (max_sessions, claims_per_s, max_waiters, "
                   "webhook, webhook_secret_file)";
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
  if (name == "webhook" || name == "webhook_secret_file") {
    return ParseWebhookField(name, value, where, given);
  }
  return where + "unknown limit; the limits are max_sessions, claims_per_s, max_waiters, "
                 "webhook, webhook_secret_file";
}

// True if `word` looks like a limit (NAME=...), for a clearer refusal of one
// on a line that takes none.
bool LooksLikeLimit(std::string_view word) {
  for (std::string_view name : {"max_sessions=", "claims_per_s=", "max_waiters=", "webhook=",
                                "webhook_secret_file="}) {
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
  if (error.empty()) error = merge(line.webhook, &tenant->webhook, "webhook");
  if (error.empty()) {
    error = merge(line.webhook_secret_file, &tenant->webhook_secret_file, "webhook_secret_file");
  }
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

// No message below may quote a field: with its columns swapped or split
// oddly, any field of the line may be the key.

// Too few fields, or too many for a line that is not a tenant's; `w` is not
// empty.
store::Status CheckFieldCount(const std::vector<std::string>& w, const std::string& where) {
  if (w.size() >= 2 && (w.size() <= 3 || w[1] == "tenant")) return store::Status::Ok();
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

// The role the second field names, and whether the line's field count suits it.
store::Status ParseRole(const std::vector<std::string>& w, const std::string& where, Role* role) {
  if (w[1] == "admin") {
    *role = Role::kAdmin;
  } else if (w[1] == "tenant") {
    *role = Role::kTenant;
    if (w.size() < 3) {
      return store::Status::InvalidArgument(
          where + "role tenant needs a tenant name: 'key tenant NAME'");
    }
  } else if (w[1] == "container") {
    *role = Role::kContainer;
  } else if (w[1] == "metrics") {
    *role = Role::kMetrics;
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
  return store::Status::Ok();
}

// A container key's third field: the ids it may report.
store::Status ParseReportIds(const std::string& ids, const std::string& where, Principal* who) {
  if (ids.size() > KeyStore::kMaxPatternBytes) {
    return store::Status::InvalidArgument(where + "ids pattern longer than " +
                                          std::to_string(KeyStore::kMaxPatternBytes) + " bytes");
  }
  if (ids.find('*') < ids.size() - 1) {
    return store::Status::InvalidArgument(
        where + "ids pattern has '*' before its end: give an exact id or a prefix ending in "
                "'*' ('key container weur-1*')");
  }
  who->report_ids = ids;
  return store::Status::Ok();
}

// Another key's third field: its tenant, whose limits the line's join.
store::Status ParseTenant(const std::string& tenant, const GivenLimits& line_limits,
                          const std::string& where, std::map<std::string, GivenLimits>* given,
                          Principal* who) {
  if (LooksLikeLimit(tenant)) {
    return store::Status::InvalidArgument(
        where + "the third field is a limit, not a tenant name: 'key tenant NAME [limits]'");
  }
  if (tenant.size() > 256) {
    return store::Status::InvalidArgument(where + "tenant name longer than 256 characters");
  }
  if (tenant == Principal{}.tenant) {
    // An admin key's own sessions are tenant "default"s: a tenant key of
    // that name could list and release them.
    return store::Status::InvalidArgument(
        where + "the tenant name 'default' is reserved for the sessions admin keys claim; "
                "give the tenant another name");
  }
  who->tenant = tenant;
  std::string error = MergeLimits(line_limits, &(*given)[tenant]);
  if (!error.empty()) return store::Status::InvalidArgument(where + error);
  return store::Status::Ok();
}

// One line's fields `w` (not empty) as the Principal of its key, w[0]; the
// limits it gives into *given. `where` names the line.
store::Status ParseKeyLine(const std::vector<std::string>& w, const std::string& where,
                           std::map<std::string, GivenLimits>* given, Principal* who) {
  RETURN_IF_ERROR(CheckFieldCount(w, where));
  if (w[0].size() > KeyStore::kMaxKeyBytes) {
    return store::Status::InvalidArgument(where + "key longer than " +
                                          std::to_string(KeyStore::kMaxKeyBytes) + " bytes");
  }
  RETURN_IF_ERROR(ParseRole(w, where, &who->role));
  if (w.size() == 3 && who->role == Role::kAdmin && LooksLikeLimit(w[2])) {
    return store::Status::InvalidArgument(
        where + "limits are given on tenant lines only ('key tenant NAME max_sessions=N'); an "
                "admin key naming that tenant has them too");
  }
  GivenLimits line_limits;
  for (size_t i = 3; i < w.size(); ++i) {
    std::string error = ParseLimit(w[i], i, &line_limits);
    if (!error.empty()) return store::Status::InvalidArgument(where + error);
  }
  if (w.size() == 3 && who->role == Role::kContainer) return ParseReportIds(w[2], where, who);
  if (w.size() >= 3) return ParseTenant(w[2], line_limits, where, given, who);
  return store::Status::Ok();
}

}  // namespace

store::Status CheckKeysFileAccess(const std::string& path, bool beyond_loopback,
                                  std::string* warning) {
  warning->clear();
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return store::Status::Ok();  // Load says why
  const bool read = (st.st_mode & (S_IRGRP | S_IROTH)) != 0;
  const bool written = (st.st_mode & (S_IWGRP | S_IWOTH)) != 0;
  if (!read && !written) return store::Status::Ok();
  auto whom = [&st](mode_t other, const char* verb) {
    return std::string(verb) + ((st.st_mode & other) != 0 ? " every user" : " its group");
  };
  // Read, others have the service's keys; written, they may add their own
  // admin key (then read everything too).
  const std::string may = read && written ? whom(S_IROTH, "read by") + " and " +
                                                whom(S_IWOTH, "written by")
                          : read ? whom(S_IROTH, "read by")
                                 : whom(S_IWOTH, "written by");
  const std::string what = "the keys file " + path + " may be " + may + " (mode " +
                           ModeText(st.st_mode) + "): " +
                           (written ? "whoever may write it may give themselves a key"
                                    : "its keys are the service's");
  if (beyond_loopback) {
    return store::Status::InvalidArgument(what + "; serving beyond loopback, this is refused: "
                                                 "chmod 600 " + path);
  }
  *warning = what + "; chmod 600 " + path;
  return store::Status::Ok();
}

store::Status KeyStore::Load(const std::string& path, KeyStore* out) {
  std::string text;
  if (!base::ReadFile(path, &text)) return store::Status::IOError("cannot read keys file " + path);
  return Parse(text, path, out);
}

store::Status KeyStore::Parse(std::string_view text, const std::string& name, KeyStore* out) {
  // Editors on Windows save UTF-8 with a byte order mark; it is not a key's.
  constexpr std::string_view kBom = "\xEF\xBB\xBF";
  if (text.substr(0, kBom.size()) == kBom) text.remove_prefix(kBom.size());
  Table result;
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
    const std::string where = name + ":" + std::to_string(line_no) + ": ";
    Entry e;
    RETURN_IF_ERROR(ParseKeyLine(w, where, &given, &e.who));
    std::copy(w[0].begin(), w[0].end(), e.bytes.begin());
    e.length = w[0].size();
    // A digest, so that the key's text is kept nowhere else; a collision
    // would only make two keys share a budget.
    e.who.key_id = std::to_string(std::hash<std::string>{}(w[0]));
    Principal ignored;
    if (LookupIn(result, w[0], &ignored)) {
      return store::Status::InvalidArgument(where + "the same key appears twice");
    }
    result.metrics_keys += e.who.role == Role::kMetrics;
    result.keys.push_back(std::move(e));
  }
  if (result.keys.empty()) {
    return store::Status::InvalidArgument(name + ": no keys; a keys file needs at least one line");
  }
  // The limits are the tenant's, whichever line gave them.
  for (const auto& [tenant, limits] : given) {
    result.tenants[tenant] = LimitsOfGiven(limits);
    if (limits.webhook.has_value() != limits.webhook_secret_file.has_value()) {
      return store::Status::InvalidArgument(
          name + ": tenant " + tenant + ": webhook and webhook_secret_file go together");
    }
    if (limits.webhook) result.webhooks[tenant] = {*limits.webhook, *limits.webhook_secret_file};
  }
  for (Entry& entry : result.keys) {
    auto it = result.tenants.find(entry.who.tenant);
    if (it != result.tenants.end() && entry.who.role != Role::kContainer) {
      entry.who.limits = it->second;
    }
  }
  out->table_.Store(std::make_shared<const Table>(std::move(result)));
  return store::Status::Ok();
}

}  // namespace server
