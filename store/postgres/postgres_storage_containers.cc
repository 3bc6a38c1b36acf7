// PostgresStorage: the container operations (register, read, list, drain,
// remove).
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "store/container_results.h"
#include "store/list_page.h"
#include "store/postgres/container_sql.h"
#include "store/postgres/lane.h"
#include "store/postgres/postgres_storage.h"
#include "store/postgres/rows.h"

namespace store {

void PostgresStorage::Register(std::vector<ContainerSpec> specs, ContainerCallback done) {
  PgRowLocks rows;
  for (const ContainerSpec& c : specs) rows.ids.push_back(c.id);
  auto batch = std::make_shared<std::vector<ContainerSpec>>(std::move(specs));
  Submit<ContainerResult>(
      [batch](PgConn* conn, ContainerResult* out) {
        for (const ContainerSpec& c : *batch) {
          RETURN_IF_ERROR(conn->Run(
              pgsql::kUpsertContainer,
              {P(c.id), P(c.region), P(c.pool), P(c.latency_ms), P(c.data),
               P(int64_t{LaneHash(c.id)}), P(c.slots), c.attributes ? P(*c.attributes) : Null()}));
          // The selector's copy, whatever changed: attributes, region, pool or latency.
          RETURN_IF_ERROR(conn->Run(pgsql::kDropAttributes, {P(c.id)}));
          RETURN_IF_ERROR(conn->Run(pgsql::kCopyAttributes, {P(c.id)}));
        }
        out->outcome = Outcome::kOk;
        out->count = static_cast<int64_t>(batch->size());
        return Status::Ok();
      },
      std::move(done), {}, std::nullopt, std::move(rows));
}

ContainerResult PostgresStorage::GetContainer(std::string_view id) {
  const std::string key(id);
  std::optional<ContainerInfo> found;
  Status s = WithReader([&](PgConn* conn) {
    PgResult r;
    RETURN_IF_ERROR(conn->Run(pgsql::kGetContainer, {P(key)}, &r));
    if (r.rows() > 0) ReadContainerRow(r, 0, &found.emplace());
    return Status::Ok();
  });
  return AnswerContainerRead(key, s, std::move(found));
}

Status PostgresStorage::ListContainers(const ContainerFilter& filter, const std::string& after,
                                       int limit, std::vector<ContainerInfo>* page,
                                       std::string* next_after) {
  return ListPage(
      limit, filter.page_budget_bytes, KeyOrder::kAscending,
      [&](PgConn* conn, const PageBounds& bounds, PgResult* r) {
        std::vector<PgParam> params = WithWalkParams(
            {P(after), OrNull(filter.region), OrNull(filter.pool), OrNull(filter.status)},
            bounds);
        params.push_back(OrNull(filter.attribute_key));
        params.push_back(P(filter.attribute_value));
        return conn->Run(pgsql::kListContainers, params, r);
      },
      [](const PgResult& r) { return ListedPage(r, kContainerColumns); }, page, next_after);
}

void PostgresStorage::Drain(std::string id, ContainerCallback done) {
  ChangeDrain(std::move(id), pgsql::kDrain, std::move(done));
}

void PostgresStorage::Undrain(std::string id, ContainerCallback done) {
  ChangeDrain(std::move(id), pgsql::kUndrain, std::move(done));
}

void PostgresStorage::ChangeDrain(std::string id, const char* statement, ContainerCallback done) {
  Submit<ContainerResult>(
      [id, statement](PgConn* conn, ContainerResult* out) {
        PgResult r;
        RETURN_IF_ERROR(conn->Run(statement, {P(id)}));
        RETURN_IF_ERROR(conn->Run(pgsql::kGetContainer.c_str(), {P(id)}, &r));
        std::optional<ContainerInfo> now;
        if (r.rows() > 0) ReadContainerRow(r, 0, &now.emplace());
        *out = AnswerContainerRead(id, Status::Ok(), std::move(now));
        return Status::Ok();
      },
      std::move(done), {}, std::nullopt, PgRowLocks{{id}, {}});
}

void PostgresStorage::Remove(std::string id, ContainerCallback done) {
  Submit<ContainerResult>(
      [id](PgConn* conn, ContainerResult* out) {
        PgResult del, found;
        RETURN_IF_ERROR(conn->Run(pgsql::kRemoveUnpicked, {P(id)}, &del));
        const bool removed = del.changed() == 1;
        if (!removed) RETURN_IF_ERROR(conn->Run(pgsql::kContainerExists, {P(id)}, &found));
        *out = RemoveAnswer(id, removed, found.rows() > 0);
        return Status::Ok();
      },
      std::move(done), {}, std::nullopt, PgRowLocks{{id}, {}});
}

}  // namespace store
