#ifndef EDGEALLOC_SERVER_OPS_DASHBOARD_H_
#define EDGEALLOC_SERVER_OPS_DASHBOARD_H_

#include <string>
#include <string_view>

namespace server {

// The page of GET /dashboard: server/ops/dashboard/dashboard.html, embedded
// into the binary at build time (server/ops/CMakeLists.txt), so the served page does
// not depend on the working directory or on files installed beside the
// binary. Static storage; safe from any thread.
std::string_view DashboardHtml();

// A fresh nonce for one response's Content-Security-Policy: 16 bytes of the
// kernel's randomness, in hex (or, if the kernel refuses, of the clock: a
// nonce guards against injected markup, which this page has no way in for).
std::string DashboardNonce();
// The page with its <style> and <script> elements carrying `nonce`, so that
// a policy allowing only that nonce lets them apply and nothing else.
std::string DashboardPage(std::string_view nonce);

}  // namespace server

#endif  // EDGEALLOC_SERVER_OPS_DASHBOARD_H_
