#include "server/config.h"

#include <catch2/catch.hpp>

#include <cstdlib>
#include <fstream>
#include <functional>
#include <regex>
#include <sstream>
#include <vector>

#include "base/build_info.h"
#include "store/storage.h"
#include "tests/server/parsed_command.h"
#include "tests/support/temp_dir.h"

namespace server {
namespace {

using testing::ParseArgs;
using testing::Parsed;

TEST_CASE("config: --version prints the version, the commit and the libraries, and exits 0") {
  Parsed p = ParseArgs({"--version"});
  REQUIRE(p.cmd.kind == Command::Kind::kExit);
  CHECK(p.cmd.exit_code == 0);
  CHECK_THAT(p.out, Catch::StartsWith(std::string("edgealloc ") + base::kVersion + " (commit " +
                                      base::kCommit));
  CHECK_THAT(p.out, Catch::Contains("SQLite " + store::SqliteLibraryVersion()) &&
                        Catch::Contains("libpq " + store::LibpqLibraryVersion()));
  CHECK(p.err.empty());
}

// A ServeConfig field as text, so that one table can hold options of every
// type.
template <typename T>
std::function<std::string(const ServeConfig&)> Number(T ServeConfig::*field) {
  return [field](const ServeConfig& s) { return std::to_string(s.*field); };
}

// The serve options of docs/api.md that the two cases below read back: the
// flag, the value the every-flag case gives it (none: a switch), what that
// reads back as, and the default. One row an option, so that the defaults
// and the flags are checked field by field from one list.
struct ServeOption {
  const char* flag;
  const char* given;
  std::string read_given;
  std::string read_default;
  std::function<std::string(const ServeConfig&)> read;
};

const std::vector<ServeOption>& ServeOptions() {
  static const std::vector<ServeOption> options = {
      {"--db", "x.db", "x.db", "edgealloc.db", [](const ServeConfig& s) { return s.db; }},
      {"--listen", "[::1]:9000", "::1 9000", "127.0.0.1 8080",
       [](const ServeConfig& s) { return s.host + " " + std::to_string(s.port); }},
      {"--shards", "4", "4", "1", Number(&ServeConfig::shards)},
      {"--sync", "normal", "normal", "full",
       [](const ServeConfig& s) {
         return std::string(s.sync == store::Sync::kFull ? "full" : "normal");
       }},
      {"--lease-ms", "1000", "1000", "60000", Number(&ServeConfig::default_lease_ms)},
      {"--max-lease-ms", "2000", "2000", "3600000", Number(&ServeConfig::max_lease_ms)},
      {"--dead-after-ms", "500", "500", "30000", Number(&ServeConfig::dead_after_ms)},
      {"--batch-max", "7", "7", "100", Number(&ServeConfig::batch_max)},
      {"--batch-wait-ms", "3", "3", "10", Number(&ServeConfig::batch_wait_ms)},
      {"--queue-capacity", "99", "99", "100000", Number(&ServeConfig::queue_capacity)},
      {"--heartbeat-items-per-key-per-s", "0", "0", "20000",
       Number(&ServeConfig::heartbeat_items_per_key_per_s)},
      {"--mirror-refresh-ms", "50", "50", "1000", Number(&ServeConfig::mirror_refresh_ms)},
      {"--history-interval-ms", "250", "250", "10000", Number(&ServeConfig::history_interval_ms)},
      {"--max-sessions-per-tenant", "2", "2", std::to_string(store::kUnlimited),
       Number(&ServeConfig::max_sessions_per_tenant)},
      {"--max-body-bytes", "4096", "4096", "1048576", Number(&ServeConfig::max_body_bytes)},
      {"--candidates", "9", "9", "5", Number(&ServeConfig::candidates)},
      {"--max-clock-skew-ms", "7000", "7000", "60000", Number(&ServeConfig::max_clock_skew_ms)},
      {"--reader-threads", "6", "6", "4", Number(&ServeConfig::reader_threads)},
      {"--demo", nullptr, "1", "0", Number(&ServeConfig::demo)},
  };
  return options;
}

TEST_CASE("config: serve without options takes the defaults of docs/api.md") {
  Parsed p = ParseArgs({"serve"});
  REQUIRE(p.cmd.kind == Command::Kind::kServe);
  for (const ServeOption& o : ServeOptions()) {
    INFO(o.flag);
    CHECK(o.read(p.cmd.serve) == o.read_default);
  }
  CHECK(p.cmd.serve.threads >= 1);  // the machine's cores less one
}

TEST_CASE("config: every flag of docs/api.md is taken") {
  std::vector<const char*> args = {"serve", "--threads", "3"};
  for (const ServeOption& o : ServeOptions()) {
    args.push_back(o.flag);
    if (o.given != nullptr) args.push_back(o.given);
  }
  Parsed p = ParseArgs(args);
  INFO(p.err);
  REQUIRE(p.cmd.kind == Command::Kind::kServe);
  for (const ServeOption& o : ServeOptions()) {
    INFO(o.flag);
    CHECK(o.read(p.cmd.serve) == o.read_given);
  }
  CHECK(p.cmd.serve.threads == 3);
}

TEST_CASE("config: the environment sets options and a flag overrides it") {
  setenv("EDGEALLOC_SHARDS", "8", 1);
  setenv("EDGEALLOC_DB", "env.db", 1);
  setenv("EDGEALLOC_SYNC", "normal", 1);
  Parsed p = ParseArgs({"serve", "--db", "flag.db"});
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
           {"serve", "--reader-threads", "0"},
           {"serve", "--reader-threads", "257"},
           {"serve", "--candidates", "0"},
           {"serve", "--sync", "sometimes"},
           {"serve", "--lease-ms", "abc"},
           {"serve", "--listen", "nowhere"},
           {"serve", "--lease-ms", "5000", "--max-lease-ms", "1000"},
           {"serve", "--no-such-flag"},
           {}}) {
    Parsed p = ParseArgs(args);
    INFO(p.err);
    CHECK(p.cmd.kind == Command::Kind::kExit);
    CHECK(p.cmd.exit_code == 2);
    CHECK_FALSE(p.err.empty());
  }
  Parsed p = ParseArgs({"serve", "--shards", "0"});
  CHECK(p.err.find("between 1 and 256") != std::string::npos);
}

TEST_CASE("config: without keys the server refuses a non-loopback address, and says how") {
  Parsed p = ParseArgs({"serve", "--listen", "0.0.0.0:8080"});
  CHECK(p.cmd.kind == Command::Kind::kExit);
  CHECK(p.cmd.exit_code == 2);
  CHECK(p.err.find("--keys FILE") != std::string::npos);
  CHECK(ParseArgs({"serve", "--listen", "localhost:1"}).cmd.kind == Command::Kind::kServe);
  CHECK(ParseArgs({"serve", "--listen", "127.1.2.3:1"}).cmd.kind == Command::Kind::kServe);

  testing::TempDir dir;
  std::ofstream(dir.File("keys")) << "k admin\n";
  std::string keys = dir.File("keys");
  Parsed with_keys = ParseArgs({"serve", "--listen", "0.0.0.0:8080", "--keys", keys.c_str()});
  CHECK(with_keys.cmd.kind == Command::Kind::kServe);
  CHECK(with_keys.cmd.serve.keys_file == keys);
}

TEST_CASE("config: --help lists every flag with its default and exits 0") {
  Parsed p = ParseArgs({"serve", "--help"});
  CHECK(p.cmd.kind == Command::Kind::kExit);
  CHECK(p.cmd.exit_code == 0);
  for (const char* flag :
       {"--db", "--listen", "--keys", "--threads", "--shards", "--sync", "--lease-ms",
        "--max-lease-ms", "--dead-after-ms", "--batch-max", "--batch-wait-ms", "--queue-capacity",
        "--mirror-refresh-ms", "--history-interval-ms", "--max-sessions-per-tenant", "--max-body-bytes", "--candidates",
        "--demo", "EDGEALLOC_LISTEN", "1048576", "--max-clock-skew-ms",
        "EDGEALLOC_MAX_CLOCK_SKEW_MS", "--reader-threads", "EDGEALLOC_READER_THREADS",
        "--heartbeat-items-per-key-per-s"}) {
    INFO(flag);
    CHECK(p.out.find(flag) != std::string::npos);
  }
}

TEST_CASE("config: waiting claims are bounded per tenant (1000) and in all (10000), by flag or env") {
  Parsed p = ParseArgs({"serve"});
  REQUIRE(p.cmd.kind == Command::Kind::kServe);
  CHECK(p.cmd.serve.max_claim_waiters_per_tenant == 1000);
  CHECK(p.cmd.serve.max_claim_waiters_total == 10000);
  p = ParseArgs({"serve", "--max-claim-waiters-per-tenant", "5", "--max-claim-waiters-total", "7"});
  REQUIRE(p.cmd.kind == Command::Kind::kServe);
  CHECK(p.cmd.serve.max_claim_waiters_per_tenant == 5);
  CHECK(p.cmd.serve.max_claim_waiters_total == 7);
  p = ParseArgs({"serve", "--max-claim-waiters-total", "-1"});
  CHECK(p.cmd.exit_code == 2);
  p = ParseArgs({"serve", "--help"});
  for (const char* flag : {"--max-claim-waiters-per-tenant", "EDGEALLOC_MAX_CLAIM_WAITERS_PER_TENANT",
                           "--max-claim-waiters-total", "EDGEALLOC_MAX_CLAIM_WAITERS_TOTAL"}) {
    INFO(flag);
    CHECK(p.out.find(flag) != std::string::npos);
  }
}

TEST_CASE("config: register takes a db, shards and a file") {
  Parsed p = ParseArgs({"register", "--db", "a.db", "--shards", "2", "-"});
  REQUIRE(p.cmd.kind == Command::Kind::kRegister);
  CHECK(p.cmd.reg.db == "a.db");
  CHECK(p.cmd.reg.shards == 2);
  CHECK(p.cmd.reg.file == "-");
  CHECK(ParseArgs({"register", "--db", "a.db"}).cmd.exit_code == 2);
}

TEST_CASE("config: agent takes the defaults of docs/agent.md") {
  Parsed p = ParseArgs({"agent", "--id", "weur-1"});
  REQUIRE(p.cmd.kind == Command::Kind::kAgent);
  const AgentConfig& a = p.cmd.agent;
  CHECK(a.id == "weur-1");
  CHECK(a.server == "http://127.0.0.1:8080");
  CHECK(a.interval_ms == 5000);
  CHECK(a.health_timeout_ms == 2000);
  CHECK(a.drain_timeout_ms == 30000);
  CHECK_FALSE(a.register_container);
  CHECK(a.pool == "default");
  CHECK_FALSE(a.latency_ms.has_value());
}

TEST_CASE("config: agent reads its key from EDGEALLOC_KEY and its registration from flags") {
  setenv("EDGEALLOC_KEY", "k-from-env", 1);
  Parsed p = ParseArgs({"agent", "--id", "weur-1", "--register", "--region", "weur", "--pool",
                        "chrome", "--latency-ms", "12", "--data", "{\"endpoint\":\"ws://x\"}"});
  unsetenv("EDGEALLOC_KEY");
  REQUIRE(p.cmd.kind == Command::Kind::kAgent);
  CHECK(p.cmd.agent.key == "k-from-env");
  CHECK(p.cmd.agent.register_container);
  CHECK(p.cmd.agent.region == "weur");
  CHECK(p.cmd.agent.latency_ms == 12);
}

TEST_CASE("config: agent refuses what it could not act on") {
  CHECK(ParseArgs({"agent"}).cmd.exit_code == 2);  // no --id
  for (std::vector<const char*> args : std::vector<std::vector<const char*>>{
           {"agent", "--id", "x", "--register"},
           {"agent", "--id", "x", "--server", "https://x"},
           {"agent", "--id", "x", "--health-url", "x:80"},
           {"agent", "--id", "x", "--health-url", "http://x/", "--health-cmd", "true"},
           {"agent", "--id", "x", "--data", "[1]"},
           {"agent", "--id", "x", "--interval-ms", "0"}}) {
    Parsed p = ParseArgs(args);
    INFO(p.err);
    CHECK(p.cmd.kind == Command::Kind::kExit);
    CHECK(p.cmd.exit_code == 2);
    CHECK_FALSE(p.err.empty());
  }
}

TEST_CASE("config: --max-clock-skew-ms is taken from the flag or EDGEALLOC_MAX_CLOCK_SKEW_MS") {
  CHECK(ParseArgs({"serve", "--max-clock-skew-ms", "5000"}).cmd.serve.max_clock_skew_ms == 5000);
  CHECK(ParseArgs({"serve", "--max-clock-skew-ms", "0"}).cmd.serve.max_clock_skew_ms == 0);
  setenv("EDGEALLOC_MAX_CLOCK_SKEW_MS", "7000", 1);
  CHECK(ParseArgs({"serve"}).cmd.serve.max_clock_skew_ms == 7000);
  CHECK(ParseArgs({"serve", "--max-clock-skew-ms", "9"}).cmd.serve.max_clock_skew_ms == 9);
  unsetenv("EDGEALLOC_MAX_CLOCK_SKEW_MS");
  Parsed p = ParseArgs({"serve", "--max-clock-skew-ms", "-1"});
  CHECK(p.cmd.kind == Command::Kind::kExit);
  CHECK(p.cmd.exit_code == 2);
  CHECK(p.err.find("clock skew") != std::string::npos);
}

// --config FILE (TOML): settings under [serve], named as the long flags.
std::string WriteToml(const testing::TempDir& dir, const std::string& text) {
  const std::string path = dir.File("edgealloc.toml");
  std::ofstream(path) << text;
  return path;
}

TEST_CASE("config: --config takes every setting from a TOML file") {
  testing::TempDir dir;
  const std::string file = WriteToml(dir, R"([serve]
db = "from-file.db"
listen = "127.0.0.1:9100"
batch-max = 50
sync = "normal"
max-sessions-per-tenant = 3
demo = true
)");
  Parsed p = ParseArgs({"serve", "--config", file.c_str()});
  INFO(p.err);
  REQUIRE(p.cmd.kind == Command::Kind::kServe);
  CHECK(p.cmd.serve.db == "from-file.db");
  CHECK(p.cmd.serve.port == 9100);
  CHECK(p.cmd.serve.batch_max == 50);
  CHECK(p.cmd.serve.sync == store::Sync::kNormal);
  CHECK(p.cmd.serve.max_sessions_per_tenant == 3);
  CHECK(p.cmd.serve.demo);
}

TEST_CASE("config: a flag wins over the environment, which wins over --config, then the default") {
  testing::TempDir dir;
  const std::string file =
      WriteToml(dir, "[serve]\ndb = \"file.db\"\nbatch-max = 50\nmax-body-bytes = 4096\n");
  setenv("EDGEALLOC_DB", "env.db", 1);
  setenv("EDGEALLOC_BATCH_MAX", "60", 1);
  setenv("EDGEALLOC_CANDIDATES", "7", 1);
  Parsed p = ParseArgs({"serve", "--config", file.c_str(), "--batch-max", "70"});
  unsetenv("EDGEALLOC_DB");
  unsetenv("EDGEALLOC_BATCH_MAX");
  unsetenv("EDGEALLOC_CANDIDATES");
  INFO(p.err);
  REQUIRE(p.cmd.kind == Command::Kind::kServe);
  CHECK(p.cmd.serve.batch_max == 70);           // flag over environment and file
  CHECK(p.cmd.serve.db == "env.db");            // environment over file
  CHECK(p.cmd.serve.max_body_bytes == 4096);    // file over default
  CHECK(p.cmd.serve.candidates == 7);           // environment over default
  CHECK(p.cmd.serve.queue_capacity == 100000);  // default
}

TEST_CASE("config: a file that is not TOML is refused naming its line, an unknown key the nearest") {
  testing::TempDir dir;
  // CLI11's INI-like reader took this unquoted value; TOML does not.
  const std::string unquoted = WriteToml(dir, "[serve]\n\nlisten = 127.0.0.1:18483\n");
  Parsed p = ParseArgs({"serve", "--config", unquoted.c_str()});
  CHECK(p.cmd.exit_code == 2);
  CHECK_THAT(p.err, Catch::Contains(unquoted + ":3:") && Catch::Contains("not TOML") &&
                        Catch::Contains("quoted"));
  const std::string typo = WriteToml(dir, "[serve]\ndb = \"x.db\"\nlisten = \"127.0.0.1:1\"\nlese-ms = 5\n");
  p = ParseArgs({"serve", "--config", typo.c_str()});
  CHECK(p.cmd.exit_code == 2);
  CHECK_THAT(p.err, Catch::Contains(typo + ":4: lese-ms") && Catch::Contains("did you mean lease-ms?"));
  const std::string list = WriteToml(dir, "[serve]\nshards = [1, 2]\n");
  p = ParseArgs({"serve", "--config", list.c_str()});
  CHECK(p.cmd.exit_code == 2);
  CHECK_THAT(p.err, Catch::Contains(list + ":2: shards"));
}

TEST_CASE("config: what a file gets wrong is named at its line, once, whatever it is") {
  testing::TempDir dir;
  // A key above [serve] would be read by nobody.
  const std::string above = WriteToml(dir, "db = \"lost.db\"\n[serve]\nbatch-max = 40\n");
  Parsed p = ParseArgs({"serve", "--config", above.c_str()});
  CHECK(p.cmd.exit_code == 2);
  CHECK_THAT(p.err, Catch::Contains(above + ":1: db is outside [serve]"));
  // A value a flag's own check refuses (a set of names, a range) names its line.
  const std::string format = WriteToml(dir, "[serve]\n\nlog-format = \"yaml\"\n");
  p = ParseArgs({"serve", "--config", format.c_str()});
  CHECK(p.cmd.exit_code == 2);
  CHECK_THAT(p.err, Catch::Contains(format + ":3: log-format = yaml"));
  const std::string range = WriteToml(dir, "[serve]\nbatch-max = 0\n");
  p = ParseArgs({"serve", "--config", range.c_str()});
  CHECK(p.cmd.exit_code == 2);
  CHECK_THAT(p.err, Catch::Contains(range + ":2: batch-max = 0"));
  // A wrong section: the hint is given once.
  const std::string section = WriteToml(dir, "[server]\ndb = \"x.db\"\n");
  p = ParseArgs({"serve", "--config", section.c_str()});
  CHECK(p.cmd.exit_code == 2);
  CHECK_THAT(p.err, Catch::Contains("[server] is not a section edgealloc reads"));
  const std::string hint = "settings go under [serve]";
  CHECK(p.err.find(hint) != std::string::npos);
  CHECK(p.err.find(hint) == p.err.rfind(hint));
  // A missing file named by the environment is named as the environment's.
  setenv("EDGEALLOC_CONFIG", dir.File("gone.toml").c_str(), 1);
  p = ParseArgs({"serve"});
  unsetenv("EDGEALLOC_CONFIG");
  CHECK(p.cmd.exit_code == 2);
  CHECK_THAT(p.err, Catch::Contains("EDGEALLOC_CONFIG=" + dir.File("gone.toml")) &&
                        !Catch::Contains("--config"));
}

TEST_CASE("config: a mistyped flag is a usage error that names the flag it was near") {
  Parsed p = ParseArgs({"serve", "--lisen", "127.0.0.1:1"});
  CHECK(p.cmd.exit_code == 2);
  CHECK_THAT(p.err, Catch::Contains("did you mean --listen"));
  p = ParseArgs({"serve", "--max-lease=5"});
  CHECK(p.cmd.exit_code == 2);
  CHECK_THAT(p.err, Catch::Contains("did you mean --max-lease-ms"));
  p = ParseArgs({"serve", "--zzzzzzzz"});
  CHECK(p.cmd.exit_code == 2);
  CHECK_THAT(p.err, !Catch::Contains("did you mean"));  // nothing near: no guess
  // A mistyped subcommand is named too, and a missing one listed.
  p = ParseArgs({"session", "list"});
  CHECK(p.cmd.exit_code == 2);
  CHECK_THAT(p.err, Catch::Contains("did you mean edgealloc sessions?"));
  p = ParseArgs({"sessions"});
  CHECK(p.cmd.exit_code == 2);
  CHECK_THAT(p.err, Catch::Contains("edgealloc sessions takes one of: claim, get, renew, release, list"));
}

TEST_CASE("config: serve --help shows --config and its variable") {
  Parsed p = ParseArgs({"serve", "--help"});
  CHECK(p.cmd.exit_code == 0);
  CHECK_THAT(p.out, Catch::Contains("--config FILE") && Catch::Contains("EDGEALLOC_CONFIG"));
}

TEST_CASE("config: an unknown key or a missing --config file is a usage error that says so") {
  testing::TempDir dir;
  const std::string file = WriteToml(dir, "[serve]\ndb = \"x.db\"\nbatch-maxx = 5\n");
  Parsed p = ParseArgs({"serve", "--config", file.c_str()});
  CHECK(p.cmd.kind == Command::Kind::kExit);
  CHECK(p.cmd.exit_code == 2);
  CHECK_THAT(p.err, Catch::Contains("--config") && Catch::Contains("batch-maxx"));
  p = ParseArgs({"serve", "--config", dir.File("missing.toml").c_str()});
  CHECK(p.cmd.exit_code == 2);
  CHECK_THAT(p.err, Catch::Contains("--config") && Catch::Contains("missing.toml"));
  // A value out of range in the file is refused as the flag's would be.
  const std::string bad = WriteToml(dir, "[serve]\nshards = 0\n");
  p = ParseArgs({"serve", "--config", bad.c_str()});
  CHECK(p.cmd.exit_code == 2);
}

TEST_CASE("config: EDGEALLOC_CONFIG names the file when --config does not, and must exist") {
  testing::TempDir dir;
  const std::string file = WriteToml(dir, "[serve]\ndb = \"env-file.db\"\nbatch-max = 40\n");
  const std::string other = dir.File("other.toml");
  std::ofstream(other) << "[serve]\ndb = \"flag-file.db\"\n";
  setenv("EDGEALLOC_CONFIG", file.c_str(), 1);
  Parsed from_env = ParseArgs({"serve"});
  Parsed flag_wins = ParseArgs({"serve", "--config", other.c_str()});
  setenv("EDGEALLOC_CONFIG", dir.File("missing.toml").c_str(), 1);
  Parsed missing = ParseArgs({"serve"});
  unsetenv("EDGEALLOC_CONFIG");
  INFO(from_env.err);
  REQUIRE(from_env.cmd.kind == Command::Kind::kServe);
  CHECK(from_env.cmd.serve.db == "env-file.db");
  CHECK(from_env.cmd.serve.batch_max == 40);
  REQUIRE(flag_wins.cmd.kind == Command::Kind::kServe);
  CHECK(flag_wins.cmd.serve.db == "flag-file.db");
  CHECK(flag_wins.cmd.serve.batch_max == 100);  // the default: the env's file was not read
  CHECK(missing.cmd.kind == Command::Kind::kExit);
  CHECK(missing.cmd.exit_code == 2);
  CHECK_THAT(missing.err, Catch::Contains("missing.toml"));
}

// packaging/edgealloc.toml names every serve option, commented out at its
// default: it stays in step with the flags.
TEST_CASE("config: packaging/edgealloc.toml names every serve flag and holds the defaults") {
  std::ifstream in(EDGEALLOC_EXAMPLE_CONFIG);
  REQUIRE(in);
  std::stringstream text;
  text << in.rdbuf();
  const std::string toml = "\n" + text.str();
  Parsed help = ParseArgs({"serve", "--help"});
  REQUIRE(help.cmd.exit_code == 0);
  std::regex flag(R"(\n  --([a-z][a-z-]*))");
  int flags = 0;
  for (std::sregex_iterator it(help.out.begin(), help.out.end(), flag), end; it != end; ++it) {
    const std::string name = (*it)[1];
    if (name == "config") continue;  // the file does not name itself
    INFO(name);
    // Commented out, at its default: a copied file changes nothing until a
    // line is uncommented, and never hides an EDGEALLOC_* variable.
    CHECK(toml.find("\n# " + name + " = ") != std::string::npos);
    CHECK(toml.find("\n" + name + " = ") == std::string::npos);
    ++flags;
  }
  CHECK(flags >= 15);  // the regex found the flags (19 today)
  // Uncommented, its values are the defaults (but for keys, whose example
  // names a file this machine lacks, and threads, which the cores decide).
  testing::TempDir dir;
  std::string uncommented;
  const std::regex setting(R"(^# ([a-z][a-z-]*) = )");
  std::istringstream lines(text.str());
  for (std::string line; std::getline(lines, line);) {
    std::smatch m;
    if (std::regex_search(line, m, setting) && m[1] != "keys" && m[1] != "threads") {
      line = line.substr(2);
    }
    uncommented += line + "\n";
  }
  const std::string example = WriteToml(dir, uncommented);
  Parsed with = ParseArgs({"serve", "--config", example.c_str()});
  Parsed without = ParseArgs({"serve"});
  INFO(with.err);
  REQUIRE(with.cmd.kind == Command::Kind::kServe);
  const ServeConfig& a = with.cmd.serve;
  const ServeConfig& b = without.cmd.serve;
  CHECK(a.db == b.db);
  CHECK(a.listen == b.listen);
  CHECK(a.shards == b.shards);
  CHECK(a.pg_writers == b.pg_writers);
  CHECK(a.sync == b.sync);
  CHECK(a.default_lease_ms == b.default_lease_ms);
  CHECK(a.max_lease_ms == b.max_lease_ms);
  CHECK(a.dead_after_ms == b.dead_after_ms);
  CHECK(a.batch_max == b.batch_max);
  CHECK(a.batch_wait_ms == b.batch_wait_ms);
  CHECK(a.queue_capacity == b.queue_capacity);
  CHECK(a.heartbeat_items_per_key_per_s == b.heartbeat_items_per_key_per_s);
  CHECK(a.mirror_refresh_ms == b.mirror_refresh_ms);
  CHECK(a.history_interval_ms == b.history_interval_ms);
  CHECK(a.max_sessions_per_tenant == b.max_sessions_per_tenant);
  CHECK(a.max_body_bytes == b.max_body_bytes);
  CHECK(a.candidates == b.candidates);
  CHECK(a.max_clock_skew_ms == b.max_clock_skew_ms);
  CHECK(a.demo == b.demo);
  CHECK(a.log.level == b.log.level);
  CHECK(a.log.format == b.log.format);
  CHECK(a.log.access_log == b.log.access_log);
}

TEST_CASE("config: --log-level, --log-format and --access-log, and their refusals") {
  Parsed p = ParseArgs({"serve"});
  CHECK(p.cmd.serve.log.level == LogLevel::kInfo);
  CHECK(p.cmd.serve.log.format == LogFormat::kText);
  CHECK_FALSE(p.cmd.serve.log.access_log);
  p = ParseArgs({"serve", "--log-level", "warn", "--log-format", "json", "--access-log"});
  REQUIRE(p.cmd.kind == Command::Kind::kServe);
  CHECK(p.cmd.serve.log.level == LogLevel::kWarn);
  CHECK(p.cmd.serve.log.format == LogFormat::kJson);
  CHECK(p.cmd.serve.log.access_log);
  CHECK(ParseArgs({"serve", "--log-level", "loud"}).cmd.exit_code == 2);
  CHECK(ParseArgs({"serve", "--log-format", "xml"}).cmd.exit_code == 2);
}

}  // namespace
}  // namespace server
