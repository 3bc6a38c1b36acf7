#ifndef EDGEALLOC_SERVER_OPS_OPENAPI_H_
#define EDGEALLOC_SERVER_OPS_OPENAPI_H_

#include <string_view>

namespace server {

// The body of GET /openapi.json: docs/openapi.json, the OpenAPI 3.1
// document of the API, embedded into the binary at build time
// (server/ops/CMakeLists.txt). Static storage; safe from any thread.
std::string_view OpenApiJson();

}  // namespace server

#endif  // EDGEALLOC_SERVER_OPS_OPENAPI_H_
