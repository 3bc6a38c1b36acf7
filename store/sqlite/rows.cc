#include "store/sqlite/rows.h"

#include "base/random.h"

namespace store {

void ReadSessionRow(const Statement& q, Session* s) {
  s->container_id = q.ColumnString(0);
  s->region = q.ColumnString(1);
  s->pool = q.ColumnString(2);
  s->token = q.ColumnInt64(3);
  s->lease_expires_at_ms = q.ColumnInt64(4);
  s->data = q.ColumnString(5);
}

void ReadContainerRow(const Statement& q, ContainerInfo* c) {
  c->id = q.ColumnString(0);
  c->region = q.ColumnString(1);
  c->pool = q.ColumnString(2);
  c->status = q.ColumnString(3);
  c->latency_ms = q.ColumnInt64(4);
  c->last_heartbeat_ms = q.ColumnInt64(5);
  c->generation = q.ColumnInt64(6);
  c->drain_requested = q.ColumnInt64(7) != 0;
  c->data = q.ColumnString(8);
  if (!q.ColumnIsNull(9)) c->session_id = q.ColumnString(9);
}

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
