#include "store/sqlite/rows.h"

namespace store {

void ReadSessionRow(const Statement& q, Session* s) {
  s->container_id = q.ColumnString(0);
  s->region = q.ColumnString(1);
  s->pool = q.ColumnString(2);
  s->token = q.ColumnInt64(3);
  s->lease_expires_at_ms = q.ColumnInt64(4);
  s->data = q.ColumnString(5);
  s->labels = q.ColumnIsNull(6) ? "{}" : q.ColumnString(6);
  s->tenant = q.ColumnIsNull(7) ? "" : q.ColumnString(7);
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

void BindOrNull(Statement* q, int index, const std::string& value) {
  if (value.empty()) {
    q->BindNull(index);
  } else {
    q->Bind(index, value);
  }
}

}  // namespace store
