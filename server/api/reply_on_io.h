#ifndef EDGEALLOC_SERVER_API_REPLY_ON_IO_H_
#define EDGEALLOC_SERVER_API_REPLY_ON_IO_H_

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/post.hpp>

#include <exception>
#include <string>
#include <utility>

#include "server/api/errors.h"
#include "server/http/log.h"
#include "server/http/message.h"

namespace server {

// Runs `make` on an io thread and replies with what it returns. Used by every
// callback of the allocator and registry, which run on a writer thread: the
// writer only hands the result on, the JSON is made on `io`. Safe from any
// thread.
template <typename Make>
void ReplyOnIo(const boost::asio::any_io_executor& io, Reply reply, Make make) {
  boost::asio::post(io, [reply = std::move(reply), make = std::move(make)]() mutable {
    try {
      reply(make());
    } catch (const std::exception& e) {
      LogLine(std::string("edgealloc: internal error making a reply: ") + e.what());
      reply(RefusalResponse(kInternalError));
    }
  });
}

}  // namespace server

#endif  // EDGEALLOC_SERVER_API_REPLY_ON_IO_H_
