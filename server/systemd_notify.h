#ifndef EDGEALLOC_SERVER_SYSTEMD_NOTIFY_H_
#define EDGEALLOC_SERVER_SYSTEMD_NOTIFY_H_

#include <string>

namespace server {

// Tells systemd (Type=notify, packaging/edgealloc.service) where the service
// is, through sd_notify(3): nothing happens when not started by systemd
// (NOTIFY_SOCKET unset). Ready: the database is open and the port listens.
void NotifyReady(const std::string& status);
// Stopping: SIGTERM came; requests in flight finish, the queue drains.
void NotifyStopping();

}  // namespace server

#endif  // EDGEALLOC_SERVER_SYSTEMD_NOTIFY_H_
