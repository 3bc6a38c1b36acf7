#ifndef EDGEALLOC_SERVER_HTTP_LOG_H_
#define EDGEALLOC_SERVER_HTTP_LOG_H_

#include <cstdint>
#include <string>
#include <string_view>

namespace server {

// The server's log, through spdlog: one line a record on stderr, written in
// one call (lines of threads never mix), with a UTC timestamp and a level.
// Text lines read `2026-11-24T14:30:00.123Z info edgealloc: serving on ...`;
// JSON lines are objects, `{"ts":"...","level":"info","msg":"...",...}`. Never
// pass keys or request bodies: nothing here could tell them apart.
enum class LogLevel { kDebug, kInfo, kWarn, kError };
enum class LogFormat { kText, kJson };

struct LogOptions {
  LogLevel level = LogLevel::kInfo;
  LogFormat format = LogFormat::kText;
  bool access_log = false;  // a line a request answered (LogAccess)
};

// Sets the level, the format and the access log for every later record.
// Call it before threads log (main does, first thing).
void ConfigureLogging(const LogOptions& options);
// "debug", "info", "warn" or "error"; false for anything else.
bool ParseLogLevel(std::string_view text, LogLevel* level);

void Log(LogLevel level, std::string_view message);
inline void LogLine(std::string_view message) { Log(LogLevel::kInfo, message); }
inline void LogWarn(std::string_view message) { Log(LogLevel::kWarn, message); }
inline void LogError(std::string_view message) { Log(LogLevel::kError, message); }

// One answered request, if the access log is on: method, the path without
// its query (a query may carry a token), status, body bytes, the time from
// the request's header to its answer, and the request id (X-Request-Id).
struct AccessRecord {
  std::string_view method;
  std::string_view path;
  int status = 0;
  uint64_t bytes = 0;
  int64_t micros = 0;
  std::string_view request_id;
};
bool AccessLogEnabled();
void LogAccess(const AccessRecord& record);

// Request ids: `X-Request-Id` as the client sent it, if it is 1 to 128 of
// [A-Za-z0-9._:/+=@-] (safe in a log line and a header); else a new one of 16
// hex digits.
std::string RequestIdOf(std::string_view header);

}  // namespace server

#endif  // EDGEALLOC_SERVER_HTTP_LOG_H_
