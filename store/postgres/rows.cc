#include "store/postgres/rows.h"

namespace store {

void ReadSessionRow(const PgResult& r, int row, Session* s) {
  ReadRow(kSessionColumns, PgCells(r, row), s);
}

void ReadContainerRow(const PgResult& r, int row, ContainerInfo* c) {
  ReadRow(kContainerColumns, PgCells(r, row), c);
}

}  // namespace store
