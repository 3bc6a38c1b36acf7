#ifndef EDGEALLOC_SERVER_OPS_DASHBOARD_H_
#define EDGEALLOC_SERVER_OPS_DASHBOARD_H_

#include <string_view>

namespace server {

// The page of GET /dashboard: server/ops/dashboard/dashboard.html, embedded
// into the binary at build time (server/ops/CMakeLists.txt), so the served page does
// not depend on the working directory or on files installed beside the
// binary. Static storage; safe from any thread.
std::string_view DashboardHtml();

}  // namespace server

#endif  // EDGEALLOC_SERVER_OPS_DASHBOARD_H_
