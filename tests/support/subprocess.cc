#include "tests/support/subprocess.h"

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <stdexcept>

namespace testing {

Child::Child(const std::function<int()>& fn) {
  pid_ = ::fork();
  if (pid_ < 0) throw std::runtime_error("fork failed");
  if (pid_ == 0) {
    int code = 99;
    try {
      code = fn();
    } catch (...) {
      code = 98;
    }
    ::_exit(code);
  }
}

Child::~Child() {
  if (!reaped_) Kill();
}

int Child::Wait() {
  if (reaped_) return status_;
  int status = 0;
  while (::waitpid(pid_, &status, 0) < 0) {
    if (errno != EINTR) return -1;
  }
  reaped_ = true;
  status_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return status_;
}

bool Child::Running() {
  if (reaped_) return false;
  int status = 0;
  pid_t r = ::waitpid(pid_, &status, WNOHANG);
  if (r == 0) return true;
  if (r == pid_) {
    reaped_ = true;
    status_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }
  return false;
}

int Child::Kill() {
  if (reaped_) return status_;
  ::kill(pid_, SIGKILL);
  return Wait();
}

Pipe::Pipe() {
  if (::pipe(fds_) != 0) throw std::runtime_error("pipe failed");
}

Pipe::~Pipe() {
  ::close(fds_[0]);
  ::close(fds_[1]);
}

bool Pipe::Send(char c) { return ::write(fds_[1], &c, 1) == 1; }

int Pipe::Receive(int timeout_ms) {
  pollfd p{fds_[0], POLLIN, 0};
  int r;
  do {
    r = ::poll(&p, 1, timeout_ms);
  } while (r < 0 && errno == EINTR);
  if (r <= 0) return -1;
  char c = 0;
  if (::read(fds_[0], &c, 1) != 1) return -1;
  return static_cast<unsigned char>(c);
}

}  // namespace testing
