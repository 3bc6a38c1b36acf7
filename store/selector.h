#ifndef EDGEALLOC_STORE_SELECTOR_H_
#define EDGEALLOC_STORE_SELECTOR_H_

#include <cstddef>
#include <string>
#include <vector>

#include "store/types.h"

namespace store {

// A claim's selector (ClaimRequest::selector) as both engines' claim
// statements take it: the candidates are found through the attribute index
// (region, pool, key, value, latency_ms) of one term, the driving term, and
// every term is checked on each of them (store/sqlite/selector_sql.h,
// store/postgres/selector_sql.h). Pure functions.

// The term the index walk starts from: the one with the fewest values (one
// value walks the index in latency order and stops after K candidates;
// several are merged and sorted), the first in key order among equals.
// REQUIRES: !selector.empty().
size_t DrivingTerm(const std::vector<SelectorTerm>& selector);

// Which of an engine's nine claim statements a claim runs: the row its
// placement (its own, else the server's; 0 fittest, 1 packed, 2
// distributed), the column its candidates (0 no selector, 1 a driving term
// of one value, 2 of several). Both engines index their tables by it.
struct ClaimForm {
  int placement = 0;
  int candidates = 0;
};
ClaimForm ClaimFormOf(const ClaimRequest& req, Placement server);

// The selector as a JSON object of arrays, {"chrome":["125","126"],"gpu":["a100"]}:
// what the statements check every term against, and what a no_match
// message names.
std::string SelectorJson(const std::vector<SelectorTerm>& selector);

// One term's values as a JSON array of strings.
std::string ValuesJson(const std::vector<std::string>& values);

}  // namespace store

#endif  // EDGEALLOC_STORE_SELECTOR_H_
