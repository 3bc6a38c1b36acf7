#ifndef EDGEALLOC_SERVER_API_TAG_BODIES_H_
#define EDGEALLOC_SERVER_API_TAG_BODIES_H_

#include <nlohmann/json_fwd.hpp>

#include <string>
#include <vector>

#include "server/api/request_bodies.h"
#include "store/types.h"

namespace server {

// The string maps of request bodies, checked alike (docs/api.md): a claim's
// `labels`, a container's `attributes`, and a claim's `selector`, whose keys
// and values are held to the same rules. Pure functions, safe from any
// thread; request_bodies.cc calls them.

// A map of at most kMaxLabels keys of 1 to kMaxLabelKeyChars characters,
// without NUL or ':' (a list's ?label=KEY:VALUE and ?attribute=KEY:VALUE
// split at the first ':'), to strings of at most kMaxLabelValueChars
// characters, without NUL. `field` names it in a refusal ("labels",
// "containers[3].attributes"); `what` says what an entry is ("labels").
// On success *out is its compact JSON, keys sorted.
bool ParseTags(const nlohmann::json& value, const std::string& field, const char* what,
               std::string* out, BodyError* error);

// A claim's `selector`: a map as ParseTags's whose values are each a string
// (that value) or a non-empty array of strings (one of them), at most
// kMaxSelectorValues values in all. *out: a term a key, in key order, each
// value once. An empty object is no selector.
bool ParseSelector(const nlohmann::json& value, std::vector<store::SelectorTerm>* out,
                   BodyError* error);

}  // namespace server

#endif  // EDGEALLOC_SERVER_API_TAG_BODIES_H_
