#include "server/auth.h"

#include <fstream>
#include <sstream>

namespace server {
namespace {

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

}  // namespace

store::Status KeyStore::Load(const std::string& path, KeyStore* out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return store::Status::IOError("cannot read keys file " + path);
  std::stringstream text;
  text << in.rdbuf();
  return Parse(text.str(), path, out);
}

store::Status KeyStore::Parse(std::string_view text, const std::string& name, KeyStore* out) {
  KeyStore result;
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
    std::string where = name + ":" + std::to_string(line_no) + ": ";
    if (w.size() < 2 || w.size() > 3) {
      return store::Status::InvalidArgument(where + "expected 'key role [tenant]'");
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
    } else {
      return store::Status::InvalidArgument(where + "role '" + w[1] +
                                            "' is not one of admin, tenant, container");
    }
    if (w.size() == 3) {
      if (w[2].size() > 256) {
        return store::Status::InvalidArgument(where + "tenant name longer than 256 characters");
      }
      e.who.tenant = w[2];
    }
    std::copy(w[0].begin(), w[0].end(), e.bytes.begin());
    e.length = w[0].size();
    Principal ignored;
    if (result.Lookup(w[0], &ignored)) {
      return store::Status::InvalidArgument(where + "the same key appears twice");
    }
    result.keys_.push_back(std::move(e));
    if (pos > text.size()) break;
  }
  if (result.keys_.empty()) {
    return store::Status::InvalidArgument(name + ": no keys; a keys file needs at least one line");
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
  if (!keys.configured()) {
    *who = Principal{Role::kAdmin, "default"};
    return AuthVerdict::kAllowed;
  }
  constexpr std::string_view kBearer = "Bearer ";
  if (authorization.size() <= kBearer.size() ||
      authorization.substr(0, kBearer.size()) != kBearer) {
    return AuthVerdict::kUnauthorized;
  }
  std::string_view key = authorization.substr(kBearer.size());
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
  }
  if (!ok) return AuthVerdict::kForbidden;
  *who = p;
  return AuthVerdict::kAllowed;
}

}  // namespace server
