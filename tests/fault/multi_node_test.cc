// Several `edgealloc serve` processes on one real PostgreSQL database (#14,
// "Tests, with a real server"): a claim storm over three nodes, kill -9 of a
// node mid-storm, and a failover of the database to its synchronous standby.
// Every node is the real binary (EDGEALLOC_BIN), talked to over HTTP;
// PostgreSQL is tests/support/pg_server.h's.
//
// Catch2's assertions are not thread-safe: the client threads only count
// and record (under one mutex); the test case's thread asserts afterwards.

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "tests/support/http_client.h"
#include "tests/support/pg_server.h"
#include "tests/support/temp_dir.h"

extern char** environ;

namespace {

using Clock = std::chrono::steady_clock;
using json = nlohmann::json;

constexpr const char* kBin = EDGEALLOC_BIN;
// The binary the nodes run: EDGEALLOC_TEST_BIN if set (to show a test
// failing on an older build), else the one built with the tests.
const char* NodeBin() {
  const char* bin = std::getenv("EDGEALLOC_TEST_BIN");
  return bin != nullptr && *bin != '\0' ? bin : kBin;
}
constexpr const char* kAdminKey = "admin-key-0123456789abcdef";
// Tenants and their keys; "tq" is the one with a quota.
const std::vector<std::pair<std::string, std::string>> kTenants = {
    {"ta", "tenant-a-key-0123456789ab"},
    {"tb", "tenant-b-key-0123456789ab"},
    {"tq", "tenant-q-key-0123456789ab"}};
// --max-sessions-per-tenant of the first test (it binds every tenant; tq's
// clients are the most eager); the others run without (0), since the
// sessions they keep would use it up.
constexpr int kQuota = 5;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string Tail(const std::string& s, size_t n = 3000) {
  return s.size() <= n ? s : s.substr(s.size() - n);
}

std::string Join(const std::vector<std::string>& lines) {
  std::string all;
  for (const auto& l : lines) all += "\n  " + l;
  return all;
}

double MsSince(Clock::time_point t0, Clock::time_point t) {
  return std::chrono::duration<double, std::milli>(t - t0).count();
}

// One `edgealloc serve` process, its output in a log file. Owned by the test
// case's thread; port() may be read from any thread. Killed (SIGKILL) and
// reaped by the destructor if still running.
class Node {
 public:
  // `clock_offset`, e.g. "+90s": the node runs under libfaketime with its
  // wall clock that far off (its monotonic clock untouched), as after an
  // NTP step or a VM resumed late.
  Node(const std::string& name, const std::string& db, const std::string& keys_file,
       const std::string& log, int quota, const std::string& clock_offset = "",
       const std::string& dead_after_ms = "3600000")
      : name_(name), log_(log) {
    std::vector<std::string> args = {NodeBin(),
                                     "serve",
                                     "--db",
                                     db,
                                     "--listen",
                                     "127.0.0.1:0",
                                     "--keys",
                                     keys_file,
                                     "--max-sessions-per-tenant",
                                     std::to_string(quota),
                                     "--dead-after-ms",
                                     dead_after_ms,
                                     "--threads",
                                     "2"};
    std::vector<std::string> env_strings;
    for (char** e = environ; *e != nullptr; ++e) env_strings.push_back(*e);
    if (!clock_offset.empty()) {
      // libfaketime preloaded into the node itself (not the `faketime`
      // wrapper, which forks: a kill would end the wrapper, not the node).
      env_strings.push_back("LD_PRELOAD=/usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1");
      env_strings.push_back("FAKETIME=" + clock_offset);
      env_strings.push_back("FAKETIME_DONT_FAKE_MONOTONIC=1");
    }
    std::vector<char*> env;
    for (auto& e : env_strings) env.push_back(e.data());
    env.push_back(nullptr);
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, log_.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    posix_spawn_file_actions_adddup2(&fa, 1, 2);
    const int rc = posix_spawn(&pid_, args[0].c_str(), &fa, nullptr, argv.data(), env.data());
    posix_spawn_file_actions_destroy(&fa);
    if (rc != 0) FAIL("posix_spawn " << args[0] << ": " << rc);
    // The server logs "edgealloc: serving on 127.0.0.1:PORT, ..." with the
    // port it bound (--listen ...:0 picks a free one).
    const std::regex serving("serving on 127\\.0\\.0\\.1:([0-9]+)");
    const auto deadline = Clock::now() + std::chrono::seconds(30);
    for (;;) {
      std::smatch m;
      const std::string text = ReadFile(log_);
      if (std::regex_search(text, m, serving)) {
        port_ = static_cast<uint16_t>(std::stoi(m[1].str()));
        break;
      }
      int status = 0;
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        FAIL(name_ << " exited before serving; its log:\n" << Tail(text));
      }
      if (Clock::now() > deadline) {
        Kill();  // the destructor does not run for a constructor that throws
        FAIL(name_ << " did not serve within 30 s; its log:\n" << Tail(text));
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;
  ~Node() { Kill(); }

  uint16_t port() const { return port_; }
  const std::string& name() const { return name_; }
  std::string log() const { return ReadFile(log_); }
  bool running() const { return pid_ > 0; }

  // kill -9, and reaped.
  void Kill() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGKILL);
    int status = 0;
    waitpid(pid_, &status, 0);
    pid_ = -1;
  }

 private:
  std::string name_;
  std::string log_;
  pid_t pid_ = -1;
  uint16_t port_ = 0;
};

// The nodes of one test on one database, with the keys file they share.
struct Cluster {
  testing::TempDir dir;
  std::vector<std::unique_ptr<Node>> nodes;

  Cluster(const std::string& db, int n, int quota) {
    std::string keys = std::string(kAdminKey) + " admin\n";
    for (const auto& [tenant, key] : kTenants) keys += key + " tenant " + tenant + "\n";
    std::ofstream(dir.File("keys")) << keys;
    for (int i = 0; i < n; ++i) {
      const std::string name = "node" + std::to_string(i);
      nodes.push_back(std::make_unique<Node>(name, db, dir.File("keys"), dir.File(name + ".log"), quota));
    }
  }
  std::string Logs() const {
    std::string all;
    for (const auto& n : nodes) all += "--- " + n->name() + "'s log:\n" + Tail(n->log(), 2000);
    return all;
  }
};

// Registers `count` containers c-000.. (weur: 70%, the rest eeur) in pool p.
void RegisterFleet(uint16_t port, int count) {
  json containers = json::array();
  for (int i = 0; i < count; ++i) {
    char id[16];
    std::snprintf(id, sizeof(id), "c-%03d", i);
    containers.push_back({{"id", id},
                          {"region", i * 10 < count * 7 ? "weur" : "eeur"},
                          {"pool", "p"},
                          {"latency_ms", i % 7},
                          {"data", {{"n", i}}}});
  }
  testing::HttpClient admin(port, kAdminKey);
  testing::HttpReply r = admin.Post("/v1/containers", json{{"containers", containers}}.dump());
  INFO(r.body);
  REQUIRE(r.status == 200);
  REQUIRE(json::parse(r.body)["registered"] == count);
}

// What the clients of a storm do.
struct StormConfig {
  std::vector<uint16_t> ports;  // node i's port
  int threads = 48;
  int64_t lease_ms = 60000;
  // Every keep_every-th claim of a thread is kept (never released), at most
  // max_kept a thread; 0: every claim is released.
  int keep_every = 0;
  int max_kept = 0;
  std::chrono::milliseconds timeout{5000};  // each HTTP step of a client
};

// One acknowledged claim (201), as a client saw it.
struct Ack {
  std::string session_id;
  std::string container_id;
  int64_t token = 0;
  int node = 0;             // the node that answered 201
  std::string tenant;
  double sent_ms = 0;       // request sent, since the storm's start
  double received_ms = 0;   // 201 received
  bool kept = false;        // never released
  bool release_sent = false;
  bool released = false;    // 204
  double released_ms = 0;   // 204 received
};

struct NodeCounts {
  int64_t claims_ok = 0;
  int64_t conn_errors = 0;  // the request broke on the network (not a timeout)
  int64_t timeouts = 0;     // a step took longer than the client timeout: a hang
  std::map<int, int64_t> statuses;
  std::map<std::string, int64_t> codes;  // error codes of non-2xx replies
};

// The shared record of a storm: written by the client threads under mu,
// read by the test's thread after they joined (or under mu meanwhile).
struct Record {
  std::mutex mu;
  std::set<std::string> holding;                      // containers held now
  std::set<std::pair<std::string, int64_t>> tokens;   // (container, token) acknowledged
  int64_t doubles = 0;  // a 201 for a container some client holds
  int64_t repeats = 0;  // a (container, token) acknowledged twice
  // Each tenant's sessions held now, and the most at once (the quota binds
  // every tenant; tq's clients are the most eager).
  std::map<std::string, int> tenant_holding, tenant_max;
  int64_t quota_refusals = 0;
  int64_t idem_replays_ok = 0, idem_mismatches = 0;
  int64_t releases_ok = 0;
  int64_t other_5xx = 0;            // a 5xx other than 503
  int64_t missing_retry_after = 0;  // a 503 without Retry-After
  int64_t unexpected = 0;           // any other reply the client did not expect
  // Releases retried on another node after the first broke, answered 404:
  // the first may have committed before its node died.
  int64_t releases_ambiguous = 0;
  // Releases still answered 503 when the storm ended (at most one a client):
  // their containers stay held for their lease.
  int64_t releases_unanswered = 0;
  std::vector<std::string> samples;  // the first unexpected replies, for messages
  std::vector<NodeCounts> per_node;
  std::vector<Ack> acks;
  std::vector<double> ok_times_ms;  // when each 201 of a new claim arrived

  void Sample(const std::string& what) {
    if (samples.size() < 12) samples.push_back(what);
  }
};

// A client thread's storm: claim, maybe retry with its idempotency key on
// another node, hold a moment, release (half the threads on another node).
class Storm {
 public:
  explicit Storm(StormConfig config) : config_(std::move(config)) {
    record_.per_node.resize(config_.ports.size());
  }
  ~Storm() { Stop(); }

  void Start() {
    t0_ = Clock::now();
    for (int t = 0; t < config_.threads; ++t) threads_.emplace_back([this, t] { Client(t); });
  }
  void Stop() {
    stop_.store(true);
    for (auto& th : threads_) th.join();
    threads_.clear();
  }
  double NowMs() const { return MsSince(t0_, Clock::now()); }
  Record& record() { return record_; }
  Clock::time_point t0() const { return t0_; }

 private:
  // Counts a reply that is not the one hoped for; true if it is one the
  // API allows under load (503 with Retry-After, 429).
  void CountReply(int node, const testing::HttpReply& r, const std::string& what) {
    std::lock_guard<std::mutex> lock(record_.mu);
    NodeCounts& c = record_.per_node[node];
    ++c.statuses[r.status];
    if (r.status >= 400) ++c.codes[r.ErrorCode()];
    if (r.status == 503) {
      if (r.Header("retry-after").empty()) {
        ++record_.missing_retry_after;
        record_.Sample(what + ": 503 without Retry-After: " + r.body);
      }
    } else if (r.status >= 500) {
      ++record_.other_5xx;
      record_.Sample(what + ": " + std::to_string(r.status) + " " + r.body);
    } else if (r.status == 429) {
      ++record_.quota_refusals;
    } else if (r.status >= 300) {
      ++record_.unexpected;
      record_.Sample(what + " on node" + std::to_string(node) + ": " + std::to_string(r.status) +
                     " " + r.body);
    }
  }

  // Sends one request; nullopt if it broke (counted).
  std::optional<testing::HttpReply> Send(testing::HttpClient& client, int node,
                                         const std::string& method, const std::string& target,
                                         const std::string& body) {
    try {
      return client.Request(method, target, body);
    } catch (const testing::HttpTimeout& e) {
      std::lock_guard<std::mutex> lock(record_.mu);
      ++record_.per_node[node].timeouts;
      record_.Sample(method + " " + target + " on node" + std::to_string(node) + ": " + e.what());
    } catch (const std::exception&) {
      std::lock_guard<std::mutex> lock(record_.mu);
      ++record_.per_node[node].conn_errors;
    }
    return std::nullopt;
  }

  void Client(int t) {
    const int nodes = static_cast<int>(config_.ports.size());
    const int node = t % nodes;
    const int release_node = (t / nodes) % 2 == 0 ? node : (node + 1) % nodes;
    const int replay_node = (node + 1) % nodes;
    const bool keyed = t % 4 == 1;
    // Threads 2, 5, 8, ... (a third, on every node) are tenant tq's.
    const auto& [tenant, key] = t % 3 == 2 ? kTenants[2] : kTenants[t % 2];
    std::vector<std::unique_ptr<testing::HttpClient>> clients;
    for (uint16_t port : config_.ports) {
      clients.push_back(std::make_unique<testing::HttpClient>(port, key));
      clients.back()->set_timeout(config_.timeout);
    }
    std::mt19937 rng(static_cast<unsigned>(t) * 7919u + 1u);
    int claims = 0, kept = 0;
    for (int i = 0; !stop_.load(std::memory_order_relaxed); ++i) {
      json body = {{"region", "weur"},
                   {"pool", "p"},
                   {"lease_ms", config_.lease_ms},
                   {"fallback_regions", {"eeur"}}};
      if (keyed) body["idempotency_key"] = "k" + std::to_string(t) + "-" + std::to_string(i);
      const std::string text = body.dump();
      const double sent = NowMs();
      auto r = Send(*clients[node], node, "POST", "/v1/sessions", text);
      if (!r) {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        continue;
      }
      CountReply(node, *r, "claim");
      if (r->status != 201) {
        // No capacity, quota, or an outage: a moment before the next try.
        std::this_thread::sleep_for(std::chrono::milliseconds(r->status == 429 ? 2 : 5));
        continue;
      }
      const double received = NowMs();
      const json s = json::parse(r->body, nullptr, false);
      Ack ack;
      if (s.is_discarded() || !s.contains("session_id") || !s.contains("token")) {
        std::lock_guard<std::mutex> lock(record_.mu);
        ++record_.unexpected;
        record_.Sample("claim: 201 with body " + r->body);
        continue;
      }
      ack.session_id = s["session_id"];
      ack.container_id = s["container_id"];
      ack.token = s["token"];
      ack.node = node;
      ack.tenant = tenant;
      ack.sent_ms = sent;
      ack.received_ms = received;
      ++claims;
      ack.kept = config_.keep_every > 0 && kept < config_.max_kept && claims % config_.keep_every == 0;
      if (ack.kept) ++kept;
      size_t index = 0;
      {
        std::lock_guard<std::mutex> lock(record_.mu);
        ++record_.per_node[node].claims_ok;
        record_.ok_times_ms.push_back(received);
        if (!record_.holding.insert(ack.container_id).second) {
          ++record_.doubles;
          record_.Sample("double allocation of " + ack.container_id + " (token " +
                         std::to_string(ack.token) + ")");
        }
        if (!record_.tokens.insert({ack.container_id, ack.token}).second) ++record_.repeats;
        int& max = record_.tenant_max[tenant];
        max = std::max(max, ++record_.tenant_holding[tenant]);
        index = record_.acks.size();
        record_.acks.push_back(ack);
      }
      if (keyed) {
        // The same claim again, on another node: the same session.
        auto again = Send(*clients[replay_node], replay_node, "POST", "/v1/sessions", text);
        if (again) {
          CountReply(replay_node, *again, "idempotent retry");
          if (again->status == 201) {
            const json s2 = json::parse(again->body, nullptr, false);
            std::lock_guard<std::mutex> lock(record_.mu);
            if (!s2.is_discarded() && s2.value("session_id", "") == ack.session_id &&
                s2.value("token", int64_t{-1}) == ack.token &&
                again->Header("idempotent-replayed") == "true") {
              ++record_.idem_replays_ok;
            } else {
              ++record_.idem_mismatches;
              record_.Sample("idempotent retry of " + ack.session_id + ": " + again->body);
            }
          }
        }
      }
      if (ack.kept) continue;
      std::this_thread::sleep_for(std::chrono::microseconds(rng() % 2000));
      {
        // Out of the set before the release is sent: once it commits,
        // another client may get the container at once.
        std::lock_guard<std::mutex> lock(record_.mu);
        record_.holding.erase(ack.container_id);
        --record_.tenant_holding[tenant];
        record_.acks[index].release_sent = true;
      }
      Release(clients, release_node, index, ack);
    }
  }

  // Releases `ack`'s session on node `via`, recorded as acks[index]. A 503
  // (the node cannot write now) is tried again, as a client would, until an
  // answer or the end of the storm. Given up, the container stays held for
  // its lease (10 minutes): in a failover the clients of the nodes back
  // first, releasing through one still down, gave up 24 to 55 (the more, the
  // longer the nodes came back apart), besides the ~96 sessions kept, and a
  // pool run dry answers no_capacity to the last node back, which then never
  // serves a claim again.
  void Release(std::vector<std::unique_ptr<testing::HttpClient>>& clients, int via, size_t index,
               const Ack& ack) {
    const int nodes = static_cast<int>(config_.ports.size());
    const std::string target =
        "/v1/sessions/" + ack.session_id + "?token=" + std::to_string(ack.token);
    auto rel = Send(*clients[via], via, "DELETE", target, "");
    bool retried = false;
    if (!rel) {
      // That node is gone (the kill test): as a client would, once more
      // on the next one, so that the container is not held for ever.
      via = (via + 1) % nodes;
      rel = Send(*clients[via], via, "DELETE", target, "");
      retried = true;
    }
    while (rel && rel->status == 503 && !stop_.load(std::memory_order_relaxed)) {
      CountReply(via, *rel, "release");
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      rel = Send(*clients[via], via, "DELETE", target, "");
    }
    if (!rel) return;
    if (retried && rel->status == 404) {
      // The dead node may have committed the first release before it
      // died without answering: the session is gone either way.
      std::lock_guard<std::mutex> lock(record_.mu);
      ++record_.releases_ambiguous;
      return;
    }
    CountReply(via, *rel, "release");
    if (rel->status == 503) {
      std::lock_guard<std::mutex> lock(record_.mu);
      ++record_.releases_unanswered;  // the storm ended first
    } else if (rel->status == 204) {
      std::lock_guard<std::mutex> lock(record_.mu);
      ++record_.releases_ok;
      record_.acks[index].released = true;
      record_.acks[index].released_ms = NowMs();
    }
  }

  StormConfig config_;
  Record record_;
  std::atomic<bool> stop_{false};
  std::vector<std::thread> threads_;
  Clock::time_point t0_;
};

std::string Describe(Record& r) {
  std::ostringstream out;
  for (size_t i = 0; i < r.per_node.size(); ++i) {
    const NodeCounts& c = r.per_node[i];
    out << "node" << i << ": claims " << c.claims_ok << ", connection errors " << c.conn_errors
        << ", timeouts " << c.timeouts << ", statuses {";
    for (const auto& [st, n] : c.statuses) out << st << ":" << n << " ";
    out << "}, codes {";
    for (const auto& [code, n] : c.codes) out << code << ":" << n << " ";
    out << "}\n";
  }
  out << "releases " << r.releases_ok << " (+" << r.releases_ambiguous
      << " retried, 404; " << r.releases_unanswered << " still 503 at the end), idempotent replays "
      << r.idem_replays_ok
      << ", quota refusals " << r.quota_refusals << ", most concurrent sessions {";
  for (const auto& [tenant, n] : r.tenant_max) out << tenant << ":" << n << " ";
  out << "}\n";
  for (const auto& s : r.samples) out << "  sample: " << s << "\n";
  return out.str();
}

int64_t TotalClaims(Record& r) {
  int64_t n = 0;
  for (const auto& c : r.per_node) n += c.claims_ok;
  return n;
}

// The invariants every storm keeps, asserted on the test case's thread.
void CheckInvariants(Record& r, int quota = 0) {
  INFO(Describe(r));
  CHECK(r.doubles == 0);
  CHECK(r.repeats == 0);
  CHECK(r.idem_mismatches == 0);
  for (const auto& [tenant, n] : r.tenant_max) {
    INFO("tenant " << tenant);
    if (quota > 0) CHECK(n <= quota);
  }
  CHECK(r.other_5xx == 0);
  CHECK(r.missing_retry_after == 0);
  CHECK(r.unexpected == 0);
  for (const auto& c : r.per_node) CHECK(c.timeouts == 0);
}

std::vector<uint16_t> Ports(const Cluster& cluster) {
  std::vector<uint16_t> ports;
  for (const auto& n : cluster.nodes) ports.push_back(n->port());
  return ports;
}

// GET /v1/sessions/{id} as admin on `client`, retried on 503 for up to
// `patience` (a node's pooled read connections find out one by one that the
// database went away).
testing::HttpReply GetSession(testing::HttpClient& client, const std::string& id,
                              std::chrono::milliseconds patience, int* unavailable) {
  const auto deadline = Clock::now() + patience;
  for (;;) {
    testing::HttpReply r = client.Get("/v1/sessions/" + id);
    if (r.status != 503 || Clock::now() > deadline) return r;
    ++*unavailable;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

}  // namespace

TEST_CASE("multi-node: three nodes on one PostgreSQL database never hand out a container twice",
          "[postgres]") {
  testing::PgServer pg;
  const std::string db = pg.NewDatabaseUri();
  Cluster cluster(db, 3, kQuota);
  RegisterFleet(cluster.nodes[0]->port(), 40);

  StormConfig config;
  config.ports = Ports(cluster);
  Storm storm(config);
  storm.Start();
  std::this_thread::sleep_for(std::chrono::seconds(3));
  const double elapsed_ms = storm.NowMs();
  storm.Stop();

  Record& r = storm.record();
  INFO(cluster.Logs());
  INFO("PostgreSQL's log:\n" << pg.LogTail(3000));
  CheckInvariants(r, kQuota);
  INFO(Describe(r));
  for (const auto& c : r.per_node) {
    CHECK(c.codes.count("overloaded") == 0);
    CHECK(c.claims_ok > 0);
    CHECK(c.conn_errors == 0);
  }
  CHECK(r.releases_ok > 0);
  CHECK(r.idem_replays_ok > 0);
  CHECK(r.quota_refusals > 0);  // the quota was reached, so it was tested
  const int64_t claims = TotalClaims(r);
  WARN("multi-node: " << claims << " claims in " << static_cast<int>(elapsed_ms) << " ms over 3 nodes = "
                      << static_cast<int>(claims * 1000.0 / elapsed_ms) << " claims/s; "
                      << r.releases_ok << " releases, " << r.idem_replays_ok
                      << " idempotent replays, " << r.quota_refusals << " quota refusals (tq held "
                      << r.tenant_max["tq"] << " of " << kQuota << " at most)");

  // Nothing is held any more: every container is available again.
  CHECK(testing::PgServer::Query(db, "SELECT count(*) FROM containers WHERE status <> 'available'") ==
        "0");
}

TEST_CASE("multi-node: kill -9 of one node loses none of the claims it acknowledged",
          "[postgres][fault]") {
  testing::PgServer pg;
  const std::string db = pg.NewDatabaseUri();
  Cluster cluster(db, 3, 0);
  RegisterFleet(cluster.nodes[0]->port(), 200);

  StormConfig config;
  config.ports = Ports(cluster);
  config.lease_ms = 600000;  // nothing expires during the test
  config.keep_every = 4;     // some sessions are kept, to be found afterwards
  config.max_kept = 2;
  Storm storm(config);
  storm.Start();
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  const double kill_ms = storm.NowMs();
  cluster.nodes[2]->Kill();
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  storm.Stop();

  Record& r = storm.record();
  INFO(cluster.Logs());
  CheckInvariants(r);
  INFO(Describe(r));
  // The dead node's clients saw connection errors; the others went on.
  CHECK(r.per_node[2].conn_errors > 0);
  int64_t after_kill_ok[2] = {0, 0};
  for (const Ack& a : r.acks) {
    if (a.sent_ms > kill_ms && a.node < 2) ++after_kill_ok[a.node];
  }
  CHECK(after_kill_ok[0] > 0);
  CHECK(after_kill_ok[1] > 0);

  // Every session node2 acknowledged and nobody released is still there,
  // with its token, read through a surviving node.
  testing::HttpClient admin(cluster.nodes[0]->port(), kAdminKey);
  admin.set_timeout(std::chrono::seconds(5));
  int checked = 0, missing = 0, unavailable = 0;
  std::vector<std::string> lost;
  for (const Ack& a : r.acks) {
    if (a.node != 2 || a.release_sent) continue;
    ++checked;
    testing::HttpReply got = GetSession(admin, a.session_id, std::chrono::seconds(2), &unavailable);
    const json s = json::parse(got.body, nullptr, false);
    if (got.status != 200 || s.is_discarded() || s.value("token", int64_t{-1}) != a.token ||
        s.value("container_id", "") != a.container_id) {
      ++missing;
      if (lost.size() < 10) lost.push_back(a.session_id + ": " + std::to_string(got.status) + " " + got.body);
    }
  }
  INFO("lost: " << Join(lost));
  CHECK(checked > 0);
  CHECK(missing == 0);
  CHECK(unavailable == 0);
  WARN("node failure: " << TotalClaims(r) << " claims; node2 killed at "
                        << static_cast<int>(kill_ms) << " ms; its clients saw "
                        << r.per_node[2].conn_errors << " connection errors; after the kill node0 "
                        << after_kill_ok[0] << " and node1 " << after_kill_ok[1]
                        << " claims (no_capacity 503s: " << r.per_node[0].codes["no_capacity"]
                        << "/" << r.per_node[1].codes["no_capacity"] << "); " << checked
                        << " sessions node2 acknowledged and kept, all "
                        << (missing == 0 ? "found" : "NOT found") << " on node0");
}

TEST_CASE("multi-node: the database fails over to its synchronous standby and the nodes follow",
          "[postgres][fault]") {
  testing::PgServer::Options primary_options;
  primary_options.extra_conf = {"wal_level = replica", "max_wal_senders = 10",
                                "synchronous_standby_names = 'sb'"};
  testing::PgServer primary(primary_options);
  testing::PgServer::Options standby_options;
  standby_options.extra_conf = {"cluster_name = 'sb'"};
  auto standby = testing::PgServer::StandbyOf(primary, standby_options);
  // The standby is synchronous before the first write (a commit is answered
  // only once the standby has it).
  std::string sync_state;
  for (auto deadline = Clock::now() + std::chrono::seconds(15); Clock::now() < deadline;) {
    sync_state = testing::PgServer::Query(
        primary.uri(), "SELECT sync_state FROM pg_stat_replication WHERE application_name = 'sb'");
    if (sync_state == "sync") break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  REQUIRE(sync_state == "sync");
  const std::string single = primary.NewDatabaseUri();
  const std::string dbname = single.substr(single.rfind('/') + 1);
  // libpq's multi-host form: the first host that takes writes.
  const std::string uri = "postgresql://edgealloc@127.0.0.1:" + std::to_string(primary.port()) +
                          ",127.0.0.1:" + std::to_string(standby.port()) + "/" + dbname +
                          "?target_session_attrs=read-write";
  Cluster cluster(uri, 3, 0);
  RegisterFleet(cluster.nodes[0]->port(), 200);

  StormConfig config;
  config.ports = Ports(cluster);
  config.lease_ms = 600000;  // nothing expires during the test
  config.keep_every = 4;
  config.max_kept = 2;
  config.timeout = std::chrono::seconds(5);  // longer is a hang
  Storm storm(config);
  storm.Start();
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  const double kill_ms = storm.NowMs();
  primary.Kill();
  const double killed_ms = storm.NowMs();
  standby.Promote();
  const double promoted_ms = storm.NowMs();
  // Until every node has acknowledged a claim sent after the promotion (at
  // most 15 s), then a second more of normal service.
  std::vector<double> recovered_ms(cluster.nodes.size(), -1);
  for (auto deadline = Clock::now() + std::chrono::seconds(15); Clock::now() < deadline;) {
    bool all = true;
    {
      Record& r = storm.record();
      std::lock_guard<std::mutex> lock(r.mu);
      for (const Ack& a : r.acks) {
        if (a.sent_ms > promoted_ms &&
            (recovered_ms[a.node] < 0 || a.received_ms < recovered_ms[a.node])) {
          recovered_ms[a.node] = a.received_ms;
        }
      }
      for (double t : recovered_ms) all = all && t >= 0;
    }
    if (all) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  std::this_thread::sleep_for(std::chrono::seconds(1));
  storm.Stop();

  Record& r = storm.record();
  INFO(cluster.Logs());
  INFO("standby's log:\n" << standby.LogTail(2000));
  CheckInvariants(r);
  INFO(Describe(r));
  // Every node serves again, by itself.
  for (size_t i = 0; i < recovered_ms.size(); ++i) {
    INFO("node" << i);
    CHECK(recovered_ms[i] >= 0);
  }

  // The outage as the clients saw it: from the kill to the first claim,
  // sent after the kill, that was acknowledged.
  double last_ok_before = 0, first_ok_after = -1;
  int64_t max_token_before = 0;
  int64_t not_growing = 0, checked_after = 0;
  for (const Ack& a : r.acks) {
    if (a.received_ms < kill_ms) {
      last_ok_before = std::max(last_ok_before, a.received_ms);
      max_token_before = std::max(max_token_before, a.token);
    }
    if (a.sent_ms > kill_ms && (first_ok_after < 0 || a.received_ms < first_ok_after)) {
      first_ok_after = a.received_ms;
    }
  }
  // Tokens only grow: one sequence hands them out, so every claim made on
  // the promoted standby has a token above every one acknowledged before.
  for (const Ack& a : r.acks) {
    if (a.sent_ms > promoted_ms) {
      ++checked_after;
      if (a.token <= max_token_before) ++not_growing;
    }
  }
  CHECK(first_ok_after > 0);
  CHECK(checked_after > 0);
  CHECK(not_growing == 0);

  // Every claim acknowledged before the kill is on the promoted standby, read
  // through a node; every release acknowledged before it is too.
  testing::HttpClient admin(cluster.nodes[1]->port(), kAdminKey);
  admin.set_timeout(std::chrono::seconds(5));
  int kept_checked = 0, kept_lost = 0, released_checked = 0, released_back = 0, unavailable = 0;
  std::vector<std::string> lost;
  for (const Ack& a : r.acks) {
    if (a.received_ms >= kill_ms) continue;
    const bool held = !a.release_sent;
    const bool gone = a.released && a.released_ms < kill_ms;
    if (!held && !gone) continue;  // a release in flight at the kill: either way
    testing::HttpReply got = GetSession(admin, a.session_id, std::chrono::seconds(5), &unavailable);
    const json s = json::parse(got.body, nullptr, false);
    if (held) {
      ++kept_checked;
      if (got.status != 200 || s.is_discarded() || s.value("token", int64_t{-1}) != a.token ||
          s.value("container_id", "") != a.container_id) {
        ++kept_lost;
        if (lost.size() < 10) lost.push_back("held " + a.session_id + ": " + std::to_string(got.status) + " " + got.body);
      }
    } else {
      ++released_checked;
      // Ended, and saying so (410 session_ended) on the new primary too.
      if (got.status != 410) {
        ++released_back;
        if (lost.size() < 10) lost.push_back("released " + a.session_id + ": " + std::to_string(got.status) + " " + got.body);
      }
    }
  }
  INFO(Join(lost));
  // Nodes serve reads again too: a pooled read connection that finds the
  // old primary gone reconnects and reads again, rather than answer 503.
  CHECK(unavailable == 0);
  CHECK(kept_checked > 0);
  CHECK(kept_lost == 0);
  CHECK(released_back == 0);
  // The same on the new primary itself, over libpq.
  const int64_t picked_on_standby = std::stoll(testing::PgServer::Query(
      standby.uri(dbname), "SELECT count(*) FROM containers WHERE status = 'picked'"));
  CHECK(picked_on_standby >= kept_checked);
  // A client whose release was answered 503 tried again (Storm::Release):
  // at most the one in hand when the storm ended is left, a client.
  CHECK(r.releases_unanswered <= config.threads);

  int64_t during = 0, errors = 0;
  for (const auto& c : r.per_node) {
    errors += c.conn_errors;
    for (const auto& [st, n] : c.statuses) {
      if (st == 503) during += n;
    }
  }
  WARN("failover: " << TotalClaims(r) << " claims; primary killed at " << static_cast<int>(kill_ms)
                    << " ms (Kill() took " << static_cast<int>(killed_ms - kill_ms)
                    << " ms, Promote() " << static_cast<int>(promoted_ms - killed_ms)
                    << " ms); last claim acknowledged before the kill at "
                    << static_cast<int>(last_ok_before) << " ms, first after it at "
                    << static_cast<int>(first_ok_after) << " ms: outage "
                    << static_cast<int>(first_ok_after - kill_ms) << " ms from the kill, "
                    << static_cast<int>(first_ok_after - promoted_ms)
                    << " ms after Promote() returned; nodes serving again "
                    << static_cast<int>(recovered_ms[0] - promoted_ms) << "/"
                    << static_cast<int>(recovered_ms[1] - promoted_ms) << "/"
                    << static_cast<int>(recovered_ms[2] - promoted_ms)
                    << " ms after it; 503s " << during << ", connection errors " << errors
                    << ", timeouts 0; " << kept_checked << " held and " << released_checked
                    << " released sessions acknowledged before the kill checked on the standby ("
                    << unavailable << " reads answered 503 first); at the end " << picked_on_standby
                    << " of 200 containers picked, " << r.releases_unanswered
                    << " releases still answered 503");
}

// The fleet's clock is the database's. A node whose wall clock runs 90 s
// ahead (libfaketime) must not end a session another node handed out with
// a 60 s lease (its lease reaper once used its own clock: the session ended
// within 1.5 s and the container went to the next claim while its holder
// still held it), nor find the fleet silent (its dead-container sweep, with
// --dead-after-ms 30000), nor give leases or liveness stamps on its clock.
TEST_CASE("multi-node: a node whose clock runs 90 s ahead ends no session early", "[postgres][fault]") {
  testing::PgServer server;
  const std::string db = server.NewDatabaseUri();
  testing::TempDir dir;
  std::string keys = std::string(kAdminKey) + " admin\n";
  for (const auto& [tenant, key] : kTenants) keys += key + " tenant " + tenant + "\n";
  std::ofstream(dir.File("keys")) << keys;
  Node honest("honest", db, dir.File("keys"), dir.File("honest.log"), 0, "", "30000");
  Node ahead("ahead", db, dir.File("keys"), dir.File("ahead.log"), 0, "+90s", "30000");
  INFO("honest's log:\n" << Tail(honest.log(), 2000) << "\nahead's log:\n" << Tail(ahead.log(), 2000));
  RegisterFleet(honest.port(), 4);  // c-000 .. c-002 in weur, c-003 in eeur
  const auto db_now_ms = [&] {
    return std::stoll(testing::PgServer::Query(
        db, "SELECT floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint"));
  };

  testing::HttpClient tenant(honest.port(), kTenants[0].second);
  testing::HttpReply claimed =
      tenant.Post("/v1/sessions", R"({"region":"weur","pool":"p","lease_ms":60000})");
  REQUIRE(claimed.status == 201);
  const json session = json::parse(claimed.body);
  const std::string id = session["session_id"];
  const std::string held = session["container_id"];
  const int64_t token = session["token"];
  // Its lease ends 60 s after the database's now.
  CHECK(std::llabs(session["lease_expires_at_ms"].get<int64_t>() - (db_now_ms() + 60000)) < 3000);

  // Both nodes' reapers run every 100 ms, the silence sweep about every
  // second: 3 s is many sweeps of the node that is ahead.
  std::this_thread::sleep_for(std::chrono::seconds(3));
  testing::HttpClient via_ahead(ahead.port(), kTenants[0].second);
  testing::HttpReply seen = via_ahead.Get("/v1/sessions/" + id);
  CHECK(seen.status == 200);
  CHECK(tenant.Get("/v1/sessions/" + id).status == 200);
  CHECK(testing::PgServer::Query(db, "SELECT count(*) FROM containers WHERE status = 'dead'") == "0");

  // The node that is ahead hands out every other container, never the held one.
  testing::HttpClient other(ahead.port(), kTenants[1].second);
  std::set<std::string> taken;
  for (int i = 0; i < 4; ++i) {
    testing::HttpReply r = other.Post(
        "/v1/sessions", R"({"region":"weur","pool":"p","fallback_regions":["eeur"],"lease_ms":60000})");
    if (r.status != 201) {
      CHECK(r.ErrorCode() == "no_capacity");
      continue;
    }
    const json s = json::parse(r.body);
    taken.insert(s["container_id"].get<std::string>());
    // Its leases too are the database's now plus the lease.
    CHECK(std::llabs(s["lease_expires_at_ms"].get<int64_t>() - (db_now_ms() + 60000)) < 3000);
  }
  CHECK(taken.size() == 3);
  CHECK(taken.count(held) == 0);

  // A renewal through it runs from the database's now, not 90 s later (a
  // shorter lease, asked for: the node's clock would make it 100 s).
  testing::HttpReply renewed = via_ahead.Post(
      "/v1/sessions/" + id + "/renew",
      json{{"token", token}, {"lease_ms", 10000}, {"shorten", true}}.dump());
  REQUIRE(renewed.status == 200);
  CHECK(std::llabs(json::parse(renewed.body)["lease_expires_at_ms"].get<int64_t>() -
                   (db_now_ms() + 10000)) < 3000);

  // A heartbeat through it is stamped with the database's clock.
  testing::HttpClient admin(ahead.port(), kAdminKey);
  REQUIRE(admin.Post("/v1/heartbeats", R"({"heartbeats":[{"container_id":"c-000"}]})").status == 202);
  for (auto deadline = Clock::now() + std::chrono::seconds(5); Clock::now() < deadline;) {
    if (std::stoll(testing::PgServer::Query(
            db, "SELECT last_heartbeat_ms FROM containers WHERE id = 'c-000'")) > db_now_ms() - 1500) {
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  const int64_t stamp = std::stoll(
      testing::PgServer::Query(db, "SELECT last_heartbeat_ms FROM containers WHERE id = 'c-000'"));
  CHECK(std::llabs(stamp - db_now_ms()) < 3000);

  // It knows its clock is off, and says so.
  const std::string metrics = admin.Get("/metrics").body;
  const std::regex offset_line("edgealloc_db_clock_offset_seconds\\{shard=\"0\"\\} (-?[0-9.e+]+)");
  std::smatch m;
  REQUIRE(std::regex_search(metrics, m, offset_line));
  CHECK(std::stod(m[1].str()) < -85);
  CHECK(std::stod(m[1].str()) > -95);
  CHECK(ahead.log().find("wall clock is") != std::string::npos);
  // The session is still the first holder's, with its token.
  CHECK(tenant.Get("/v1/sessions/" + id).status == 200);
  CHECK(testing::PgServer::Query(db, "SELECT session_id FROM sessions WHERE container_id = '" + held + "'") == id);
}

// A node whose wall clock runs 90 s behind stamps what it accepts on the
// database's clock (its accept time plus its measured offset), so that the
// containers reporting through it never look 90 s silent to the fleet; and
// bounds ts_ms by the database's clock, so it neither refuses an honest
// container's ts_ms as 90 s ahead of its own clock nor takes one far ahead
// of the fleet's.
TEST_CASE("multi-node: a node whose clock runs 90 s behind stamps and bounds on the database's clock",
          "[postgres][fault]") {
  testing::PgServer server;
  const std::string db = server.NewDatabaseUri();
  testing::TempDir dir;
  std::ofstream(dir.File("keys")) << std::string(kAdminKey) + " admin\n";
  Node honest("honest", db, dir.File("keys"), dir.File("honest.log"), 0, "", "30000");
  Node behind("behind", db, dir.File("keys"), dir.File("behind.log"), 0, "-90s", "30000");
  INFO("behind's log:\n" << Tail(behind.log(), 2000));
  RegisterFleet(honest.port(), 1);  // c-000
  const auto db_now_ms = [&] {
    return std::stoll(testing::PgServer::Query(
        db, "SELECT floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint"));
  };
  const auto stamp = [&] {
    return std::stoll(testing::PgServer::Query(
        db, "SELECT last_heartbeat_ms FROM containers WHERE id = 'c-000'"));
  };
  const auto beat = [&](int64_t ts_ms) {
    testing::HttpClient admin(behind.port(), kAdminKey);
    return admin.Post("/v1/heartbeats",
                      json{{"heartbeats", {{{"container_id", "c-000"}, {"ts_ms", ts_ms}}}}}.dump());
  };
  const int64_t registered = stamp();
  std::this_thread::sleep_for(std::chrono::seconds(2));

  // 10 s ahead of the database's clock (100 s ahead of the node's): taken.
  testing::HttpReply r = beat(db_now_ms() + 10000);
  INFO(r.body);
  CHECK(r.status == 202);  // before: 400, the bound on the node's own clock
  // 70 s ahead of the database's clock: refused.
  CHECK(beat(db_now_ms() + 70000).status == 400);
  // Stamped when it was accepted, on the database's clock: not 90 s before.
  int64_t stored = registered;
  for (auto deadline = Clock::now() + std::chrono::seconds(5);
       Clock::now() < deadline && stored <= registered + 1000;) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    stored = stamp();
  }
  CHECK(stored > registered + 1000);
  CHECK(std::llabs(stored - db_now_ms()) < 3000);
}
