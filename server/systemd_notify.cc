#include "server/systemd_notify.h"

#include <systemd/sd-daemon.h>

namespace server {

void NotifyReady(const std::string& status) {
  // unset_environment 0: a child process we never start would not care; and
  // keeping NOTIFY_SOCKET lets NotifyStopping speak too.
  (void)sd_notify(0, ("READY=1\nSTATUS=" + status).c_str());
}

void NotifyStopping() { (void)sd_notify(0, "STOPPING=1\nSTATUS=stopping: draining"); }

}  // namespace server
