#include "server/api/reader_pool.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <atomic>
#include <chrono>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "tests/server/service_fixture.h"
#include "tests/server/storage_double.h"

namespace server {
namespace {

using fixture::Eventually;
using fixture::LiveService;
using fixture::StorageDouble;
using nlohmann::json;
using testing::HttpClient;
using testing::HttpReply;

TEST_CASE("reader pool: a full queue refuses at once and Stop answers what is queued") {
  ReaderPool pool(1, 2);
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  std::atomic<int> ran{0}, dropped{0};
  std::atomic<bool> started{false};
  auto job = [&](bool run) { run ? ran.fetch_add(1) : dropped.fetch_add(1); };
  REQUIRE(pool.TryPost([&, released](bool) {
            started = true;
            released.wait();
            ran.fetch_add(1);
          }) == ReaderPool::Posted::kQueued);
  REQUIRE(Eventually([&] { return started.load(); }));
  CHECK(pool.TryPost(job) == ReaderPool::Posted::kQueued);
  CHECK(pool.TryPost(job) == ReaderPool::Posted::kQueued);
  CHECK(pool.queued() == 2);
  CHECK(pool.TryPost(job) == ReaderPool::Posted::kFull);  // bounded: never a third
  std::thread stopper([&] { pool.Stop(); });
  // The queued jobs are answered (false) at once; the running one ends.
  CHECK(Eventually([&] { return dropped.load() == 2; }));
  release.set_value();
  stopper.join();
  CHECK(ran.load() == 1);
  CHECK(pool.TryPost(job) == ReaderPool::Posted::kStopping);
  CHECK(ReaderRefusedResponse(ReaderPool::Posted::kFull).result_int() == 503);
  CHECK(ReaderRefusedResponse(ReaderPool::Posted::kFull)[http::field::retry_after] == "1");
}

TEST_CASE("reader pool: one owner's jobs hold at most half the threads, and another's pass them") {
  ReaderPool pool(2, 16);
  REQUIRE(pool.per_owner_threads() == 1);
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  std::atomic<int> a_running{0}, a_ran{0};
  for (int i = 0; i < 2; ++i) {
    REQUIRE(pool.TryPost(
                [&, released](bool run) {
                  if (!run) return;
                  a_running.fetch_add(1);
                  released.wait();
                  a_ran.fetch_add(1);
                },
                TenantReads("a")) == ReaderPool::Posted::kQueued);
  }
  // One of a's runs, the other waits for a's share (before the bound: both ran).
  REQUIRE(Eventually([&] { return a_running.load() >= 1 && a_running + pool.queued() == 2; }));
  std::atomic<bool> b_ran{false};
  REQUIRE(pool.TryPost([&](bool run) { b_ran = run; }, TenantReads("b")) ==
          ReaderPool::Posted::kQueued);
  // Before the bound: a's second job took the other thread, and b's waited
  // for a's to end.
  CHECK(Eventually([&] { return b_ran.load(); }));
  CHECK(a_running.load() == 1);  // a's second still waits for its share
  std::atomic<bool> unowned_ran{false};
  REQUIRE(pool.TryPost([&](bool run) { unowned_ran = run; }) == ReaderPool::Posted::kQueued);
  CHECK(Eventually([&] { return unowned_ran.load(); }));
  release.set_value();
  CHECK(Eventually([&] { return a_ran.load() == 2; }));
  pool.Stop();
}

// A service whose storage reads can be made to block (StorageDouble).
struct BlockingService {
  explicit BlockingService(int reader_threads, int shards = 1, const std::string& keys = "")
      : t([reader_threads, shards](ServeConfig* c) {
            c->threads = 1;  // one io thread: a read held on it would stop everything
            c->reader_threads = reader_threads;
            c->shards = shards;
          },
          keys,
          [this](std::unique_ptr<store::Storage> real) {
            auto d = std::make_unique<StorageDouble>(std::move(real));
            storage = d.get();
            return std::unique_ptr<store::Storage>(std::move(d));
          }) {}
  ~BlockingService() {
    if (storage != nullptr && t.service->readers() != nullptr) storage->Unblock();
  }
  StorageDouble* storage = nullptr;
  LiveService t;
};

TEST_CASE("reader pool: while every read waits on the database, /healthz and /readyz answer") {
  BlockingService b(2);
  HttpClient admin = b.t.Client();
  fixture::RegisterFleet(admin, "rd", 2);
  b.storage->Block();
  std::vector<std::future<HttpReply>> reads;
  for (std::string target : {"/v1/sessions/s_nobody", "/v1/sessions", "/v1/limits?tenant=acme",
                             "/v1/containers/rd-0", "/v1/containers"}) {
    reads.push_back(std::async(std::launch::async, [&b, target] {
      HttpClient c = b.t.Client();
      c.set_timeout(std::chrono::seconds(20));
      return c.Get(target);
    }));
  }
  REQUIRE(Eventually([&] { return b.storage->blocked() >= 1; }));
  HttpClient probe = b.t.Client();
  probe.set_timeout(std::chrono::seconds(3));
  for (const char* path : {"/healthz", "/readyz"}) {
    INFO(path);
    const auto started = std::chrono::steady_clock::now();
    HttpReply r = probe.Get(path);  // before the fix: HttpTimeout (the io thread was held)
    CHECK(r.status == 200);
    CHECK(std::chrono::steady_clock::now() - started < std::chrono::seconds(1));
  }
  // One tenant's reads (all are default's here) hold one of the two reader
  // threads; the rest is queued.
  CHECK(b.storage->blocked() == 1);
  b.storage->Unblock();
  std::vector<int> statuses;
  for (auto& f : reads) statuses.push_back(f.get().status);
  CHECK(statuses == std::vector<int>{404, 200, 200, 200, 200});
}

TEST_CASE("reader pool: with SQLite shards, writes that read first are submitted off the io thread") {
  // SQLite with shards reads every shard file before it submits a claim
  // with an idempotency key or a registration, drain or removal (and waits
  // for the registration lock), and a heartbeat asks each item's shard:
  // none of that may hold an io thread either.
  BlockingService b(5, 2);
  HttpClient admin = b.t.Client();
  fixture::RegisterFleet(admin, "rd", 2);
  REQUIRE(admin.Post("/v1/containers",
                     R"({"containers":[{"id":"ff-0","region":"weur","pool":"firefox"}]})")
              .status == 200);
  b.storage->BlockSubmits();
  std::vector<std::future<HttpReply>> writes;
  auto send = [&b](std::string method, std::string target, std::string body) {
    return std::async(std::launch::async, [&b, method, target, body] {
      HttpClient c = b.t.Client();
      c.set_timeout(std::chrono::seconds(20));
      return c.Request(method, target, body);
    });
  };
  writes.push_back(send("POST", "/v1/sessions",
                        R"({"region":"weur","pool":"firefox","idempotency_key":"k"})"));
  writes.push_back(send("POST", "/v1/containers",
                        R"({"containers":[{"id":"rd-9","region":"weur","pool":"chrome"}]})"));
  writes.push_back(send("POST", "/v1/containers/rd-0/drain", ""));
  writes.push_back(send("DELETE", "/v1/containers/rd-1", ""));
  writes.push_back(send("POST", "/v1/heartbeats", R"({"heartbeats":[{"container_id":"ff-0"}]})"));
  REQUIRE(Eventually([&] { return b.storage->blocked() == 5; }));
  HttpClient probe = b.t.Client();
  probe.set_timeout(std::chrono::seconds(3));
  const auto started = std::chrono::steady_clock::now();
  CHECK(probe.Get("/healthz").status == 200);  // before the fix: HttpTimeout
  CHECK(std::chrono::steady_clock::now() - started < std::chrono::seconds(1));
  b.storage->Unblock();
  std::vector<int> statuses;
  for (auto& f : writes) statuses.push_back(f.get().status);
  CHECK(statuses == std::vector<int>{201, 200, 200, 204, 202});
}

// GETs of `target` with `key`, `n` of them at once, each on a connection of
// its own, into *reads.
void ReadAsTenant(BlockingService& b, const std::string& key, const std::string& target,
                  size_t n, std::vector<std::future<HttpReply>>* reads) {
  for (size_t i = 0; i < n; ++i) {
    reads->push_back(std::async(std::launch::async, [&b, key, target] {
      HttpClient c = b.t.Client(key);
      c.set_timeout(std::chrono::seconds(20));
      return c.Get(target);
    }));
  }
}

TEST_CASE("reader pool: a read past the full queue is 503 overloaded at once, with Retry-After") {
  // One tenant's reads fill at most its share of the queue: four tenants
  // fill it.
  BlockingService b(1, 1,
                    "adm admin\nk0 tenant t0\nk1 tenant t1\nk2 tenant t2\nk3 tenant t3\n"
                    "k4 tenant t4\n");
  b.storage->Block();
  ReaderPool* pool = b.t.service->readers();
  const size_t queue = kReaderQueuePerThread;
  REQUIRE(pool->per_owner_queued() * 4 == queue);
  std::vector<std::future<HttpReply>> reads;
  ReadAsTenant(b, "k0", "/v1/sessions", 1, &reads);  // the one running
  REQUIRE(Eventually([&] { return b.storage->blocked() == 1; }));
  for (const char* key : {"k0", "k1", "k2", "k3"}) {
    ReadAsTenant(b, key, "/v1/sessions", pool->per_owner_queued(), &reads);
  }
  REQUIRE(Eventually([&] { return pool->queued() == queue; }, std::chrono::seconds(10)));
  HttpClient late = b.t.Client("k4");
  late.set_timeout(std::chrono::seconds(3));
  const auto started = std::chrono::steady_clock::now();
  HttpReply r = late.Get("/v1/sessions");
  CHECK(r.status == 503);
  CHECK(r.ErrorCode() == "overloaded");
  CHECK(r.Header("retry-after") == "1");
  CHECK(std::chrono::steady_clock::now() - started < std::chrono::seconds(1));
  CHECK(pool->queued() == queue);  // nothing queued past the bound
  HttpClient admin = b.t.Client("adm");
  CHECK(fixture::MetricValue(admin, R"(edgealloc_reads_refused_total{reason="full"})") == 1);
  b.storage->Unblock();
  for (auto& f : reads) CHECK(f.get().status == 200);
}

TEST_CASE("reader pool: a tenant's reads past its share of the queue are 503 overloaded at once, "
          "and another tenant's read is served meanwhile") {
  BlockingService b(2, 1, "adm admin\nacme-key tenant acme\nbolt-key tenant bolt\n");
  b.storage->BlockTenant("acme");  // acme's lists stall, as heavy pages on a slow database
  ReaderPool* pool = b.t.service->readers();
  const size_t share = pool->per_owner_queued();
  REQUIRE(share == 2 * kReaderQueuePerThread / 4);
  std::vector<std::future<HttpReply>> acme;
  // One holds acme's reader thread, the others fill its share of the queue.
  // The first is running before the others are sent: sent together, all
  // of them could be queued before a reader took the first, and the last
  // would be refused (a loaded machine did that in a clean-clone run).
  ReadAsTenant(b, "acme-key", "/v1/sessions?limit=1000", 1, &acme);
  REQUIRE(Eventually([&] { return b.storage->blocked() == 1; }));
  ReadAsTenant(b, "acme-key", "/v1/sessions?limit=1000", share, &acme);
  REQUIRE(Eventually([&] { return pool->queued() == share; }, std::chrono::seconds(10)));
  HttpClient more = b.t.Client("acme-key");
  more.set_timeout(std::chrono::seconds(3));
  const auto started = std::chrono::steady_clock::now();
  HttpReply r = more.Get("/v1/sessions?limit=1000");  // before the share: queued, HttpTimeout
  CHECK(r.status == 503);
  CHECK(r.ErrorCode() == "overloaded");
  CHECK(r.Header("retry-after") == "1");
  CHECK(std::chrono::steady_clock::now() - started < std::chrono::seconds(1));
  CHECK(pool->queued() == share);
  HttpClient bolt = b.t.Client("bolt-key");
  bolt.set_timeout(std::chrono::seconds(5));
  CHECK(bolt.Get("/v1/sessions").status == 200);  // not refused, not behind acme's
  HttpClient admin = b.t.Client("adm");
  CHECK(fixture::MetricValue(admin, R"(edgealloc_reads_refused_total{reason="share"})") == 1);
  CHECK(fixture::MetricValue(admin, R"(edgealloc_reads_refused_total{reason="full"})") == 0);
  b.storage->Unblock();
  for (auto& f : acme) CHECK(f.get().status == 200);
}

TEST_CASE("reader pool: Stop answers the reads still queued 503 and lets the running one end") {
  BlockingService b(1);
  HttpClient admin = b.t.Client();
  fixture::RegisterFleet(admin, "rd", 1);
  b.storage->Block();
  auto read = [&b] {
    HttpClient c = b.t.Client();
    c.set_timeout(std::chrono::seconds(20));
    return c.Get("/v1/containers/rd-0");
  };
  std::future<HttpReply> running = std::async(std::launch::async, read);
  REQUIRE(Eventually([&] { return b.storage->blocked() == 1; }));
  std::vector<std::future<HttpReply>> queued;
  for (int i = 0; i < 2; ++i) queued.push_back(std::async(std::launch::async, read));
  REQUIRE(Eventually([&] { return b.t.service->readers()->queued() == 2; }));
  StorageDouble* storage = b.storage;
  std::thread stopper([&b] { b.t.service->Stop(std::chrono::milliseconds(100)); });
  for (auto& f : queued) {
    HttpReply r = f.get();  // while the running read still waits
    CHECK(r.status == 503);
    CHECK(r.ErrorCode() == "unavailable");
  }
  CHECK(storage->blocked() == 1);
  storage->Unblock();
  stopper.join();
  b.storage = nullptr;  // gone with the service's storage
  CHECK(running.get().status == 200);
}

TEST_CASE("reader pool: a tenant whose pages hold the database leaves another tenant a reader") {
  BlockingService b(2, 1, "adm admin\nacme-key tenant acme\nbolt-key tenant bolt\n");
  b.storage->BlockTenant("acme");  // acme's lists stall, as heavy pages on a slow database
  std::vector<std::future<HttpReply>> acme;
  for (int i = 0; i < 3; ++i) {
    acme.push_back(std::async(std::launch::async, [&b] {
      HttpClient c = b.t.Client("acme-key");
      c.set_timeout(std::chrono::seconds(30));
      return c.Get("/v1/sessions?limit=1000");
    }));
  }
  // All three reached the pool: one holds a reader (before the bound: two),
  // the others wait for acme's share.
  REQUIRE(Eventually([&] {
    return b.storage->blocked() + b.t.service->readers()->queued() == 3;
  }, std::chrono::seconds(10)));
  HttpClient bolt = b.t.Client("bolt-key");
  bolt.set_timeout(std::chrono::seconds(5));
  HttpReply r = bolt.Get("/v1/sessions");  // before the bound: acme held both, HttpTimeout
  CHECK(r.status == 200);
  CHECK(b.storage->blocked() == 1);
  b.storage->Unblock();
  for (auto& f : acme) CHECK(f.get().status == 200);
}

}  // namespace
}  // namespace server
