#ifndef EDGEALLOC_STORE_POSTGRES_READERS_H_
#define EDGEALLOC_STORE_POSTGRES_READERS_H_

#include <memory>
#include <string>

#include "store/postgres/pg.h"
#include "store/status.h"

namespace store {

// A read connection with every wait bounded: a read waits at most a bound
// for a lock (a migration), runs at most a bound, and its answer is waited
// for at most a bound client side (a stalled link). The pool of
// PostgresStorage::WithReader and the capacity reader connect with it.
// `fence`: the node's (store/postgres/fence.h).
Status ConnectReader(const std::string& uri, const std::string& name, std::unique_ptr<PgConn>* out,
                     std::shared_ptr<PgFence> fence);

}  // namespace store

#endif  // EDGEALLOC_STORE_POSTGRES_READERS_H_
