#include "store/session_id.h"

#include <cstdint>

#include "base/clock.h"
#include "base/random.h"

namespace store {
namespace {

constexpr char kHex[] = "0123456789abcdef";
constexpr size_t kShardAt = 2 + kTimeDigits;

}  // namespace

Status NewSessionId(int shard, std::string* id) {
  unsigned char bits[kRandomBytes];
  std::string error;
  if (!base::KernelRandomBytes(bits, sizeof(bits), &error)) return Status::IOError(error);
  char buf[kSessionIdLength];
  buf[0] = 's';
  buf[1] = '_';
  // The time first (as UUIDv7 does), so that ids made close in time sort
  // close: an index keyed by session id (the ended sessions' above all, which
  // only grows) takes each new id near the newest instead of on a random page
  // of the whole history, and lists in id order list the oldest first.
  const uint64_t ms = static_cast<uint64_t>(base::NowMs());
  for (int i = 0; i < kTimeDigits; ++i) {
    buf[2 + i] = kHex[(ms >> (4 * (kTimeDigits - 1 - i))) & 0xf];
  }
  buf[kShardAt] = kHex[(shard >> 4) & 0xf];
  buf[kShardAt + 1] = kHex[shard & 0xf];
  char* rest = buf + kShardAt + 2;
  for (size_t i = 0; i < sizeof(bits); ++i) {
    rest[2 * i] = kHex[bits[i] >> 4];
    rest[2 * i + 1] = kHex[bits[i] & 0xf];
  }
  id->assign(buf, sizeof(buf));
  return Status::Ok();
}

int ShardOfSessionId(std::string_view id, int shards) {
  if (id.substr(0, 2) != "s_") return -1;
  size_t shard_at = kShardAt;
  // An id made before the time came first ("s_", shard, 32 hex digits):
  // its session may still be held across the upgrade.
  if (id.size() == kOldSessionIdLength) {
    shard_at = 2;
  } else if (id.size() != kSessionIdLength) {
    return -1;
  }
  int shard = 0;
  for (char c : id.substr(shard_at, 2)) {
    int v = (c >= '0' && c <= '9') ? c - '0' : (c >= 'a' && c <= 'f') ? c - 'a' + 10 : -1;
    if (v < 0) return -1;
    shard = shard * 16 + v;
  }
  return shard < shards ? shard : -1;
}

}  // namespace store
