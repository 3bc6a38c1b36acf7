#ifndef EDGEALLOC_SERVER_AGENT_SHELL_COMMAND_H_
#define EDGEALLOC_SERVER_AGENT_SHELL_COMMAND_H_

#include <sys/types.h>

#include <cstdint>
#include <string>

namespace server {

// `/bin/sh -c command` in a process group of its own, with the signals the
// agent blocks unblocked again. -1 if it cannot be started.
pid_t StartShell(const std::string& command);

// The exit code of `command` (0 = success), or -1 when it could not be
// started, was killed, or ran past timeout_ms (its whole process group is
// then killed, so a hung check leaves nothing behind).
int RunShell(const std::string& command, int64_t timeout_ms);

}  // namespace server

#endif  // EDGEALLOC_SERVER_AGENT_SHELL_COMMAND_H_
