#include "server/api/error_table.h"

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

ApiError ErrorOf(store::Outcome outcome) {
  using store::Outcome;
  switch (outcome) {
    case Outcome::kNoCapacity: return ApiError::kNoCapacity;
    case Outcome::kQuotaExceeded: return ApiError::kQuotaExceeded;
    case Outcome::kStaleToken: return ApiError::kStaleToken;
    case Outcome::kNotFound: return ApiError::kNotFound;
    case Outcome::kForbidden: return ApiError::kForbidden;
    case Outcome::kConflict: return ApiError::kConflict;
    case Outcome::kOverloaded: return ApiError::kOverloaded;
    case Outcome::kError: return ApiError::kUnavailable;
    case Outcome::kOk:
    case Outcome::kReplayed: break;  // a success: not asked (HttpStatusOf answers it)
  }
  return ApiError::kUnavailable;
}

}  // namespace server
