#ifndef EDGEALLOC_SERVER_WEBHOOKS_WEBHOOK_SIGNATURE_H_
#define EDGEALLOC_SERVER_WEBHOOKS_WEBHOOK_SIGNATURE_H_

#include <cstdint>
#include <string>
#include <string_view>

// Signing as the Standard Webhooks specification says
// (https://www.standardwebhooks.com): the secret is `whsec_` then the
// base64 of the key's bytes; a message's signature is
// `v1,` + base64(HMAC-SHA256(key, id + "." + timestamp + "." + body)).

namespace server {

// The key of a secret's text (`whsec_` + base64, or the base64 alone;
// surrounding whitespace ignored). False, *error saying why (never quoting
// the text), if it is not base64 of 16 to 64 bytes.
bool DecodeWebhookSecret(std::string_view text, std::string* key, std::string* error);

// Reads and decodes the secret file at `path`.
bool ReadWebhookSecret(const std::string& path, std::string* key, std::string* error);

// The webhook-signature header's value for one message.
std::string SignWebhook(const std::string& key, std::string_view id, int64_t timestamp_s,
                        std::string_view body);

std::string Base64(std::string_view bytes);

}  // namespace server

#endif  // EDGEALLOC_SERVER_WEBHOOKS_WEBHOOK_SIGNATURE_H_
