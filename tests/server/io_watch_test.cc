#include "server/io_watch.h"

#include <catch2/catch.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <chrono>
#include <cstdint>
#include <thread>

#include "batcher/hearing.h"
#include "tests/support/eventually.h"

namespace {

using batcher::Hearing;

constexpr int64_t kGapMs = 200;  // a beat later than this is deafness

// An io loop on a thread of its own, as the server's io threads run one.
struct IoLoop {
  boost::asio::io_context io;
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work =
      boost::asio::make_work_guard(io);
  std::thread thread{[this] { io.run(); }};
  ~IoLoop() {
    work.reset();
    io.stop();
    thread.join();
  }
  // Holds the loop's one thread for `ms`: an event loop that cannot run.
  void Block(int64_t ms) {
    boost::asio::post(io, [ms] { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); });
  }
};

}  // namespace

TEST_CASE("io_watch: a running loop keeps the server hearing, a blocked one is an io stall") {
  Hearing hearing(kGapMs);
  IoLoop loop;
  server::IoWatch watch(loop.io.get_executor(), &hearing);
  watch.Start();
  // The watch beats every period: hearing lasts well past one gap.
  CHECK(testing::Eventually([&] { return hearing.HearingForMs() >= 3 * kGapMs; }));

  const uint64_t stalls = hearing.spans(Hearing::Cause::kIoStall);
  loop.Block(4 * kGapMs);
  CHECK(testing::Eventually([&] { return hearing.spans(Hearing::Cause::kIoStall) > stalls; }));
  CHECK(hearing.deaf_ms(Hearing::Cause::kIoStall) >= 3 * kGapMs);
  watch.Stop();
}

TEST_CASE("io_watch: once stopped, a loop that no longer runs is not deafness") {
  Hearing hearing(kGapMs);
  IoLoop loop;
  server::IoWatch watch(loop.io.get_executor(), &hearing);
  watch.Start();
  watch.Stop();
  watch.Stop();  // idempotent
  const uint64_t stalls = hearing.spans(Hearing::Cause::kIoStall);
  loop.Block(4 * kGapMs);
  // The loop was held past any gap; with the source left, nobody is late.
  CHECK(testing::Eventually([&] { return hearing.HearingForMs() >= 5 * kGapMs; }));
  CHECK(hearing.spans(Hearing::Cause::kIoStall) == stalls);
}
