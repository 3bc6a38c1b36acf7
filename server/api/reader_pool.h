#ifndef EDGEALLOC_SERVER_API_READER_POOL_H_
#define EDGEALLOC_SERVER_API_READER_POOL_H_

#include <boost/asio/any_io_executor.hpp>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "base/mutex.h"
#include "server/api/reply_on_io.h"
#include "server/api/errors.h"
#include "server/http/log.h"
#include "server/http/message.h"

namespace server {

// Jobs one reader thread may have queued (--reader-threads times this in
// all): past it a read is refused at once with 503 overloaded, never queued.
inline constexpr size_t kReaderQueuePerThread = 64;
// One owner's jobs may fill at most this part of the queue: a quarter, so
// that a tenant looping pages cannot fill the queue and have every other
// tenant's reads refused, and its own reads past its share are refused at
// once rather than wait behind its others.
inline constexpr size_t kReaderQueueOwnerShareDivisor = 4;

// ReaderPool runs the blocking storage reads of the routes (a session, a
// page of a list, a tenant's limits, a container) on a few threads of its
// own, so that a read stalled on its database never holds an HTTP io thread:
// /healthz, /readyz and every other request keep being answered meanwhile.
// Its queue is bounded: TryPost refuses a job when it is full, and the route
// answers 503 overloaded at once. A job may name its owner (TenantReads, a
// tenant's reads; KeyHeartbeats, a key's): one owner's jobs run on at most
// max(1, threads / 2) threads at once, the rest of them wait in the queue
// while other owners' jobs pass them, so that one tenant looping heavy
// reads never holds every reader. One owner's jobs waiting in the queue are
// bounded too, by max(1, queue_capacity / kReaderQueueOwnerShareDivisor):
// past it TryPost refuses its job (kOwnerShareFull) while other owners' jobs
// are still queued. Safe from any thread.
class ReaderPool {
 public:
  // A job is called once: with true on a reader thread, or with false (on
  // the thread calling Stop) if the pool stopped before it ran, when it
  // must answer without reading.
  using Job = std::function<void(bool run)>;
  enum class Posted { kQueued, kFull, kOwnerShareFull, kStopping };
  // The refusals so far, by why (edgealloc_reads_refused_total).
  struct Refusals {
    std::atomic<uint64_t> full{0}, owner_share{0};
  };

  // REQUIRES: threads >= 1, queue_capacity >= 1.
  ReaderPool(int threads, size_t queue_capacity);
  ReaderPool(const ReaderPool&) = delete;
  ReaderPool& operator=(const ReaderPool&) = delete;
  ~ReaderPool();

  // Queues `job` unless the queue holds queue_capacity jobs already (kFull),
  // `owner`'s jobs waiting in it fill its share (kOwnerShareFull), or Stop
  // has begun (kStopping); then `job` is not called. An empty `owner` is
  // bound by nothing but the pool.
  Posted TryPost(Job job, std::string owner = {});

  // Refuses new jobs, calls every queued job with false, waits for the
  // running ones and joins the threads. Idempotent.
  void Stop();

  size_t queued() const;
  int threads() const { return static_cast<int>(threads_.size()); }
  // The most threads one owner's jobs hold at once: max(1, threads / 2).
  int per_owner_threads() const { return per_owner_threads_; }
  // The most jobs of one owner waiting in the queue at once.
  size_t per_owner_queued() const { return per_owner_queued_; }
  const Refusals& refusals() const { return refusals_; }

 private:
  struct Queued {
    Job job;
    std::string owner;
  };
  void Loop();
  // The first queued job whose owner is under its share, or queue_.end().
  std::deque<Queued>::iterator NextRunnableLocked() REQUIRES(mu_);

  const size_t capacity_;
  const int per_owner_threads_;
  const size_t per_owner_queued_;
  Refusals refusals_;
  mutable base::Mutex mu_;
  base::CondVar cv_;
  std::deque<Queued> queue_ GUARDED_BY(mu_);
  std::map<std::string, int> running_ GUARDED_BY(mu_);      // owner -> its jobs running
  std::map<std::string, size_t> waiting_ GUARDED_BY(mu_);  // owner -> its jobs queued
  bool stopping_ GUARDED_BY(mu_) = false;
  std::vector<std::thread> threads_;
};

// The owner (ReaderPool::TryPost) of a tenant's reads, and of the heartbeats
// of one key (its KeyId, auth.h): distinct for distinct tenants and keys.
inline std::string TenantReads(std::string_view tenant) {
  return "tenant " + std::string(tenant);
}
inline std::string KeyHeartbeats(std::string_view key_id) {
  return "heartbeats of key " + std::string(key_id);
}

// The replies of a read the pool did not take: 503 overloaded (its queue is
// full, or the owner's share of it) or 503 unavailable (the server is
// stopping), each with Retry-After. A refusal by the owner's share is logged
// (at most one line every kRefusalLogPeriod, with the count held back),
// naming `owner`.
Response ReaderRefusedResponse(ReaderPool::Posted why, std::string_view owner = {});

// Runs `read()` (the blocking storage read; it returns the result, by value)
// on a reader thread of `pool`, as a job of `owner`, then replies on `io` with `make(result)`
// (the JSON is made there, as ReplyOnIo does for writer results). When the
// pool refuses the job, `reply` is called at once with
// ReaderRefusedResponse; a job the pool drops at Stop is answered 503
// unavailable. Call from an io thread.
template <typename Read, typename Make>
void ReadOffIo(ReaderPool* pool, std::string owner, const boost::asio::any_io_executor& io,
               const Reply& reply, Read read, Make make) {
  const std::string owner_named = owner;  // for the log of a refusal
  ReaderPool::Posted posted = pool->TryPost(
      [io, reply, read = std::move(read), make = std::move(make)](bool run) mutable {
        if (!run) {
          ReplyOnIo(io, reply,
                    [] { return ReaderRefusedResponse(ReaderPool::Posted::kStopping); });
          return;
        }
        std::optional<decltype(read())> result;
        try {
          result.emplace(read());
        } catch (const std::exception& e) {
          LogLine(std::string("edgealloc: internal error in a storage read: ") + e.what());
          ReplyOnIo(io, reply, [] {
            return RefusalResponse(kInternalError);
          });
          return;
        }
        ReplyOnIo(io, reply, [result = std::move(*result), make = std::move(make)]() mutable {
          return make(std::move(result));
        });
      },
      std::move(owner));
  if (posted != ReaderPool::Posted::kQueued) reply(ReaderRefusedResponse(posted, owner_named));
}

// Runs `call()` on a reader thread of `pool`: for a storage write whose
// engine reads before it submits (SQLite with shards looks an id up in
// every shard file, or waits for the registration lock), so that those
// reads never hold an io thread. `call` hands its result on to the writer's
// callback as when called on the io thread. Refusals as ReadOffIo. Owned by
// no one: the writes have bounds of their own (claims_per_s, the queues). Call
// from an io thread.
template <typename Call>
void CallOffIo(ReaderPool* pool, const boost::asio::any_io_executor& io, const Reply& reply,
               Call call) {
  ReaderPool::Posted posted =
      pool->TryPost([io, reply, call = std::move(call)](bool run) mutable {
        if (!run) {
          ReplyOnIo(io, reply,
                    [] { return ReaderRefusedResponse(ReaderPool::Posted::kStopping); });
          return;
        }
        try {
          call();
        } catch (const std::exception& e) {
          LogLine(std::string("edgealloc: internal error submitting a write: ") + e.what());
          ReplyOnIo(io, reply, [] {
            return RefusalResponse(kInternalError);
          });
        }
      });
  if (posted != ReaderPool::Posted::kQueued) reply(ReaderRefusedResponse(posted));
}

}  // namespace server

#endif  // EDGEALLOC_SERVER_API_READER_POOL_H_
