#include "server/ops/metrics.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <regex>
#include <sstream>
#include <string>

#include "base/build_info.h"
#include "store/storage.h"
#include "tests/server/service_fixture.h"

namespace server {
namespace {

using fixture::Eventually;
using fixture::LiveService;
using fixture::RegisterFleet;
using testing::HttpClient;
using testing::HttpReply;

// The value of the sample line that starts with `series` + " ", or -1.
double ValueOf(const std::string& text, const std::string& series) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.size() > series.size() && line.compare(0, series.size(), series) == 0 &&
        line[series.size()] == ' ') {
      return std::stod(line.substr(series.size() + 1));
    }
  }
  return -1;
}

TEST_CASE("metrics: every family is present with HELP and TYPE in text format 0.0.4") {
  LiveService t;
  HttpClient c = t.Client();
  RegisterFleet(c, "m", 2);
  HttpReply r = c.Get("/metrics");
  REQUIRE(r.status == 200);
  CHECK(r.Header("content-type") == "text/plain; version=0.0.4; charset=utf-8");
  const std::pair<const char*, const char*> families[] = {
      {"edgealloc_claims_total", "counter"},
      {"edgealloc_releases_total", "counter"},
      {"edgealloc_renewals_total", "counter"},
      {"edgealloc_stale_tokens_total", "counter"},
      {"edgealloc_lease_expiries_total", "counter"},
      {"edgealloc_claim_duration_seconds", "histogram"},
      {"edgealloc_heartbeats_accepted_total", "counter"},
      {"edgealloc_heartbeats_refused_total", "counter"},
      {"edgealloc_heartbeats_written_total", "counter"},
      {"edgealloc_heartbeats_coalesced_total", "counter"},
      {"edgealloc_heartbeats_folded_at_parse_total", "counter"},
      {"edgealloc_heartbeat_key_refusals_total", "counter"},
      {"edgealloc_heartbeats_unknown_total", "counter"},
      {"edgealloc_heartbeat_batch_size", "histogram"},
      {"edgealloc_heartbeat_write_seconds", "histogram"},
      {"edgealloc_heartbeat_queue_depth", "gauge"},
      {"edgealloc_containers", "gauge"},
      {"edgealloc_mirror_age_seconds", "gauge"},
      {"edgealloc_http_requests_total", "counter"},
      {"edgealloc_store_transactions_total", "counter"},
      {"edgealloc_store_write_queue_depth", "gauge"},
  };
  const std::string text = "\n" + r.body;
  for (const auto& [name, type] : families) {
    INFO(name);
    CHECK(text.find(std::string("\n# HELP ") + name + " ") != std::string::npos);
    CHECK(text.find(std::string("\n# TYPE ") + name + " " + type + "\n") != std::string::npos);
  }
  CHECK(r.body.rfind("# HELP ", 0) == 0);
  CHECK(r.body.back() == '\n');
  // Every line is a comment or `name{labels} value`.
  const std::regex sample(R"re([a-z_]+(\{([a-z_]+="([^"\\]|\\.)*",?)*\})? [-+0-9.eInfNa]+)re");
  std::istringstream in(r.body);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("# ", 0) == 0) continue;
    INFO(line);
    CHECK(std::regex_match(line, sample));
  }
  CHECK(ValueOf(r.body, "edgealloc_store_write_queue_depth{shard=\"0\"}") >= 0);
  CHECK(ValueOf(r.body, "edgealloc_mirror_age_seconds") >= 0);
}

TEST_CASE("metrics: edgealloc_build_info names the version, the commit and the libraries") {
  LiveService t;
  HttpReply r = t.Client().Get("/metrics");
  REQUIRE(r.status == 200);
  CHECK_THAT(r.body, Catch::Contains("# TYPE edgealloc_build_info gauge\n"));
  const std::string sample = std::string("edgealloc_build_info{version=\"") + base::kVersion +
                             "\",commit=\"" + base::kCommit + "\",sqlite_version=\"" +
                             store::SqliteLibraryVersion() + "\",libpq_version=\"" +
                             store::LibpqLibraryVersion() + "\"} 1\n";
  CHECK_THAT(r.body, Catch::Contains(sample));
  CHECK(std::string(base::kVersion).find('.') != std::string::npos);
  CHECK_FALSE(std::string(base::kCommit).empty());
}

TEST_CASE("metrics: counters move after a claim and a release") {
  LiveService t([](ServeConfig* c) { c->mirror_refresh_ms = 50; });
  HttpClient c = t.Client();
  RegisterFleet(c, "m", 2);
  std::string before = c.Get("/metrics").body;
  CHECK(ValueOf(before, "edgealloc_claims_total{result=\"ok\"}") == 0);
  CHECK(ValueOf(before, "edgealloc_claim_duration_seconds_count") == 0);

  HttpReply s = c.Post("/v1/sessions", R"({"region":"weur","pool":"chrome","idempotency_key":"k"})");
  REQUIRE(s.status == 201);
  REQUIRE(c.Post("/v1/sessions", R"({"region":"weur","pool":"chrome","idempotency_key":"k"})")
              .status == 201);
  REQUIRE(c.Post("/v1/sessions", R"({"region":"nowhere"})").status == 404);
  nlohmann::json session = nlohmann::json::parse(s.body);
  REQUIRE(c.Delete("/v1/sessions/" + session["session_id"].get<std::string>() +
                   "?token=" + std::to_string(session["token"].get<int64_t>()))
              .status == 204);

  std::string after = c.Get("/metrics").body;
  CHECK(ValueOf(after, "edgealloc_claims_total{result=\"ok\"}") == 1);
  CHECK(ValueOf(after, "edgealloc_claims_total{result=\"replayed\"}") == 1);
  CHECK(ValueOf(after, "edgealloc_claims_total{result=\"no_capacity\"}") == 0);
  CHECK(ValueOf(after, "edgealloc_claims_total{result=\"unknown_pool\"}") == 1);
  CHECK(ValueOf(after, "edgealloc_releases_total") == 1);
  CHECK(ValueOf(after, "edgealloc_pool_claims_total{region=\"weur\",pool=\"chrome\",result=\"ok\"}") ==
        1);
  // A pool that does not exist gets no series of its own (made-up names
  // would crowd the real pools out): it is counted with every other one.
  CHECK(ValueOf(after,
                "edgealloc_pool_claims_total{region=\"nowhere\",pool=\"default\",result=\"no_capacity\"}") ==
        -1);
  CHECK(ValueOf(after, "edgealloc_claims_unknown_pool_total") == 1);
  CHECK(ValueOf(after, "edgealloc_claim_duration_seconds_count") == 3);
  CHECK(ValueOf(after, "edgealloc_claim_duration_seconds_bucket{le=\"+Inf\"}") == 3);
  CHECK(ValueOf(after, "edgealloc_claim_duration_seconds_sum") > 0);
  CHECK(ValueOf(after, "edgealloc_http_requests_total{route=\"/v1/sessions\",status=\"201\"}") == 2);
  CHECK(ValueOf(after, "edgealloc_http_requests_total{route=\"/v1/sessions\",status=\"404\"}") == 1);
  CHECK(ValueOf(after,
                "edgealloc_http_requests_total{route=\"/v1/sessions/{id}\",status=\"204\"}") == 1);
  CHECK(ValueOf(after, "edgealloc_store_transactions_total{shard=\"0\"}") >
        ValueOf(before, "edgealloc_store_transactions_total{shard=\"0\"}"));
  CHECK(Eventually([&] {
    std::string m = c.Get("/metrics").body;
    return ValueOf(m, "edgealloc_containers{region=\"weur\",pool=\"chrome\",state=\"available\"}") ==
           2;
  }));
  // A real pool's refusals are counted as its own.
  REQUIRE(c.Post("/v1/sessions", R"({"region":"weur","pool":"chrome"})").status == 201);
  REQUIRE(c.Post("/v1/sessions", R"({"region":"weur","pool":"chrome"})").status == 201);
  REQUIRE(c.Post("/v1/sessions", R"({"region":"weur","pool":"chrome"})").status == 503);
  CHECK(ValueOf(c.Get("/metrics").body,
                "edgealloc_pool_claims_total{region=\"weur\",pool=\"chrome\",result=\"no_capacity\"}") ==
        1);
}

TEST_CASE("metrics: the route label is the pattern and never the raw path") {
  LiveService t;
  HttpClient c = t.Client();
  CHECK(c.Get("/v1/sessions/s_secret_looking_id").status == 404);
  CHECK(c.Get("/no/such/path/at-all").status == 404);
  CHECK(c.Request("PUT", "/v1/sessions/s_other", "{}").status == 405);
  std::string m = c.Get("/metrics").body;
  CHECK(m.find("s_secret_looking_id") == std::string::npos);
  CHECK(m.find("at-all") == std::string::npos);
  CHECK(ValueOf(m, "edgealloc_http_requests_total{route=\"/v1/sessions/{id}\",status=\"404\"}") ==
        1);
  CHECK(ValueOf(m, "edgealloc_http_requests_total{route=\"unmatched\",status=\"404\"}") == 1);
  CHECK(ValueOf(m, "edgealloc_http_requests_total{route=\"/v1/sessions/{id}\",status=\"405\"}") ==
        1);
}

TEST_CASE("metrics: a part left out leaves its families out") {
  MetricsSources none;
  CHECK(RenderMetrics(none, 0).empty());
  base::LatencyHistogram h;
  h.Observe(std::chrono::microseconds(700));
  MetricsSources only;
  only.claim_latency = &h;
  std::string m = RenderMetrics(only, 0);
  CHECK(ValueOf(m, "edgealloc_claim_duration_seconds_bucket{le=\"0.0005\"}") == 0);
  CHECK(ValueOf(m, "edgealloc_claim_duration_seconds_bucket{le=\"0.001\"}") == 1);
  CHECK(ValueOf(m, "edgealloc_claim_duration_seconds_count") == 1);
  CHECK(ValueOf(m, "edgealloc_claim_duration_seconds_sum") == Approx(0.0007));
  CHECK(m.find("edgealloc_claims_total") == std::string::npos);
}

}  // namespace
}  // namespace server
