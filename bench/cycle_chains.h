#ifndef EDGEALLOC_BENCH_CYCLE_CHAINS_H_
#define EDGEALLOC_BENCH_CYCLE_CHAINS_H_

// Clients of claim+release cycles through an allocator, without HTTP, for
// store_cycles.cc and placement_cycles.cc. Each client is a chain of
// callbacks, not a thread: a release's callback starts the next claim, so
// the figure is the store's, not the cost of waking 64 threads on two cores.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <thread>
#include <utility>

#include "allocator/allocator.h"
#include "bench/bench_support.h"

namespace bench {

class CycleChains {
 public:
  // `request` makes each claim's request; `claimed`, when set, is told each
  // successful claim's time from its call to its answer.
  CycleChains(allocator::Allocator* alloc, std::function<store::ClaimRequest()> request,
              std::function<void(Clock::duration)> claimed = {})
      : alloc_(alloc), request_(std::move(request)), claimed_(std::move(claimed)) {}
  CycleChains(const CycleChains&) = delete;
  CycleChains& operator=(const CycleChains&) = delete;
  ~CycleChains() { Stop(); }

  // Starts `clients` chains.
  void Start(int clients) {
    running_ = clients;
    for (int i = 0; i < clients; ++i) Cycle();
  }

  // Ends every chain after its cycle under way, and waits for them all.
  void Stop() {
    stop_ = true;
    while (running_.load() > 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }

  // Cycles completed (a claim and its release).
  uint64_t cycles() const { return cycles_.load(std::memory_order_relaxed); }
  // Claims that found nothing free (every container or slot held by the
  // other clients), tried again.
  uint64_t misses() const { return misses_.load(); }
  // Releases refused: a container or slot given to two clients shows here.
  uint64_t bad_releases() const { return bad_releases_.load(); }

 private:
  void Cycle() {
    if (stop_.load(std::memory_order_relaxed)) {
      running_.fetch_sub(1);
      return;
    }
    const auto t0 = Clock::now();
    alloc_->Claim(request_(), [this, t0](store::SessionResult c) {
      if (c.outcome != store::Outcome::kOk) {
        ++misses_;
        return Cycle();
      }
      if (claimed_) claimed_(Clock::now() - t0);
      alloc_->Release({}, c.session.session_id, c.session.token, [this](store::SessionResult r) {
        if (r.outcome != store::Outcome::kOk) ++bad_releases_;
        cycles_.fetch_add(1, std::memory_order_relaxed);
        Cycle();
      });
    });
  }

  allocator::Allocator* const alloc_;
  const std::function<store::ClaimRequest()> request_;
  const std::function<void(Clock::duration)> claimed_;
  std::atomic<bool> stop_{false};
  std::atomic<int> running_{0};
  std::atomic<uint64_t> cycles_{0}, misses_{0}, bad_releases_{0};
};

}  // namespace bench

#endif  // EDGEALLOC_BENCH_CYCLE_CHAINS_H_
