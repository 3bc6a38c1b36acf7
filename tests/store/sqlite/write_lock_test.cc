#include "store/sqlite/write_lock.h"

#include <signal.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <memory>
#include <string>
#include <thread>

#include "tests/support/subprocess.h"
#include "tests/support/temp_dir.h"

namespace {

using store::Status;
using store::WriteLock;

std::unique_ptr<WriteLock> OpenLock(const std::string& path, const std::string& program) {
  std::unique_ptr<WriteLock> lock;
  Status s = WriteLock::Open(path, program, &lock);
  INFO(s.ToString());
  REQUIRE(s.ok());
  return lock;
}

// Child exit codes.
constexpr int kGotLock = 0;
constexpr int kOpenFailed = 10;
constexpr int kAcquireFailed = 11;

}  // namespace

TEST_CASE("write_lock: a lock file that cannot be created is an IOError") {
  testing::TempDir dir;
  std::unique_ptr<WriteLock> lock;
  Status s = WriteLock::Open(dir.File("no/such/dir/a.db.lock"), "t", &lock);
  CHECK(s.IsIOError());
  CHECK(lock == nullptr);
}

TEST_CASE("write_lock: acquire, release and acquire again, and the holder line names this process") {
  testing::TempDir dir;
  auto lock = OpenLock(dir.File("a.lock"), "edgealloc test");
  CHECK_FALSE(lock->held());
  REQUIRE(lock->Acquire(100).ok());
  CHECK(lock->held());
  CHECK_THAT(lock->Holder(),
             Catch::StartsWith("pid " + std::to_string(::getpid()) + " program edgealloc test"));
  CHECK_THAT(lock->Holder(), Catch::Contains("locked_ms "));
  lock->Release();
  CHECK_FALSE(lock->held());
  REQUIRE(lock->Acquire(100).ok());
  lock->Release();
}

TEST_CASE("write_lock: two locks of the same file in one process exclude each other") {
  testing::TempDir dir;
  auto a = OpenLock(dir.File("a.lock"), "a");
  auto b = OpenLock(dir.File("a.lock"), "b");
  REQUIRE(a->Acquire(100).ok());
  Status s = b->Acquire(20);
  CHECK(s.IsBusy());
  CHECK_FALSE(b->held());
  a->Release();
  CHECK(b->Acquire(100).ok());
}

TEST_CASE("write_lock: a shorter holder line leaves nothing of a longer one behind") {
  testing::TempDir dir;
  const std::string long_name(120, 'L');
  {
    auto a = OpenLock(dir.File("a.lock"), long_name);
    REQUIRE(a->Acquire(100).ok());
    a->Release();
  }
  auto b = OpenLock(dir.File("a.lock"), "b");
  REQUIRE(b->Acquire(100).ok());
  CHECK_THAT(b->Holder(), !Catch::Contains("LLLL"));
  CHECK_THAT(b->Holder(), Catch::Contains("program b started_ms"));
}

TEST_CASE("write_lock: a waiter in another process waits for the holder and then gets the lock") {
  testing::TempDir dir;
  const std::string path = dir.File("a.lock");
  auto holder = OpenLock(path, "parent");
  REQUIRE(holder->Acquire(100).ok());

  testing::Pipe started;
  testing::Child waiter([&] {
    std::unique_ptr<WriteLock> lock;
    if (!WriteLock::Open(path, "waiter", &lock).ok()) return kOpenFailed;
    started.Send('s');
    return lock->Acquire(20000).ok() ? kGotLock : kAcquireFailed;
  });
  REQUIRE(started.Receive(5000) == 's');
  // While the parent holds the lock the waiter must still be waiting. (The
  // pause gives a waiter that wrongly got the lock time to exit.)
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  CHECK(waiter.Running());
  holder->Release();
  CHECK(waiter.Wait() == kGotLock);
  // The holder line now names the waiter.
  CHECK_THAT(holder->Holder(), Catch::StartsWith("pid " + std::to_string(waiter.pid()) +
                                                 " program waiter"));
}

TEST_CASE("write_lock: a waiter times out with Busy naming the holder, and SIGKILL of the holder frees the lock") {
  testing::TempDir dir;
  const std::string path = dir.File("a.lock");
  testing::Pipe locked;
  testing::Child holder([&] {
    std::unique_ptr<WriteLock> lock;
    if (!WriteLock::Open(path, "edgealloc-admin", &lock).ok()) return kOpenFailed;
    if (!lock->Acquire(5000).ok()) return kAcquireFailed;
    locked.Send('L');
    for (;;) ::pause();  // holds until killed
  });
  REQUIRE(locked.Receive(5000) == 'L');

  auto waiter = OpenLock(path, "edgealloc serve");
  const auto t0 = std::chrono::steady_clock::now();
  Status s = waiter->Acquire(150);
  const auto waited = std::chrono::steady_clock::now() - t0;
  INFO(s.ToString());
  REQUIRE(s.IsBusy());
  CHECK_THAT(s.message(), Catch::Contains("pid " + std::to_string(holder.pid())));
  CHECK_THAT(s.message(), Catch::Contains("program edgealloc-admin"));
  CHECK_THAT(s.message(), Catch::Contains("150 ms"));
  CHECK_THAT(s.message(), Catch::Contains(path));
  CHECK(waited >= std::chrono::milliseconds(150));  // it did wait, not give up at once
  CHECK_FALSE(waiter->held());

  CHECK(holder.Kill() == 128 + SIGKILL);
  Status after = waiter->Acquire(5000);
  INFO(after.ToString());
  CHECK(after.ok());
  CHECK(waiter->held());
}
