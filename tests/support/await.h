#ifndef EDGEALLOC_TESTS_SUPPORT_AWAIT_H_
#define EDGEALLOC_TESTS_SUPPORT_AWAIT_H_

// The result of a call that answers through a callback (the storage seam's,
// the allocator's), waited for: for tests and benches, which want it in
// line. Header only, so bench/ uses it without linking test support.

#include <future>
#include <utility>

namespace testing {

// start(callback) makes the call; Await returns what callback was given.
// Usage: Await<store::SessionResult>([&](auto cb) { storage->Claim(req, cb); });
template <typename Result, typename Start>
Result Await(Start&& start) {
  std::promise<Result> p;
  auto f = p.get_future();
  start([&p](Result r) { p.set_value(std::move(r)); });
  return f.get();
}

}  // namespace testing

#endif  // EDGEALLOC_TESTS_SUPPORT_AWAIT_H_
