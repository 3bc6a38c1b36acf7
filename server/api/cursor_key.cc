#include "server/api/cursor_key.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>


#include "base/random.h"
#include "base/read_file.h"

namespace server {

store::Status CursorKey::Random(CursorKey* out) {
  std::string secret(kMinSecretBytes, '\0');
  std::string error;
  if (!base::KernelRandomBytes(secret.data(), secret.size(), &error)) {
    return store::Status::IOError("cannot make a key for list cursors: " + error);
  }
  *out = CursorKey(secret);
  return store::Status::Ok();
}

store::Status CursorKey::FromFile(const std::string& path, CursorKey* out) {
  std::string secret;
  if (!base::ReadFile(path, &secret)) {
    return store::Status::IOError("cannot read the cursor secret file " + path);
  }
  while (!secret.empty() && (secret.back() == '\n' || secret.back() == '\r' ||
                             secret.back() == ' ' || secret.back() == '\t')) {
    secret.pop_back();
  }
  if (secret.size() < kMinSecretBytes) {
    return store::Status::InvalidArgument(
        "the cursor secret file " + path + " holds " + std::to_string(secret.size()) +
        " bytes; it needs at least " + std::to_string(kMinSecretBytes) +
        " (make one: head -c 32 /dev/urandom | base64 > " + path + ")");
  }
  *out = CursorKey(secret);
  return store::Status::Ok();
}

std::array<uint8_t, CursorKey::kTagBytes> CursorKey::Tag(std::string_view message) const {
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  HMAC(EVP_sha256(), secret_.data(), static_cast<int>(secret_.size()),
       reinterpret_cast<const unsigned char*>(message.data()), message.size(), mac, &length);
  std::array<uint8_t, kTagBytes> tag{};
  for (size_t i = 0; i < kTagBytes; ++i) tag[i] = mac[i];
  return tag;
}

bool CursorKey::Verify(std::string_view message, const std::array<uint8_t, kTagBytes>& tag) const {
  const std::array<uint8_t, kTagBytes> want = Tag(message);
  return CRYPTO_memcmp(want.data(), tag.data(), kTagBytes) == 0;
}

}  // namespace server
