// http_load: an HTTP load generator for edgealloc's claim path.
//
// N keep-alive connections run claim -> release cycles (or GET /healthz, the
// HTTP ceiling; POST /v1/heartbeats, the heartbeat ingestion path; GET
// /v1/capacity, the capacity mirror) against a running server, closed loop (each connection sends
// when its last reply is in) or open loop at a fixed offered rate (latency is
// measured from when a request was due, not when it was sent, so queueing is
// not hidden: no coordinated omission). It checks exclusivity as it goes: a
// container handed to two live sessions, or a (container, token) pair seen
// twice, is counted, and either makes the run fail (exit 1).
//
// Prints one line per figure, `name value unit`.

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include <CLI/CLI.hpp>
#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = net::ip::tcp;
using Clock = std::chrono::steady_clock;

namespace {

struct Config {
  std::string host = "127.0.0.1";
  int port = 8080;
  // Several servers (nodes on one database): connection i talks to
  // ports[i % size]; one book of holders and tokens across all of them, so
  // a container handed out by two nodes at once is counted.
  std::vector<int> ports;
  int connections = 64;
  double duration_s = 10;
  double warmup_s = 1;
  double rate = 0;  // 0: closed loop
  std::string mode = "cycle";  // cycle | healthz | heartbeats | capacity
  std::string region = "bench";
  // Cycle mode: connection i claims in regions[i % size] (a load spread over
  // shards); empty: every connection claims in `region`.
  std::vector<std::string> regions;
  std::string pool = "default";
  std::string prefix = "";
  int hold_ms = 0;  // how long a session is held before its release
  int items = 100;  // heartbeats a request (--mode heartbeats)
  int containers = 10000;  // ids <id_prefix>0 .. <id_prefix>(containers-1)
  std::string id_prefix = "hb-";
  std::string key;  // sent as the bearer (a server with a keys file), when set
};

// Everything runs on one io thread, so the shared bookkeeping needs no lock.
struct Shared {
  Config cfg;
  Clock::time_point start, measure_from, stop;
  std::vector<double> claim_ms, cycle_ms;
  uint64_t cycles = 0, claims = 0, no_capacity = 0, errors = 0, double_allocations = 0,
           token_reuse = 0;
  std::unordered_map<std::string, std::string> holder;  // container -> live session
  std::unordered_set<std::string> seen_tokens;          // "container#token"
  uint64_t next_slot = 0;
  std::string first_error;
  // Heartbeats: ids cycle over the fleet so that a batch touches distinct
  // rows (as a real fleet's reports would), and ts_ms is the wall clock at
  // send: it never goes back, so no report is dropped as older than one
  // already taken (equal counts as current), and never runs ahead of the
  // server's clock past --max-clock-skew-ms (a counter did, at 60,000 items).
  uint64_t next_heartbeat = 0;
  uint64_t requests = 0, accepted_items = 0, overloaded_requests = 0, overloaded_items = 0;
};

std::string Field(const std::string& body, const char* name) {
  std::string key = std::string("\"") + name + "\":";
  size_t p = body.find(key);
  if (p == std::string::npos) return {};
  p += key.size();
  while (p < body.size() && body[p] == ' ') ++p;
  if (p < body.size() && body[p] == '"') {
    size_t e = body.find('"', p + 1);
    return body.substr(p + 1, e - p - 1);
  }
  size_t e = body.find_first_of(",}", p);
  return body.substr(p, e - p);
}

class Conn : public std::enable_shared_from_this<Conn> {
 public:
  Conn(net::io_context& io, Shared* sh, tcp::endpoint ep, std::string region)
      : stream_(io), timer_(io), sh_(sh), ep_(ep), region_(std::move(region)) {}

  void Start() {
    stream_.async_connect(ep_, [self = shared_from_this()](beast::error_code ec) {
      if (ec) return self->Fail("connect", ec);
      beast::get_lowest_layer(self->stream_).socket().set_option(tcp::no_delay(true));
      self->Next();
    });
  }

 private:
  void Next() {
    auto now = Clock::now();
    if (now >= sh_->stop) return;
    if (sh_->cfg.rate > 0) {
      // Open loop: take the next due slot; wait for it if it is ahead.
      uint64_t slot = sh_->next_slot++;
      due_ = sh_->start + std::chrono::nanoseconds(static_cast<int64_t>(slot * 1e9 / sh_->cfg.rate));
      if (due_ > now) {
        timer_.expires_at(due_);
        timer_.async_wait([self = shared_from_this()](beast::error_code) { self->Send(); });
        return;
      }
    } else {
      due_ = now;
    }
    Send();
  }

  void Send() {
    if (Clock::now() >= sh_->stop) return;
    req_ = {};
    req_.version(11);
    req_.set(http::field::host, sh_->cfg.host);
    if (!sh_->cfg.key.empty()) req_.set(http::field::authorization, "Bearer " + sh_->cfg.key);
    req_.keep_alive(true);
    if (sh_->cfg.mode == "healthz") {
      req_.method(http::verb::get);
      req_.target("/healthz");
    } else if (sh_->cfg.mode == "capacity") {
      req_.method(http::verb::get);
      req_.target("/v1/capacity");
    } else if (sh_->cfg.mode == "heartbeats") {
      req_.method(http::verb::post);
      req_.target("/v1/heartbeats");
      req_.set(http::field::content_type, "application/json");
      req_.body() = HeartbeatBody();
    } else {
      req_.method(http::verb::post);
      req_.target("/v1/sessions");
      req_.set(http::field::content_type, "application/json");
      req_.body() = "{\"region\":\"" + region_ + "\",\"pool\":\"" + sh_->cfg.pool + "\"}";
    }
    req_.prepare_payload();
    Write([self = shared_from_this()] { self->OnClaim(); });
  }

  std::string HeartbeatBody() {
    const Config& c = sh_->cfg;
    std::string body = "{\"heartbeats\":[";
    body.reserve(c.items * (c.id_prefix.size() + 64));
    const std::string ts = std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(
                                              std::chrono::system_clock::now().time_since_epoch())
                                              .count());
    for (int i = 0; i < c.items; ++i) {
      uint64_t n = sh_->next_heartbeat++;
      if (i) body += ',';
      body += "{\"container_id\":\"" + c.id_prefix + std::to_string(n % c.containers) +
              "\",\"ts_ms\":" + ts +
              ",\"state\":\"ready\"}";
    }
    body += "]}";
    return body;
  }

  template <class F>
  void Write(F next) {
    http::async_write(stream_, req_, [self = shared_from_this(), next](beast::error_code ec, size_t) {
      if (ec) return self->Fail("write", ec);
      self->res_ = {};
      http::async_read(self->stream_, self->buf_, self->res_,
                       [self, next](beast::error_code ec, size_t) {
                         if (ec) return self->Fail("read", ec);
                         next();
                       });
    });
  }

  bool Measuring(Clock::time_point t) const { return t >= sh_->measure_from; }

  void OnClaim() {
    auto now = Clock::now();
    double ms = std::chrono::duration<double, std::milli>(now - due_).count();
    if (sh_->cfg.mode == "heartbeats") return OnHeartbeats(ms);
    if (sh_->cfg.mode == "capacity") {
      if (res_.result_int() != 200) return Fail("capacity status " + std::to_string(res_.result_int()), {});
      if (Measuring(due_)) {
        sh_->claim_ms.push_back(ms);
        ++sh_->requests;
      }
      return Next();
    }
    if (sh_->cfg.mode == "healthz") {
      if (res_.result_int() != 200) return Fail("healthz status", {});
      if (Measuring(due_)) {
        sh_->claim_ms.push_back(ms);
        sh_->cycle_ms.push_back(ms);
        ++sh_->cycles;
      }
      return Next();
    }
    if (res_.result_int() == 503) {
      ++sh_->no_capacity;
      return Next();
    }
    if (res_.result_int() != 201) return Fail("claim status " + std::to_string(res_.result_int()) + " " + res_.body(), {});
    session_ = Field(res_.body(), "session_id");
    container_ = Field(res_.body(), "container_id");
    token_ = Field(res_.body(), "token");
    auto [it, fresh] = sh_->holder.emplace(container_, session_);
    if (!fresh) ++sh_->double_allocations;
    if (!sh_->seen_tokens.insert(container_ + "#" + token_).second) ++sh_->token_reuse;
    if (Measuring(due_)) sh_->claim_ms.push_back(ms);
    ++sh_->claims;
    if (!fresh) return Release();  // counted; do not let the other holder's entry go
    if (sh_->cfg.hold_ms > 0) {
      timer_.expires_after(std::chrono::milliseconds(sh_->cfg.hold_ms));
      timer_.async_wait([self = shared_from_this()](beast::error_code) {
        // Forget the holder before the release is sent: once it is sent, the
        // server may hand the container on.
        self->sh_->holder.erase(self->container_);
        self->Release();
      });
      return;
    }
    sh_->holder.erase(it);
    Release();
  }

  // 503 overloaded is the batcher's back pressure working as specified
  // (nothing of the request was taken), so it is counted apart and is not an
  // error; the connection goes on as a container would, with its next report.
  void OnHeartbeats(double ms) {
    const bool measuring = Measuring(due_);
    const int status = res_.result_int();
    if (status == 503 && res_.body().find("\"overloaded\"") != std::string::npos) {
      if (measuring) {
        ++sh_->overloaded_requests;
        sh_->overloaded_items += sh_->cfg.items;
      }
      return Next();
    }
    if (status != 202) {
      return Fail("heartbeats status " + std::to_string(status) + " " + res_.body(), {});
    }
    // The server's own count, not ours: it says what it took.
    uint64_t accepted = std::strtoull(Field(res_.body(), "accepted").c_str(), nullptr, 10);
    if (accepted != static_cast<uint64_t>(sh_->cfg.items)) {
      return Fail("heartbeats accepted " + std::to_string(accepted) + " of " +
                      std::to_string(sh_->cfg.items),
                  {});
    }
    if (measuring) {
      sh_->claim_ms.push_back(ms);
      ++sh_->requests;
      sh_->accepted_items += accepted;
    }
    Next();
  }

  // A stolen container also shows here: the thief's claim bumped the token,
  // so this release gets 409 stale_token and counts as an error.
  void Release() {
    req_ = {};
    req_.version(11);
    req_.method(http::verb::delete_);
    req_.target("/v1/sessions/" + session_ + "?token=" + token_);
    req_.set(http::field::host, sh_->cfg.host);
    if (!sh_->cfg.key.empty()) req_.set(http::field::authorization, "Bearer " + sh_->cfg.key);
    req_.keep_alive(true);
    req_.prepare_payload();
    Write([self = shared_from_this()] { self->OnRelease(); });
  }

  void OnRelease() {
    if (res_.result_int() != 204) return Fail("release status " + std::to_string(res_.result_int()) + " " + res_.body(), {});
    auto now = Clock::now();
    if (Measuring(due_)) {
      sh_->cycle_ms.push_back(std::chrono::duration<double, std::milli>(now - due_).count());
      ++sh_->cycles;
    }
    Next();
  }

  void Fail(const std::string& what, beast::error_code ec) {
    ++sh_->errors;
    if (sh_->first_error.empty()) sh_->first_error = what + (ec ? ": " + ec.message() : "");
  }

  beast::tcp_stream stream_;
  net::steady_timer timer_;
  Shared* sh_;
  tcp::endpoint ep_;
  std::string region_;
  beast::flat_buffer buf_;
  http::request<http::string_body> req_;
  http::response<http::string_body> res_;
  Clock::time_point due_;
  std::string session_, container_, token_;
};

double Percentile(std::vector<double>& v, double p) {
  if (v.empty()) return 0;
  size_t k = static_cast<size_t>(p * (v.size() - 1));
  std::nth_element(v.begin(), v.begin() + k, v.end());
  return v[k];
}

}  // namespace

int main(int argc, char** argv) {
  Config cfg;
  CLI::App app{
      "edgealloc HTTP load generator: claim/release cycles, /healthz, heartbeats or capacity"};
  app.add_option("--host", cfg.host);
  CLI::Option* port_option = app.add_option("--port", cfg.port);
  app.add_option("--ports", cfg.ports,
                 "comma-separated ports of several servers (nodes sharing one database); "
                 "connection i talks to the (i mod n)-th")
      ->delimiter(',')
      ->excludes(port_option);
  app.add_option("--connections,-c", cfg.connections, "keep-alive connections");
  app.add_option("--duration", cfg.duration_s, "seconds measured");
  app.add_option("--warmup", cfg.warmup_s, "seconds before measuring");
  app.add_option("--rate", cfg.rate,
                 "offered requests a second, open loop (in cycle mode one is a claim with its "
                 "release: the claims a second); 0: closed loop");
  app.add_option("--mode", cfg.mode, "cycle | healthz | heartbeats | capacity")
      ->check(CLI::IsMember({"cycle", "healthz", "heartbeats", "capacity"}));
  app.add_option("--region", cfg.region);
  app.add_option("--regions", cfg.regions,
                 "comma-separated regions; connection i claims in the (i mod n)-th")
      ->delimiter(',');
  app.add_option("--pool", cfg.pool);
  app.add_option("--prefix", cfg.prefix, "prefix of every printed figure name");
  app.add_option("--hold-ms", cfg.hold_ms, "hold each session this long before releasing it");
  app.add_option("--items", cfg.items, "heartbeats a request (--mode heartbeats)")
      ->check(CLI::Range(1, 100000));
  app.add_option("--containers", cfg.containers, "container ids the heartbeats cycle over")
      ->check(CLI::Range(1, 100000000));
  app.add_option("--id-prefix", cfg.id_prefix, "heartbeat container ids are <id-prefix><i>");
  app.add_option("--key", cfg.key, "bearer key of every request (a server with a keys file)");
  CLI11_PARSE(app, argc, argv);
  if (cfg.ports.empty()) {
    if (port_option->count() == 0) {
      std::fprintf(stderr, "http_load: --port or --ports is required\n");
      return 2;
    }
    cfg.ports.push_back(cfg.port);
  }

  net::io_context io(1);
  Shared sh;
  sh.cfg = cfg;
  sh.start = Clock::now();
  sh.measure_from = sh.start + std::chrono::milliseconds(static_cast<int64_t>(cfg.warmup_s * 1000));
  sh.stop = sh.measure_from + std::chrono::milliseconds(static_cast<int64_t>(cfg.duration_s * 1000));
  const net::ip::address host = net::ip::make_address(cfg.host);
  std::vector<std::shared_ptr<Conn>> conns;
  for (int i = 0; i < cfg.connections; ++i) {
    const std::string& region =
        cfg.regions.empty() ? cfg.region : cfg.regions[i % cfg.regions.size()];
    const tcp::endpoint ep(host, static_cast<unsigned short>(cfg.ports[i % cfg.ports.size()]));
    conns.push_back(std::make_shared<Conn>(io, &sh, ep, region));
    conns.back()->Start();
  }
  io.run();

  const std::string& p = cfg.prefix;
  double secs = cfg.duration_s;
  auto ull = [](uint64_t v) { return static_cast<unsigned long long>(v); };
  if (cfg.mode == "heartbeats" || cfg.mode == "capacity") {
    // Requests due inside the window and answered; in open loop, fewer than
    // rate * duration means the offered rate was not met (the generator or
    // the server fell behind), which the latency figures then show.
    std::printf("%srequests_per_s %.0f 1/s\n", p.c_str(), sh.requests / secs);
    if (cfg.mode == "heartbeats") {
      std::printf("%saccepted_items_per_s %.0f 1/s\n", p.c_str(), sh.accepted_items / secs);
      std::printf("%soverloaded_requests %llu count\n", p.c_str(), ull(sh.overloaded_requests));
      std::printf("%soverloaded_items %llu count\n", p.c_str(), ull(sh.overloaded_items));
    }
    std::printf("%srequest_p50_ms %.3f ms\n", p.c_str(), Percentile(sh.claim_ms, 0.50));
    std::printf("%srequest_p99_ms %.3f ms\n", p.c_str(), Percentile(sh.claim_ms, 0.99));
    std::printf("%srequest_p999_ms %.3f ms\n", p.c_str(), Percentile(sh.claim_ms, 0.999));
    std::printf("%serrors %llu count\n", p.c_str(), ull(sh.errors));
    if (!sh.first_error.empty()) std::fprintf(stderr, "first error: %s\n", sh.first_error.c_str());
    return sh.errors ? 1 : 0;
  }
  std::printf("%scycles_per_s %.0f 1/s\n", p.c_str(), sh.cycles / secs);
  std::printf("%sclaim_p50_ms %.3f ms\n", p.c_str(), Percentile(sh.claim_ms, 0.50));
  std::printf("%sclaim_p99_ms %.3f ms\n", p.c_str(), Percentile(sh.claim_ms, 0.99));
  std::printf("%sclaim_p999_ms %.3f ms\n", p.c_str(), Percentile(sh.claim_ms, 0.999));
  std::printf("%scycle_p99_ms %.3f ms\n", p.c_str(), Percentile(sh.cycle_ms, 0.99));
  std::printf("%sno_capacity %llu count\n", p.c_str(), (unsigned long long)sh.no_capacity);
  std::printf("%serrors %llu count\n", p.c_str(), (unsigned long long)sh.errors);
  std::printf("%sdouble_allocations %llu count\n", p.c_str(), (unsigned long long)sh.double_allocations);
  std::printf("%stoken_reuse %llu count\n", p.c_str(), (unsigned long long)sh.token_reuse);
  if (!sh.first_error.empty()) std::fprintf(stderr, "first error: %s\n", sh.first_error.c_str());
  return (sh.double_allocations || sh.token_reuse || sh.errors) ? 1 : 0;
}
