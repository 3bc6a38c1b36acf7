#ifndef EDGEALLOC_SERVER_IO_WATCH_H_
#define EDGEALLOC_SERVER_IO_WATCH_H_

#include <memory>

#include <boost/asio/any_io_executor.hpp>

#include "batcher/hearing.h"

namespace server {

// Beats a source of the batcher's Hearing from the io threads every watch
// period, so that an event loop that cannot run (every io thread busy or
// blocked) is deafness too: heartbeats sent then are not read, and their
// containers must not be judged silent for it.
class IoWatch {
 public:
  IoWatch(boost::asio::any_io_executor io, batcher::Hearing* hearing);
  IoWatch(const IoWatch&) = delete;
  IoWatch& operator=(const IoWatch&) = delete;
  ~IoWatch();

  // Arms the timer; Stop() leaves the source (the io threads stop after it,
  // and a loop that no longer runs is not deaf). Both idempotent.
  void Start();
  void Stop();

 private:
  struct State;  // shared with the pending timer's handler
  static void Arm(const std::shared_ptr<State>& state);
  std::shared_ptr<State> state_;
};

}  // namespace server

#endif  // EDGEALLOC_SERVER_IO_WATCH_H_
