#ifndef EDGEALLOC_SERVER_API_EVENT_ROUTES_H_
#define EDGEALLOC_SERVER_API_EVENT_ROUTES_H_

#include <boost/asio/any_io_executor.hpp>

#include <memory>

#include "server/api/event_waiters.h"
#include "server/api/reader_pool.h"
#include "server/http/router.h"
#include "store/storage.h"

namespace server {

// Readers that may wait for events at once on a node, and of one tenant
// (EventWaiters): each is read again after every commit, so they are few.
inline constexpr size_t kMaxEventWaiters = 256;
inline constexpr size_t kMaxEventWaitersPerTenant = 32;

// The event routes of docs/api.md ("Events"), tenant or admin keys: a
// tenant reads its own sessions' events, an admin every event.
//   GET /v1/events?after=&limit=&type=&wait_ms=   a page after a cursor
//   GET /v1/events/stream                         Server-Sent Events
// A read runs on the ReaderPool (a tenant's reads, as its other reads); one
// that found nothing and may wait joins the EventWaiters, which answer it
// at the first commit that brings it events. The storage and readers must
// outlive it.
class EventRoutes {
 public:
  EventRoutes(store::Storage* storage, boost::asio::any_io_executor io, ReaderPool* readers,
              size_t max_waiting, size_t max_waiting_per_tenant);
  void AddRoutes(Router* router);
  // Answers every waiting reader; call before the storage stops.
  void Stop() { waiters_.Stop(); }
  size_t waiting() const { return waiters_.waiting(); }

  // What one request reads (event_routes.cc).
  struct Read;

 private:
  void Events(RouteRequest req, Reply reply);
  void Stream(RouteRequest req, Reply reply);
  // Reads off the io thread; answers at once, or waits.
  void Start(std::shared_ptr<Read> read, RouteRequest& req, Reply reply);

  store::Storage* const storage_;
  boost::asio::any_io_executor io_;
  ReaderPool* const readers_;
  EventWaiters waiters_;
};

}  // namespace server

#endif  // EDGEALLOC_SERVER_API_EVENT_ROUTES_H_
