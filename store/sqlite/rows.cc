#include "store/sqlite/rows.h"

namespace store {

void ReadSessionRow(const Statement& q, Session* s) { ReadRow(kSessionColumns, SqliteCells(q), s); }

void ReadContainerRow(const Statement& q, ContainerInfo* c) {
  ReadRow(kContainerColumns, SqliteCells(q), c);
}

EndedSession ReadEndedSessionRow(const Statement& q) {
  EndedSession e;
  ReadSessionRow(q, &e.session);
  e.end = {q.ColumnString(kSessionColumnCount), q.ColumnInt64(kSessionColumnCount + 1)};
  return e;
}

void BindOrNull(Statement* q, int index, const std::string& value) {
  if (value.empty()) {
    q->BindNull(index);
  } else {
    q->Bind(index, value);
  }
}

}  // namespace store
