#ifndef EDGEALLOC_TESTS_SUPPORT_SUBPROCESS_H_
#define EDGEALLOC_TESTS_SUPPORT_SUBPROCESS_H_

#include <sys/types.h>

#include <functional>

namespace testing {

// A Child is a forked copy of the test process that runs one function and
// leaves with its return value as exit code, through _exit: no destructors,
// no atexit, no Catch2 in the child (Catch2 is not fork-safe). Tests use it to
// put a second process on the same database file or lock. Owned by one thread.
// A Child still running when its object dies is killed (SIGKILL) and reaped.
class Child {
 public:
  // Forks and runs `fn` in the child. Returns with the child running.
  // REQUIRES: the test process has no other threads holding locks that `fn`
  // needs (allocator, malloc are fine with glibc; a live Writer is not).
  explicit Child(const std::function<int()>& fn);
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;
  ~Child();

  pid_t pid() const { return pid_; }
  // Waits for the child and returns its exit code, or 128 + signal if a
  // signal ended it (-1 if waitpid failed). Once reaped, returns the same.
  int Wait();
  // True while the child has not exited (does not block).
  bool Running();
  // SIGKILLs the child and reaps it; returns what Wait returns.
  int Kill();

 private:
  pid_t pid_ = -1;
  bool reaped_ = false;
  int status_ = -1;
};

// A Pipe carries single bytes between a parent and its forked children, to
// say "I hold the lock now" without sleeping on it.
class Pipe {
 public:
  Pipe();
  Pipe(const Pipe&) = delete;
  Pipe& operator=(const Pipe&) = delete;
  ~Pipe();
  // Writes one byte; false on error.
  bool Send(char c);
  // Reads one byte, waiting at most timeout_ms. Returns the byte, or -1 on
  // timeout, end of file or error.
  int Receive(int timeout_ms);

 private:
  int fds_[2] = {-1, -1};
};

}  // namespace testing

#endif  // EDGEALLOC_TESTS_SUPPORT_SUBPROCESS_H_
