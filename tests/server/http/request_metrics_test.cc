#include "server/http/request_metrics.h"

#include <catch2/catch.hpp>

#include <string>
#include <thread>
#include <tuple>
#include <vector>

namespace server {
namespace {

TEST_CASE("request_metrics: a pattern gets one index whatever its methods") {
  RequestMetrics m;
  int a = m.AddRoute("/v1/sessions/{id}");
  int b = m.AddRoute("/v1/sessions");
  CHECK(a != RequestMetrics::kUnmatched);
  CHECK(m.AddRoute("/v1/sessions/{id}") == a);
  CHECK(a != b);
  CHECK(m.routes() == 3);
}

TEST_CASE("request_metrics: counts are by route and status and only counted pairs are listed") {
  RequestMetrics m;
  int s = m.AddRoute("/v1/sessions");
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&m, s] {
      for (int i = 0; i < 1000; ++i) m.Count(s, 201);
    });
  }
  for (auto& t : threads) t.join();
  m.Count(RequestMetrics::kUnmatched, 404);
  m.Count(s, 42);  // out of range: counted as 599
  std::vector<std::tuple<std::string, int, uint64_t>> seen;
  m.ForEach([&seen](const std::string& route, int status, uint64_t n) {
    seen.emplace_back(route, status, n);
  });
  REQUIRE(seen.size() == 3);
  CHECK(seen[0] == std::make_tuple(std::string("unmatched"), 404, uint64_t{1}));
  CHECK(seen[1] == std::make_tuple(std::string("/v1/sessions"), 201, uint64_t{4000}));
  CHECK(seen[2] == std::make_tuple(std::string("/v1/sessions"), 599, uint64_t{1}));
}

}  // namespace
}  // namespace server
