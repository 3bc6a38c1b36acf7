#include "server/agent/shell_command.h"

#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <time.h>

#include <chrono>

extern char** environ;

namespace server {

pid_t StartShell(const std::string& command) {
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t none;
  sigemptyset(&none);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setpgroup(&attr, 0);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETPGROUP);
  const char* argv[] = {"/bin/sh", "-c", command.c_str(), nullptr};
  pid_t pid = -1;
  const int rc = posix_spawn(&pid, "/bin/sh", nullptr, &attr, const_cast<char**>(argv), environ);
  posix_spawnattr_destroy(&attr);
  return rc == 0 ? pid : -1;
}

int RunShell(const std::string& command, int64_t timeout_ms) {
  const pid_t pid = StartShell(command);
  if (pid < 0) return -1;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  int status = 0;
  // Polled: a check is short, and waiting with a timeout on a child has no
  // simpler portable form.
  while (waitpid(pid, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() >= deadline) {
      kill(-pid, SIGKILL);
      waitpid(pid, &status, 0);
      return -1;
    }
    const timespec tick{0, 10 * 1000 * 1000};
    nanosleep(&tick, nullptr);
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

}  // namespace server
