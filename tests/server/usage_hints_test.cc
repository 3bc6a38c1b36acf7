#include "server/usage_hints.h"

#include <catch2/catch.hpp>

namespace {

using server::NearestWord;
using server::SubcommandHint;

TEST_CASE("usage hints: the nearest word is a typo's, and nothing far is guessed") {
  const std::vector<std::string> known = {"sessions", "containers", "serve"};
  CHECK(NearestWord("session", known) == "sessions");
  CHECK(NearestWord("contaners", known) == "containers");
  CHECK(NearestWord("serv", known) == "serve");
  CHECK(NearestWord("zzzzzz", known).empty());
}

TEST_CASE("usage hints: a missing subcommand is named from the word typed, or listed") {
  CLI::App app{"test"};
  app.name("edgealloc");
  CLI::App* sessions = app.add_subcommand("sessions", "");
  sessions->add_subcommand("claim", "");
  sessions->add_subcommand("list", "");
  app.add_subcommand("serve", "");
  CHECK(SubcommandHint(&app, {"session", "list"}) == "edgealloc: did you mean edgealloc sessions?\n");
  CHECK(SubcommandHint(&app, {"sessions", "--key", "k", "lst"}) ==
        "edgealloc: did you mean edgealloc sessions list?\n");
  CHECK(SubcommandHint(&app, {"sessions"}) ==
        "edgealloc: edgealloc sessions takes one of: claim, list\n");
  CHECK(SubcommandHint(&app, {}) == "edgealloc: edgealloc takes one of: sessions, serve\n");
  // Nothing near: the subcommands there are.
  CHECK(SubcommandHint(&app, {"qqqqqqqq"}) == "edgealloc: edgealloc takes one of: sessions, serve\n");
}

}  // namespace
