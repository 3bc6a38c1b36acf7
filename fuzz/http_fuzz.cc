// The HTTP edge end to end, without sockets: raw bytes are parsed by Beast
// with the limits of a server connection (server/http/connection.cc), and each
// request read is answered by a real Service (routes, auth, allocator,
// batcher, mirror) over a temp-file store with a keys file, through
// Service::Handle. Several requests may follow one another in one input, as
// on a keep-alive connection. Beyond crashes, leaks and UB it fails on: a
// request left unanswered, an exception escaping a handler (the server would
// turn it into a 500), a 500, and a JSON reply that is not JSON.
//
// The Service is built once (LLVMFuzzerInitialize) and keeps its database
// between inputs, so later inputs see what earlier ones claimed and
// registered: a crash may need the inputs before it to reproduce.
#include <boost/asio/buffer.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include <nlohmann/json.hpp>

#include <stdlib.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "fuzz/fuzz_check.h"
#include "server/config.h"
#include "server/http/server.h"
#include "server/http/message.h"
#include "server/service.h"

namespace {

namespace beast = boost::beast;
namespace http = boost::beast::http;
namespace net = boost::asio;

// Requests one input may carry, as on one keep-alive connection.
constexpr int kMaxRequestsPerInput = 8;
// A reply slower than this is taken as never coming (the Reply contract).
constexpr std::chrono::seconds kReplyTimeout{20};
// The keys of keys file the corpus uses (fuzz/corpus/http/).
constexpr char kKeysFile[] =
    "# fuzz/http_fuzz.cc\n"
    "k-admin admin\n"
    "k-acme tenant acme\n"
    "k-other tenant other\n"
    "k-box container\n";
constexpr char kFleet[] =
    R"({"containers":[{"id":"c-0","region":"weur","pool":"chrome"},)"
    R"({"id":"c-1","region":"weur","pool":"chrome","data":{"ws":"ws://c-1"}},)"
    R"({"id":"c-2","region":"eeur","pool":"firefox","latency_ms":5},)"
    R"({"id":"c-3","region":"eeur"}]})";

server::Service* g_service = nullptr;
int64_t g_max_body_bytes = 0;
std::string g_dir;

struct Pending {
  std::mutex mu;
  std::condition_variable cv;
  std::optional<server::Response> response;
};

// Runs `req` through the service and waits for its one reply.
server::Response Answer(server::Request req) {
  auto pending = std::make_shared<Pending>();
  // Held by the Reply too: a late reply after a timeout touches no dead stack.
  g_service->Handle(std::move(req), [pending](server::Response res) {
    std::lock_guard<std::mutex> lock(pending->mu);
    if (!pending->response) pending->response = std::move(res);
    pending->cv.notify_all();
  });
  std::unique_lock<std::mutex> lock(pending->mu);
  bool answered = pending->cv.wait_for(lock, kReplyTimeout, [&] {
    return pending->response.has_value();
  });
  FUZZ_CHECK(answered, "a request was never answered");
  return std::move(*pending->response);
}

void CheckResponse(const server::Response& res) {
  const unsigned status = res.result_int();
  FUZZ_CHECK(status >= 100 && status <= 599, "status code");
  FUZZ_CHECK(status != 500, res.body().c_str());
  if (res[http::field::content_type].starts_with("application/json")) {
    auto j = nlohmann::json::parse(res.body(), nullptr, /*allow_exceptions=*/false);
    FUZZ_CHECK(!j.is_discarded(), "a JSON reply is JSON");
  }
}

void StopService() {
  if (!g_service) return;
  g_service->Stop(std::chrono::milliseconds(1000));
  std::error_code ignored;
  std::filesystem::remove_all(g_dir, ignored);
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  char dir[] = "/tmp/edgealloc-fuzz-XXXXXX";
  FUZZ_CHECK(mkdtemp(dir) != nullptr, "mkdtemp");
  g_dir = dir;
  std::ofstream(g_dir + "/keys.txt") << kKeysFile;

  server::ServeConfig config;
  config.db = g_dir + "/fuzz.db";
  config.keys_file = g_dir + "/keys.txt";
  config.host = "127.0.0.1";
  config.port = 0;  // bound but never connected to: requests come through Handle
  config.threads = 1;
  config.sync = store::Sync::kNormal;  // durability is not under test here
  g_max_body_bytes = config.max_body_bytes;
  // Reachable from a global for good, so LeakSanitizer does not count it.
  g_service = new server::Service(config);
  store::Status s = g_service->Start();
  FUZZ_CHECK(s.ok(), s.ToString().c_str());
  std::atexit(StopService);

  server::Request reg{http::verb::post, "/v1/containers", 11};
  reg.set(http::field::authorization, "Bearer k-admin");
  reg.set(http::field::content_type, "application/json");
  reg.body() = kFleet;
  reg.prepare_payload();
  server::Response res = Answer(std::move(reg));
  FUZZ_CHECK(res.result_int() == 200 || res.result_int() == 201, res.body().c_str());
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const char* bytes = reinterpret_cast<const char*>(data);
  size_t pos = 0;
  for (int n = 0; n < kMaxRequestsPerInput && pos < size; ++n) {
    // As Connection::DoRead sets it up.
    http::request_parser<http::string_body> parser;
    parser.header_limit(server::HttpServer::kHeaderLimitBytes);
    parser.body_limit(static_cast<uint64_t>(g_max_body_bytes));
    parser.eager(true);
    beast::error_code ec;
    // Offer everything left, as a socket that has it all would; once the
    // parser wants more than there is, the client has closed.
    for (;;) {
      if (pos == size) {
        parser.put_eof(ec);
        break;
      }
      size_t used = parser.put(net::buffer(bytes + pos, size - pos), ec);
      pos += used;
      if (ec == http::error::need_more) ec = {};
      if (ec || parser.is_done()) break;
      if (used == 0) {
        parser.put_eof(ec);
        break;
      }
    }
    // The server answers a read error itself (400, 413, 431) and closes, and
    // refuses a Content-Length over the limit before reading the body: none
    // of it reaches the routes.
    if (ec || !parser.is_done()) return 0;
    server::Request req = parser.release();
    const bool keep_alive = req.keep_alive();
    server::Response res = Answer(std::move(req));
    CheckResponse(res);
    res.prepare_payload();  // as Connection::DoWrite does
    if (!keep_alive) return 0;
  }
  return 0;
}
