#include "server/config.h"

#include <catch2/catch.hpp>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <vector>

#include "base/build_info.h"
#include "store/storage.h"
#include "tests/support/temp_dir.h"

namespace server {
namespace {

struct Parsed {
  Command cmd;
  std::string out, err;
};

Parsed Parse(std::vector<const char*> args) {
  args.insert(args.begin(), "edgealloc");
  std::ostringstream out, err;
  Parsed p;
  p.cmd = ParseCommandLine(static_cast<int>(args.size()), args.data(), out, err);
  p.out = out.str();
  p.err = err.str();
  return p;
}

TEST_CASE("config: --version prints the version, the commit and the libraries, and exits 0") {
  Parsed p = Parse({"--version"});
  REQUIRE(p.cmd.kind == Command::Kind::kExit);
  CHECK(p.cmd.exit_code == 0);
  CHECK_THAT(p.out, Catch::StartsWith(std::string("edgealloc ") + base::kVersion + " (commit " +
                                      base::kCommit));
  CHECK_THAT(p.out, Catch::Contains("SQLite " + store::SqliteLibraryVersion()) &&
                        Catch::Contains("libpq " + store::LibpqLibraryVersion()));
  CHECK(p.err.empty());
}

TEST_CASE("config: serve without options takes the defaults of API.md") {
  Parsed p = Parse({"serve"});
  REQUIRE(p.cmd.kind == Command::Kind::kServe);
  const ServeConfig& s = p.cmd.serve;
  CHECK(s.db == "edgealloc.db");
  CHECK(s.host == "127.0.0.1");
  CHECK(s.port == 8080);
  CHECK(s.threads >= 1);
  CHECK(s.shards == 1);
  CHECK(s.sync == store::Sync::kFull);
  CHECK(s.default_lease_ms == 60000);
  CHECK(s.max_lease_ms == 3600000);
  CHECK(s.dead_after_ms == 30000);
  CHECK(s.batch_max == 100);
  CHECK(s.batch_wait_ms == 10);
  CHECK(s.queue_capacity == 100000);
  CHECK(s.mirror_refresh_ms == 1000);
  CHECK(s.max_sessions_per_tenant == store::kUnlimited);
  CHECK(s.max_body_bytes == 1048576);
  CHECK(s.candidates == 5);
  CHECK(s.max_clock_skew_ms == 60000);
  CHECK_FALSE(s.demo);
}

TEST_CASE("config: every flag of API.md is taken") {
  Parsed p = Parse({"serve", "--db", "x.db", "--listen", "[::1]:9000", "--threads", "3",
                    "--shards", "4", "--sync", "normal", "--lease-ms", "1000", "--max-lease-ms",
                    "2000", "--dead-after-ms", "500", "--batch-max", "7", "--batch-wait-ms", "3",
                    "--queue-capacity", "99", "--mirror-refresh-ms", "50",
                    "--max-sessions-per-tenant", "2", "--max-body-bytes", "4096",
                    "--candidates", "9", "--demo"});
  REQUIRE(p.cmd.kind == Command::Kind::kServe);
  const ServeConfig& s = p.cmd.serve;
  CHECK(s.db == "x.db");
  CHECK(s.host == "::1");
  CHECK(s.port == 9000);
  CHECK(s.threads == 3);
  CHECK(s.shards == 4);
  CHECK(s.sync == store::Sync::kNormal);
  CHECK(s.default_lease_ms == 1000);
  CHECK(s.max_lease_ms == 2000);
  CHECK(s.dead_after_ms == 500);
  CHECK(s.batch_max == 7);
  CHECK(s.batch_wait_ms == 3);
  CHECK(s.queue_capacity == 99);
  CHECK(s.mirror_refresh_ms == 50);
  CHECK(s.max_sessions_per_tenant == 2);
  CHECK(s.max_body_bytes == 4096);
  CHECK(s.candidates == 9);
  CHECK(s.demo);
}

TEST_CASE("config: the environment sets options and a flag overrides it") {
  setenv("EDGEALLOC_SHARDS", "8", 1);
  setenv("EDGEALLOC_DB", "env.db", 1);
  setenv("EDGEALLOC_SYNC", "normal", 1);
  Parsed p = Parse({"serve", "--db", "flag.db"});
  unsetenv("EDGEALLOC_SHARDS");
  unsetenv("EDGEALLOC_DB");
  unsetenv("EDGEALLOC_SYNC");
  REQUIRE(p.cmd.kind == Command::Kind::kServe);
  CHECK(p.cmd.serve.shards == 8);
  CHECK(p.cmd.serve.sync == store::Sync::kNormal);
  CHECK(p.cmd.serve.db == "flag.db");
}

TEST_CASE("config: values out of range are usage errors that say what the flag is for") {
  for (std::vector<const char*> args : std::vector<std::vector<const char*>>{
           {"serve", "--shards", "0"},
           {"serve", "--shards", "257"},
           {"serve", "--threads", "0"},
           {"serve", "--candidates", "0"},
           {"serve", "--sync", "sometimes"},
           {"serve", "--lease-ms", "abc"},
           {"serve", "--listen", "nowhere"},
           {"serve", "--lease-ms", "5000", "--max-lease-ms", "1000"},
           {"serve", "--no-such-flag"},
           {}}) {
    Parsed p = Parse(args);
    INFO(p.err);
    CHECK(p.cmd.kind == Command::Kind::kExit);
    CHECK(p.cmd.exit_code == 2);
    CHECK_FALSE(p.err.empty());
  }
  Parsed p = Parse({"serve", "--shards", "0"});
  CHECK(p.err.find("between 1 and 256") != std::string::npos);
}

TEST_CASE("config: without keys the server refuses a non-loopback address, and says how") {
  Parsed p = Parse({"serve", "--listen", "0.0.0.0:8080"});
  CHECK(p.cmd.kind == Command::Kind::kExit);
  CHECK(p.cmd.exit_code == 2);
  CHECK(p.err.find("--keys FILE") != std::string::npos);
  CHECK(Parse({"serve", "--listen", "localhost:1"}).cmd.kind == Command::Kind::kServe);
  CHECK(Parse({"serve", "--listen", "127.1.2.3:1"}).cmd.kind == Command::Kind::kServe);

  testing::TempDir dir;
  std::ofstream(dir.File("keys")) << "k admin\n";
  std::string keys = dir.File("keys");
  Parsed with_keys = Parse({"serve", "--listen", "0.0.0.0:8080", "--keys", keys.c_str()});
  CHECK(with_keys.cmd.kind == Command::Kind::kServe);
  CHECK(with_keys.cmd.serve.keys_file == keys);
}

TEST_CASE("config: --help lists every flag with its default and exits 0") {
  Parsed p = Parse({"serve", "--help"});
  CHECK(p.cmd.kind == Command::Kind::kExit);
  CHECK(p.cmd.exit_code == 0);
  for (const char* flag :
       {"--db", "--listen", "--keys", "--threads", "--shards", "--sync", "--lease-ms",
        "--max-lease-ms", "--dead-after-ms", "--batch-max", "--batch-wait-ms", "--queue-capacity",
        "--mirror-refresh-ms", "--max-sessions-per-tenant", "--max-body-bytes", "--candidates",
        "--demo", "EDGEALLOC_LISTEN", "1048576", "--max-clock-skew-ms",
        "EDGEALLOC_MAX_CLOCK_SKEW_MS"}) {
    INFO(flag);
    CHECK(p.out.find(flag) != std::string::npos);
  }
}

TEST_CASE("config: register takes a db, shards and a file") {
  Parsed p = Parse({"register", "--db", "a.db", "--shards", "2", "-"});
  REQUIRE(p.cmd.kind == Command::Kind::kRegister);
  CHECK(p.cmd.reg.db == "a.db");
  CHECK(p.cmd.reg.shards == 2);
  CHECK(p.cmd.reg.file == "-");
  CHECK(Parse({"register", "--db", "a.db"}).cmd.exit_code == 2);
}

TEST_CASE("config: loopback means localhost, 127.0.0.0/8 and ::1") {
  CHECK(IsLoopbackHost("localhost"));
  CHECK(IsLoopbackHost("127.0.0.1"));
  CHECK(IsLoopbackHost("127.255.0.9"));
  CHECK(IsLoopbackHost("::1"));
  CHECK_FALSE(IsLoopbackHost("0.0.0.0"));
  CHECK_FALSE(IsLoopbackHost("::"));
  CHECK_FALSE(IsLoopbackHost("10.0.0.1"));
  CHECK_FALSE(IsLoopbackHost("example.com"));
  std::string host, error;
  uint16_t port = 0;
  CHECK(SplitHostPort("[::1]:80", &host, &port, &error));
  CHECK(host == "::1");
  CHECK(port == 80);
  CHECK_FALSE(SplitHostPort("::1:80", &host, &port, &error));
  CHECK_FALSE(SplitHostPort("h:70000", &host, &port, &error));
  CHECK_FALSE(SplitHostPort(":80", &host, &port, &error));
}

TEST_CASE("config: --max-clock-skew-ms is taken from the flag or EDGEALLOC_MAX_CLOCK_SKEW_MS") {
  CHECK(Parse({"serve", "--max-clock-skew-ms", "5000"}).cmd.serve.max_clock_skew_ms == 5000);
  CHECK(Parse({"serve", "--max-clock-skew-ms", "0"}).cmd.serve.max_clock_skew_ms == 0);
  setenv("EDGEALLOC_MAX_CLOCK_SKEW_MS", "7000", 1);
  CHECK(Parse({"serve"}).cmd.serve.max_clock_skew_ms == 7000);
  CHECK(Parse({"serve", "--max-clock-skew-ms", "9"}).cmd.serve.max_clock_skew_ms == 9);
  unsetenv("EDGEALLOC_MAX_CLOCK_SKEW_MS");
  Parsed p = Parse({"serve", "--max-clock-skew-ms", "-1"});
  CHECK(p.cmd.kind == Command::Kind::kExit);
  CHECK(p.cmd.exit_code == 2);
  CHECK(p.err.find("clock skew") != std::string::npos);
}

}  // namespace
}  // namespace server
