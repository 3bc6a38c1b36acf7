#ifndef EDGEALLOC_SERVER_OPS_STORE_METRICS_H_
#define EDGEALLOC_SERVER_OPS_STORE_METRICS_H_

#include "server/ops/exposition.h"
#include "store/storage.h"

namespace server {

// The families of RenderMetrics (metrics.h) that come from the storage: its
// writers' counters by shard (edgealloc_store_*), whether each can write and
// how it fared with its connection, the PostgreSQL clock offset and fence
// (edgealloc_db_*), and the wall clock's steps (edgealloc_clock_steps_total).
void StoreFamilies(const store::Storage& storage, Exposition* out);

}  // namespace server

#endif  // EDGEALLOC_SERVER_OPS_STORE_METRICS_H_
