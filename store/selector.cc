#include "store/selector.h"

#include <cassert>

#include "base/json_string.h"

namespace store {

size_t DrivingTerm(const std::vector<SelectorTerm>& selector) {
  assert(!selector.empty());
  size_t best = 0;
  for (size_t i = 1; i < selector.size(); ++i) {
    if (selector[i].values.size() < selector[best].values.size()) best = i;
  }
  return best;
}

ClaimForm ClaimFormOf(const ClaimRequest& req, Placement server) {
  ClaimForm form;
  switch (req.placement == Placement::kDefault ? server : req.placement) {
    case Placement::kPacked: form.placement = 1; break;
    case Placement::kDistributed: form.placement = 2; break;
    case Placement::kDefault:
    case Placement::kFittest: break;
  }
  if (!req.selector.empty()) {
    form.candidates = req.selector[DrivingTerm(req.selector)].values.size() == 1 ? 1 : 2;
  }
  return form;
}

std::string ValuesJson(const std::vector<std::string>& values) {
  std::string out = "[";
  for (size_t i = 0; i < values.size(); ++i) {
    if (i > 0) out += ',';
    base::AppendJsonString(values[i], &out);
  }
  out += ']';
  return out;
}

std::string SelectorJson(const std::vector<SelectorTerm>& selector) {
  std::string out = "{";
  for (size_t i = 0; i < selector.size(); ++i) {
    if (i > 0) out += ',';
    base::AppendJsonString(selector[i].key, &out);
    out += ':';
    out += ValuesJson(selector[i].values);
  }
  out += '}';
  return out;
}

}  // namespace store
