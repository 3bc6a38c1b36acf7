#include "server/webhooks/webhook_signature.h"

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "base/read_file.h"

namespace server {
namespace {

constexpr std::string_view kSecretPrefix = "whsec_";

std::string_view Trimmed(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\n' || s.front() == '\r' ||
                        s.front() == '\t')) {
    s.remove_prefix(1);
  }
  while (!s.empty() && (s.back() == ' ' || s.back() == '\n' || s.back() == '\r' ||
                        s.back() == '\t')) {
    s.remove_suffix(1);
  }
  return s;
}

bool IsBase64(std::string_view s) {
  if (s.empty() || s.size() % 4 != 0) return false;
  size_t pad = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    const bool alnum = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
    if (c == '=') {
      if (i + 2 < s.size()) return false;  // padding only at the end
      ++pad;
    } else if (pad > 0 || !(alnum || c == '+' || c == '/')) {
      return false;
    }
  }
  return true;
}

}  // namespace

std::string Base64(std::string_view bytes) {
  std::string out(4 * ((bytes.size() + 2) / 3) + 1, '\0');
  const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(bytes.data()),
                                static_cast<int>(bytes.size()));
  out.resize(static_cast<size_t>(n));
  return out;
}

bool DecodeWebhookSecret(std::string_view text, std::string* key, std::string* error) {
  text = Trimmed(text);
  if (text.substr(0, kSecretPrefix.size()) == kSecretPrefix) text.remove_prefix(kSecretPrefix.size());
  if (!IsBase64(text)) {
    *error = "a webhook secret is whsec_ followed by base64 (as Standard Webhooks says)";
    return false;
  }
  std::string out(text.size() / 4 * 3, '\0');
  const int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(text.data()),
                                static_cast<int>(text.size()));
  // EVP_DecodeBlock counts the padding's zero bytes as data.
  const size_t pad = (text.back() == '=') + (text.size() > 1 && text[text.size() - 2] == '=');
  if (n < 0 || static_cast<size_t>(n) < pad) {
    *error = "a webhook secret is whsec_ followed by base64";
    return false;
  }
  out.resize(static_cast<size_t>(n) - pad);
  if (out.size() < 16 || out.size() > 64) {
    *error = "a webhook secret's key must be 16 to 64 bytes (24 to 88 base64 characters)";
    return false;
  }
  *key = std::move(out);
  return true;
}

bool ReadWebhookSecret(const std::string& path, std::string* key, std::string* error) {
  std::string text;
  if (!base::ReadFile(path, &text)) {
    *error = "cannot read the webhook secret file " + path;
    return false;
  }
  if (!DecodeWebhookSecret(text, key, error)) {
    *error = path + ": " + *error;
    return false;
  }
  return true;
}

std::string SignWebhook(const std::string& key, std::string_view id, int64_t timestamp_s,
                        std::string_view body) {
  const std::string signed_text =
      std::string(id) + "." + std::to_string(timestamp_s) + "." + std::string(body);
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
       reinterpret_cast<const unsigned char*>(signed_text.data()), signed_text.size(), mac,
       &length);
  return "v1," + Base64(std::string_view(reinterpret_cast<const char*>(mac), length));
}

}  // namespace server
