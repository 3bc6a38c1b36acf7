// --warm-buffer (server/config.cc): a count or a percentage, for every pool
// or one, repeated or comma-separated, from a flag, the environment or a
// list in the --config file; refused in words at its line.

#include <catch2/catch.hpp>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "kvmirror/warm_buffer.h"
#include "server/config.h"
#include "tests/server/parsed_command.h"
#include "tests/support/temp_dir.h"

namespace server {
namespace {

using testing::Parsed;
using testing::ParseArgs;

kvmirror::WarmBuffers BuffersOf(const Parsed& p) {
  kvmirror::WarmBuffers buffers;
  std::string error;
  INFO(error);
  REQUIRE(kvmirror::WarmBuffers::Parse(p.cmd.serve.warm_buffer, &buffers, &error));
  return buffers;
}

TEST_CASE("warm buffer flag: repeated or comma-separated, for every pool or one") {
  Parsed p = ParseArgs({"serve", "--warm-buffer", "10%", "--warm-buffer", "weur/chrome=4,gpu=2"});
  INFO(p.err);
  REQUIRE(p.cmd.kind == Command::Kind::kServe);
  const kvmirror::WarmBuffers b = BuffersOf(p);
  CHECK(b.For("eeur", "firefox").ToString() == "10%");
  CHECK(b.For("weur", "chrome").ToString() == "4");
  CHECK(b.For("eeur", "gpu").ToString() == "2");
  // None given: no buffer.
  Parsed none = ParseArgs({"serve"});
  CHECK(none.cmd.serve.warm_buffer.empty());
}

TEST_CASE("warm buffer flag: a wrong value is a usage error that says what a buffer is") {
  Parsed p = ParseArgs({"serve", "--warm-buffer", "weur/chrome=120%"});
  CHECK(p.cmd.kind == Command::Kind::kExit);
  CHECK(p.cmd.exit_code == 2);
  CHECK_THAT(p.err, Catch::Contains("1% to 99%"));
  p = ParseArgs({"serve", "--warm-buffer", "lots"});
  CHECK(p.cmd.exit_code == 2);
  CHECK_THAT(p.err, Catch::Contains("a count of slots (4) or a percentage (10%)"));
}

TEST_CASE("warm buffer flag: the environment, and a list in the config file") {
  testing::TempDir dir;
  const std::string file = dir.File("edgealloc.toml");
  std::ofstream(file) << "[serve]\nwarm-buffer = [\"5\", \"weur/chrome=20%\", 3]\n";
  Parsed p = ParseArgs({"serve", "--config", file.c_str()});
  INFO(p.err);
  REQUIRE(p.cmd.kind == Command::Kind::kServe);
  kvmirror::WarmBuffers b = BuffersOf(p);
  CHECK(b.For("weur", "chrome").ToString() == "20%");
  CHECK(b.For("eeur", "chrome").ToString() == "3");  // the later default wins
  // A bad item is named at its line.
  std::ofstream(file) << "[serve]\n\nwarm-buffer = [\"5\", \"x=\"]\n";
  p = ParseArgs({"serve", "--config", file.c_str()});
  CHECK(p.cmd.exit_code == 2);
  CHECK_THAT(p.err, Catch::Contains(":3: warm-buffer"));
  // The environment, a comma-separated list.
  setenv("EDGEALLOC_WARM_BUFFER", "7,firefox=50%", 1);
  p = ParseArgs({"serve"});
  unsetenv("EDGEALLOC_WARM_BUFFER");
  INFO(p.err);
  REQUIRE(p.cmd.kind == Command::Kind::kServe);
  b = BuffersOf(p);
  CHECK(b.For("weur", "chrome").ToString() == "7");
  CHECK(b.For("weur", "firefox").ToString() == "50%");
}

}  // namespace
}  // namespace server
