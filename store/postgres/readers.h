#ifndef EDGEALLOC_STORE_POSTGRES_READERS_H_
#define EDGEALLOC_STORE_POSTGRES_READERS_H_

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "base/idle_stack.h"
#include "store/postgres/pg.h"
#include "store/status.h"

namespace store {

// A read connection with every wait bounded: a read waits at most a bound
// for a lock (a migration), runs at most a bound, and its answer is waited
// for at most a bound client side (a stalled link). PgReaderPool and the
// capacity reader connect with it. `fence`: the node's
// (store/postgres/fence.h).
Status ConnectReader(const std::string& uri, const std::string& name, std::unique_ptr<PgConn>* out,
                     std::shared_ptr<PgFence> fence);

// The read connections a node's reads (sessions, containers, pools) borrow
// one at a time (PostgresStorage::WithReader), each made by ConnectReader
// on demand, and made again once when the server went away under it.
class PgReaderPool {
 public:
  PgReaderPool(std::string uri, std::string name, std::shared_ptr<PgFence> fence)
      : uri_(std::move(uri)), name_(std::move(name)), fence_(std::move(fence)) {}

  // Makes the pool's first connection, so that a node that cannot read
  // fails at its start.
  Status Connect();
  // Runs `fn` on a pooled connection, or on a new one if none is idle; a
  // pooled one that turns out broken is replaced and `fn` run again, once.
  Status With(const std::function<Status(PgConn*)>& fn);

 private:
  const std::string uri_;
  const std::string name_;
  const std::shared_ptr<PgFence> fence_;
  base::IdleStack<PgConn> idle_;
};

}  // namespace store

#endif  // EDGEALLOC_STORE_POSTGRES_READERS_H_
