#ifndef EDGEALLOC_SERVER_ADMIN_H_
#define EDGEALLOC_SERVER_ADMIN_H_

#include <iosfwd>

#include "server/config.h"

namespace server {

// `edgealloc register`: reads {"containers":[...]} (as POST /v1/containers)
// from cfg.file or `in` for "-", and registers them through the shards' own
// writers, under the cross-process write lock, so it is safe while a server
// runs on the same files. Prints "registered N" to `out`. Returns the exit
// code: 0 ok, 2 for a bad file or body, 1 for a storage failure.
int RunRegister(const RegisterConfig& cfg, std::istream& in, std::ostream& out,
                std::ostream& err);

}  // namespace server

#endif  // EDGEALLOC_SERVER_ADMIN_H_
