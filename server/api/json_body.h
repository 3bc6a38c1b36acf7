#ifndef EDGEALLOC_SERVER_API_JSON_BODY_H_
#define EDGEALLOC_SERVER_API_JSON_BODY_H_

#include <nlohmann/json_fwd.hpp>

#include <string>
#include <string_view>

#include "server/api/request_bodies.h"
#include "server/http/error_table.h"

namespace server {

// The one place a request body's fields are held to the ones its request
// knows (request_bodies.h lists them beside each parser). Pure functions,
// safe from any thread.

// Fills *error with `code` and `message` and returns false: how every
// parser of a request body refuses it.
bool RefuseBody(BodyError* error, ApiError code, std::string message);

// Parses `body` as one JSON object into *out: invalid_json if it nests
// deeper than kMaxJsonDepth, is not JSON or is not an object. Its fields are
// for the caller to hold to its own (KnownFieldsOnly).
bool ParseJsonObject(std::string_view body, nlohmann::json* out, BodyError* error);

// ParseJsonObject, then KnownFieldsOnly(*out, "", known).
bool ParseJsonObject(std::string_view body, FieldNames known, nlohmann::json* out,
                     BodyError* error);

// True if every member of `object` is one of `known`. Else false with
// *error invalid_request naming the first other one (members in name order)
// where it is (`at`: "" for the body itself, "containers[2]" for an object
// in it) and saying the known field nearest to it, if one is near enough to
// be a typo of it, or else all of them: a mistyped field, or one a newer
// server knows, is told rather than ignored. Checked with a null value too.
bool KnownFieldsOnly(const nlohmann::json& object, std::string_view at, FieldNames known,
                     BodyError* error);

}  // namespace server

#endif  // EDGEALLOC_SERVER_API_JSON_BODY_H_
