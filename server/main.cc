// edgealloc: hands out exclusive containers from a fleet, with SQLite or PostgreSQL behind it (docs/design.md).
// `edgealloc serve` runs the HTTP API; `edgealloc register` adds containers
// from the command line, also while a server runs; `edgealloc agent` is a
// container's sidecar that keeps it reported (docs/agent.md).

#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>

#include <csignal>
#include <functional>
#include <iostream>
#include <string>
#include <string_view>

#include "server/admin.h"
#include "server/agent/agent.h"
#include "server/config.h"
#include "server/http/log.h"
#include "server/service.h"
#include "server/systemd_notify.h"
#include "store/storage.h"

namespace {

// What a newcomer needs from the first line: where it serves and where the
// dashboard is, the database and the settings of its engine that matter
// (SQLite: shards and sync; PostgreSQL: the writer connections), threads
// and auth.
std::string StartLine(const server::ServeConfig& cfg, uint16_t port) {
  const std::string host = cfg.host.find(':') != std::string::npos ? "[" + cfg.host + "]" : cfg.host;
  const std::string where = host + ":" + std::to_string(port);
  const bool postgres = std::string_view(store::EngineName(cfg.db)) == "postgresql";
  const std::string engine =
      postgres ? std::to_string(cfg.pg_writers) + " writer connection(s)"
               : std::to_string(cfg.shards) + " shard(s), sync " +
                     (cfg.sync == store::Sync::kFull ? "full" : "normal");
  return "edgealloc: serving on " + where + ", dashboard http://" + where + "/dashboard, db " +
         store::DbForDisplay(cfg.db) + " (" + store::EngineName(cfg.db) + ", " + engine + "), " +
         std::to_string(cfg.threads) + " io threads, auth " +
         (cfg.keys_file.empty() ? "open (loopback only)" : "keys file") +
         (cfg.demo ? ", demo fleet" : "");
}

// Runs `io` until SIGINT or SIGTERM, which it returns; each SIGHUP on the way
// reloads the keys file.
int WaitForStop(boost::asio::io_context& io, boost::asio::signal_set& signals,
                server::Service& service) {
  int caught = 0;
  std::function<void(const boost::system::error_code&, int)> on_signal =
      [&](const boost::system::error_code& ec, int signo) {
        if (ec) return;
        if (signo != SIGHUP) {
          caught = signo;
          return;
        }
        server::LogLine("edgealloc: SIGHUP, reloading the keys file");
        service.ReloadKeys();
        signals.async_wait(on_signal);
      };
  signals.async_wait(on_signal);
  io.run();
  return caught;
}

int Serve(const server::ServeConfig& cfg) {
  server::ConfigureLogging(cfg.log);
  // Signals first, so a SIGTERM or SIGHUP during start-up is not lost (nor
  // kills the process): the set blocks nothing, it turns the signal into a
  // handler run on this thread once the service has started.
  boost::asio::io_context signals_io;
  boost::asio::signal_set signals(signals_io, SIGINT, SIGTERM, SIGHUP);

  server::Service service(cfg);
  store::Status s = service.Start();
  if (!s.ok()) {
    server::LogError("edgealloc: cannot start: " + s.ToString());
    return s.IsInvalidArgument() ? 2 : 1;
  }
  server::LogLine(StartLine(cfg, service.port()));
  server::NotifyReady("serving on " + cfg.host + ":" + std::to_string(service.port()));
  const int caught = WaitForStop(signals_io, signals, service);
  server::NotifyStopping();
  server::LogLine(std::string("edgealloc: ") + (caught == SIGINT ? "SIGINT" : "SIGTERM") +
                  ", stopping");
  service.Stop();
  server::LogLine("edgealloc: stopped");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  server::Command cmd = server::ParseCommandLine(argc, argv, std::cout, std::cerr);
  switch (cmd.kind) {
    case server::Command::Kind::kExit:
      return cmd.exit_code;
    case server::Command::Kind::kRegister:
      return server::RunRegister(cmd.reg, std::cin, std::cout, std::cerr);
    case server::Command::Kind::kAgent:
      return server::RunAgent(cmd.agent);
    case server::Command::Kind::kClient:
      if (cmd.client.watch_events) {
        return server::RunEventsWatch(cmd.client.options, cmd.client.watch, std::cout, std::cerr);
      }
      return server::RunClientRequest(cmd.client.options, cmd.client.request, std::cout,
                                      std::cerr);
    case server::Command::Kind::kServe:
      return Serve(cmd.serve);
  }
  return 2;
}
