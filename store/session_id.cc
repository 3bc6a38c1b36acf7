#include "store/session_id.h"

#include "base/random.h"

namespace store {

Status NewSessionId(int shard, std::string* id) {
  unsigned char bits[16];
  std::string error;
  if (!base::KernelRandomBytes(bits, sizeof(bits), &error)) return Status::IOError(error);
  static constexpr char kHex[] = "0123456789abcdef";
  char buf[kSessionIdLength];
  buf[0] = 's';
  buf[1] = '_';
  buf[2] = kHex[(shard >> 4) & 0xf];
  buf[3] = kHex[shard & 0xf];
  for (size_t i = 0; i < sizeof(bits); ++i) {
    buf[4 + 2 * i] = kHex[bits[i] >> 4];
    buf[5 + 2 * i] = kHex[bits[i] & 0xf];
  }
  id->assign(buf, sizeof(buf));
  return Status::Ok();
}

int ShardOfSessionId(std::string_view id, int shards) {
  if (id.size() != kSessionIdLength || id.substr(0, 2) != "s_") return -1;
  int shard = 0;
  for (char c : id.substr(2, 2)) {
    int v = (c >= '0' && c <= '9') ? c - '0' : (c >= 'a' && c <= 'f') ? c - 'a' + 10 : -1;
    if (v < 0) return -1;
    shard = shard * 16 + v;
  }
  return shard < shards ? shard : -1;
}

}  // namespace store
