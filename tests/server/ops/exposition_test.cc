#include "server/ops/exposition.h"

#include <catch2/catch.hpp>

#include <cstdint>
#include <limits>
#include <string>

namespace server {
namespace {

TEST_CASE("metrics: label values escape backslash and quote and newline only") {
  CHECK(EscapeLabelValue("plain /v1/x{id}") == "plain /v1/x{id}");
  CHECK(EscapeLabelValue("a\\b") == "a\\\\b");
  CHECK(EscapeLabelValue("say \"hi\"") == "say \\\"hi\\\"");
  CHECK(EscapeLabelValue("two\nlines") == "two\\nlines");
  CHECK(EscapeLabelValue("tab\there") == "tab\there");
  Exposition out;
  out.Family("x_total", "counter", "Help with a \\ and a\nnewline.");
  out.Sample("x_total", {{"region", "we\"ur\n"}}, uint64_t{3});
  CHECK(out.Take() ==
        "# HELP x_total Help with a \\\\ and a\\nnewline.\n"
        "# TYPE x_total counter\n"
        "x_total{region=\"we\\\"ur\\n\"} 3\n");
}

TEST_CASE("metrics: values are written as Prometheus reads them") {
  CHECK(FormatValue(0) == "0");
  CHECK(FormatValue(42) == "42");
  CHECK(FormatValue(-3) == "-3");
  CHECK(FormatValue(0.0005) == "0.0005");
  CHECK(FormatValue(2.5) == "2.5");
  CHECK(FormatValue(1e-9) == "1e-09");
  CHECK(FormatValue(std::numeric_limits<double>::infinity()) == "+Inf");
  CHECK(FormatValue(-std::numeric_limits<double>::infinity()) == "-Inf");
  CHECK(FormatValue(std::numeric_limits<double>::quiet_NaN()) == "NaN");
}

}  // namespace
}  // namespace server
