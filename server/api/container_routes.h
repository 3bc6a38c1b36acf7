#ifndef EDGEALLOC_SERVER_API_CONTAINER_ROUTES_H_
#define EDGEALLOC_SERVER_API_CONTAINER_ROUTES_H_

#include <boost/asio/any_io_executor.hpp>

#include "server/api/cursor_key.h"
#include "server/api/reader_pool.h"
#include "store/storage.h"
#include "server/http/router.h"

namespace server {

// ContainerRoutes are the HTTP face of the container operations of the storage
// docs/api.md (admin keys):
//   POST   /v1/containers             register a list
//   GET    /v1/containers             list (filters: region, pool, status)
//   GET    /v1/containers/{id}        read
//   POST   /v1/containers/{id}/drain  drain (an operator's, held until undrain)
//   POST   /v1/containers/{id}/undrain  end an operator's drain
//   DELETE /v1/containers/{id}        remove
// Safe from every io thread. Results that come back on a store writer thread
// are posted to `io` before any JSON is made. The reads (a container, a
// list) run on `readers`, never on an io thread, replying through `io`; 503
// overloaded at once when its queue is full. The storage and `readers` must outlive it.
class ContainerRoutes {
 public:
  // `writes_off_io`: registrations, drains, undrains and removals are submitted from
  // a reader thread too (CallOffIo), for a storage that reads before it
  // submits them (SQLite with --shards > 1 looks the id up in every shard
  // file, and a registration waits for the cross-process registration lock).
  // `cursor_key` signs the list's cursors; it must outlive the routes.
  ContainerRoutes(store::Storage* storage, boost::asio::any_io_executor io, ReaderPool* readers,
                  const CursorKey* cursor_key, bool writes_off_io = false);

  // Adds the container routes to `router`.
  void AddRoutes(Router* router);

 private:
  void Register(RouteRequest req, Reply reply);
  void GetContainer(RouteRequest req, Reply reply);
  void ListContainers(RouteRequest req, Reply reply);
  void Drain(RouteRequest req, Reply reply);
  void Undrain(RouteRequest req, Reply reply);
  void Remove(RouteRequest req, Reply reply);
  // Drain, Undrain and Remove: `call` on the id of the path (no body), its
  // refusal answered by its outcome, else with 200 and the container it
  // returns, or 204 if `no_content`.
  using ContainerCall = void (store::Storage::*)(std::string, store::ContainerCallback);
  void ChangeContainer(RouteRequest req, Reply reply, ContainerCall call, bool no_content);
  // Calls `call` (which submits a write) here, or from a reader thread when
  // writes_off_io.
  template <typename Call>
  void Submit(const Reply& reply, Call call);

  store::Storage* storage_;
  boost::asio::any_io_executor io_;
  ReaderPool* readers_;
  const CursorKey* cursor_key_;
  bool writes_off_io_;
};

}  // namespace server

#endif  // EDGEALLOC_SERVER_API_CONTAINER_ROUTES_H_
