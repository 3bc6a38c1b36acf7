#include "server/webhooks/webhook_signature.h"

#include <catch2/catch.hpp>
#include <string>
#include <utility>

namespace server {
namespace {

// The Standard Webhooks specification's own example (its reference
// libraries test against it): the secret, the message and the signature.
constexpr char kSpecSecret[] = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
constexpr char kSpecId[] = "msg_p5jXN8AQM9LWM0D4loKWxJek";
constexpr int64_t kSpecTimestamp = 1614265330;
constexpr char kSpecBody[] = R"({"test": 2432232314})";
constexpr char kSpecSignature[] = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=";

TEST_CASE("webhook signature: the Standard Webhooks example signs as the specification says") {
  std::string key, error;
  REQUIRE(DecodeWebhookSecret(kSpecSecret, &key, &error));
  CHECK(key.size() == 24);
  CHECK(SignWebhook(key, kSpecId, kSpecTimestamp, kSpecBody) == kSpecSignature);
  // Every part is signed: another id, second or byte is another signature.
  CHECK(SignWebhook(key, "msg_p5jXN8AQM9LWM0D4loKWxJeK", kSpecTimestamp, kSpecBody) !=
        kSpecSignature);
  CHECK(SignWebhook(key, kSpecId, kSpecTimestamp + 1, kSpecBody) != kSpecSignature);
  CHECK(SignWebhook(key, kSpecId, kSpecTimestamp, R"({"test": 2432232315})") != kSpecSignature);
}

TEST_CASE("webhook signature: a secret is whsec_ and base64, or the base64 alone, spaces aside") {
  std::string with_prefix, bare, spaced, error;
  REQUIRE(DecodeWebhookSecret(kSpecSecret, &with_prefix, &error));
  REQUIRE(DecodeWebhookSecret("MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", &bare, &error));
  REQUIRE(DecodeWebhookSecret("  whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw\n", &spaced, &error));
  CHECK(bare == with_prefix);
  CHECK(spaced == with_prefix);
}

TEST_CASE("webhook signature: a secret of too few or too many bytes, or not base64, is refused") {
  std::string key, error;
  // 12 bytes, then 68: outside 16 to 64.
  CHECK_FALSE(DecodeWebhookSecret("whsec_" + Base64(std::string(12, 'k')), &key, &error));
  CHECK_FALSE(error.empty());
  CHECK_FALSE(DecodeWebhookSecret("whsec_" + Base64(std::string(68, 'k')), &key, &error));
  CHECK(DecodeWebhookSecret("whsec_" + Base64(std::string(16, 'k')), &key, &error));
  CHECK(DecodeWebhookSecret("whsec_" + Base64(std::string(64, 'k')), &key, &error));
  error.clear();
  CHECK_FALSE(DecodeWebhookSecret("whsec_not*base64*at*all*but*long", &key, &error));
  CHECK_FALSE(error.empty());
  // The error never quotes the secret's text.
  CHECK(error.find("not*base64") == std::string::npos);
}

TEST_CASE("webhook signature: base64 pads as RFC 4648 says") {
  // RFC 4648's test vectors (its section 10): two, one and no pad characters.
  const std::pair<std::string, std::string> vectors[] = {
      {"", ""}, {"f", "Zg=="}, {"fo", "Zm8="}, {"foo", "Zm9v"}, {"foobar", "Zm9vYmFy"}};
  for (const auto& [in, out] : vectors) {
    INFO('"' << in << '"');
    CHECK(Base64(in) == out);
  }
}

}  // namespace
}  // namespace server
