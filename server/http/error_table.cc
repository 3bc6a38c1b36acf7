#include "server/http/error_table.h"

#include <cstddef>

namespace server {

namespace {

// RowOf indexes kErrorTable by ApiError: each row must sit at its error.
constexpr bool RowsInOrder() {
  for (size_t i = 0; i < std::size(kErrorTable); ++i) {
    if (static_cast<size_t>(kErrorTable[i].error) != i) return false;
  }
  return std::size(kErrorTable) == static_cast<size_t>(ApiError::kNotReady) + 1;
}
static_assert(RowsInOrder(), "kErrorTable must list every ApiError, in ApiError's order");

}  // namespace

const ErrorRow* RowOfCode(std::string_view code) {
  for (const ErrorRow& row : kErrorTable) {
    if (code == row.code) return &row;
  }
  return nullptr;
}

}  // namespace server
