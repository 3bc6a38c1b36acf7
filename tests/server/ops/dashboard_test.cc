#include "server/ops/dashboard.h"

#include <catch2/catch.hpp>

#include <fstream>
#include <iterator>
#include <string>

namespace server {
namespace {

TEST_CASE("dashboard: the embedded page is the source file byte for byte") {
  std::ifstream in(EDGEALLOC_DASHBOARD_SOURCE, std::ios::binary);
  REQUIRE(in);
  std::string file((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  CHECK(DashboardHtml().size() == file.size());
  CHECK(DashboardHtml() == file);
  CHECK(DashboardHtml().rfind("<!DOCTYPE html>", 0) == 0);
}

}  // namespace
}  // namespace server
