#include "store/sqlite/registration_gate.h"

#include <catch2/catch.hpp>
#include <atomic>
#include <chrono>
#include <future>
#include <memory>
#include <string>

#include "store/sqlite/write_lock.h"
#include "tests/support/temp_dir.h"

namespace {

using store::RegistrationGate;
using store::WriteLock;

}  // namespace

TEST_CASE("registration_gate: in one process, a second registration waits for the first to leave") {
  testing::TempDir dir;
  RegistrationGate gate(dir.File("db.register.lock"));
  REQUIRE(gate.Enter("first").ok());
  std::atomic<bool> entered{false};
  auto second = std::async(std::launch::async, [&] {
    store::Status s = gate.Enter("second");
    entered = true;
    if (s.ok()) gate.Leave();
    return s;
  });
  CHECK(second.wait_for(std::chrono::milliseconds(300)) == std::future_status::timeout);
  CHECK_FALSE(entered.load());
  gate.Leave();  // Leave from another thread than the waiter's: a writer's, in the engine
  REQUIRE(second.wait_for(std::chrono::seconds(10)) == std::future_status::ready);
  CHECK(second.get().ok());
}

TEST_CASE("registration_gate: another process's lock makes it wait, then Busy naming the holder") {
  testing::TempDir dir;
  const std::string path = dir.File("db.register.lock");
  // An flock on another open file is what another process would hold.
  std::unique_ptr<WriteLock> other;
  REQUIRE(WriteLock::Open(path, "other-registry", &other).ok());
  REQUIRE(other->Acquire(1000).ok());
  RegistrationGate gate(path, /*lock_timeout_ms=*/200);
  store::Status s = gate.Enter("edgealloc");
  CHECK(s.IsBusy());
  CHECK_THAT(s.ToString(), Catch::Contains("other-registry"));
  // A refused Enter left the gate open: once the other process lets go, it
  // enters, and the lock is then this gate's.
  other->Release();
  REQUIRE(gate.Enter("edgealloc").ok());
  CHECK_FALSE(other->Acquire(50).ok());
  gate.Leave();
  CHECK(other->Acquire(1000).ok());
  other->Release();
}
