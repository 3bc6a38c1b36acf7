#ifndef EDGEALLOC_SERVER_CAPACITY_FLAGS_H_
#define EDGEALLOC_SERVER_CAPACITY_FLAGS_H_

#include <CLI/CLI.hpp>

#include "server/config.h"

namespace server {

// The flags of `serve` about capacity: the mirror, its history, the fleet's
// claim counts and each pool's warm buffer (GET /v1/pressure).
void AddMirrorFlags(CLI::App* serve, ServeConfig* s);

}  // namespace server

#endif  // EDGEALLOC_SERVER_CAPACITY_FLAGS_H_
