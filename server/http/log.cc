#include "server/http/log.h"

#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <cstdio>
#include <memory>
#include <random>

#include "base/json_string.h"
#include "base/random.h"

namespace server {
namespace {

std::atomic<bool> access_log{false};
std::atomic<LogFormat> log_format{LogFormat::kText};

spdlog::level::level_enum SpdLevel(LogLevel level) {
  switch (level) {
    case LogLevel::kDebug: return spdlog::level::debug;
    case LogLevel::kInfo: return spdlog::level::info;
    case LogLevel::kWarn: return spdlog::level::warn;
    case LogLevel::kError: return spdlog::level::err;
  }
  return spdlog::level::info;
}

// The process's logger: stderr, unbuffered, locked (a record is one write).
spdlog::logger& Logger() {
  static const std::shared_ptr<spdlog::logger> logger = [] {
    auto l = std::make_shared<spdlog::logger>(
        "edgealloc", std::make_shared<spdlog::sinks::stderr_sink_mt>());
    l->set_pattern("%Y-%m-%dT%H:%M:%S.%eZ %l %v", spdlog::pattern_time_type::utc);
    l->flush_on(spdlog::level::trace);
    return l;
  }();
  return *logger;
}

// The payload of a JSON record: the fields after ts and level.
std::string JsonMessage(std::string_view message) {
  std::string out = "\"msg\":";
  base::AppendJsonString(message, &out);
  return out;
}

}  // namespace

void ConfigureLogging(const LogOptions& options) {
  spdlog::logger& logger = Logger();
  logger.set_level(SpdLevel(options.level));
  log_format.store(options.format);
  access_log.store(options.access_log);
  if (options.format == LogFormat::kJson) {
    // spdlog writes ts and level; the payload (%v) is the rest of the object.
    logger.set_pattern("{\"ts\":\"%Y-%m-%dT%H:%M:%S.%eZ\",\"level\":\"%l\",%v}",
                       spdlog::pattern_time_type::utc);
  } else {
    logger.set_pattern("%Y-%m-%dT%H:%M:%S.%eZ %l %v", spdlog::pattern_time_type::utc);
  }
}

bool ParseLogLevel(std::string_view text, LogLevel* level) {
  if (text == "debug") *level = LogLevel::kDebug;
  else if (text == "info") *level = LogLevel::kInfo;
  else if (text == "warn") *level = LogLevel::kWarn;
  else if (text == "error") *level = LogLevel::kError;
  else return false;
  return true;
}

void Log(LogLevel level, std::string_view message) {
  spdlog::logger& logger = Logger();
  const auto lvl = SpdLevel(level);
  if (!logger.should_log(lvl)) return;  // nothing formatted for a level that is off
  if (log_format.load(std::memory_order_relaxed) == LogFormat::kJson) {
    logger.log(lvl, JsonMessage(message));
  } else {
    logger.log(lvl, message);
  }
}

bool AccessLogEnabled() { return access_log.load(std::memory_order_relaxed); }

void LogAccess(const AccessRecord& r) {
  if (!AccessLogEnabled()) return;
  spdlog::logger& logger = Logger();
  if (!logger.should_log(spdlog::level::info)) return;
  std::string line;
  line.reserve(160);
  if (log_format.load(std::memory_order_relaxed) == LogFormat::kJson) {
    line = "\"msg\":\"access\",\"method\":";
    base::AppendJsonString(r.method, &line);
    line += ",\"path\":";
    base::AppendJsonString(r.path, &line);
    line += ",\"status\":" + std::to_string(r.status) + ",\"bytes\":" + std::to_string(r.bytes) +
            ",\"duration_us\":" + std::to_string(r.micros) + ",\"request_id\":";
    base::AppendJsonString(r.request_id, &line);
  } else {
    line.append("access ").append(r.method).append(" ");
    // The path as the client sent it, quoted as JSON so a strange byte
    // cannot forge a second line.
    base::AppendJsonString(r.path, &line);
    line += " " + std::to_string(r.status) + " " + std::to_string(r.bytes) + "B " +
            std::to_string(r.micros) + "us request_id=";
    line.append(r.request_id);
  }
  logger.info(line);
}

std::string RequestIdOf(std::string_view header) {
  const auto allowed = [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           c == '.' || c == '_' || c == ':' || c == '/' || c == '+' || c == '=' || c == '@' ||
           c == '-';
  };
  bool ok = !header.empty() && header.size() <= 128;
  for (char c : header) ok = ok && allowed(c);
  if (ok) return std::string(header);
  // Not secret, only unlikely to repeat: a per-thread generator seeded once
  // from the kernel, so a request costs no system call.
  thread_local std::mt19937_64 gen = [] {
    uint64_t seed = 0;
    std::string error;
    if (!base::KernelRandomBytes(&seed, sizeof(seed), &error)) seed = 0x9e3779b97f4a7c15ull;
    return std::mt19937_64(seed);
  }();
  static constexpr char kHex[] = "0123456789abcdef";
  uint64_t v = gen();
  std::string id(16, '0');
  for (int i = 15; i >= 0; --i, v >>= 4) id[static_cast<size_t>(i)] = kHex[v & 15];
  return id;
}

}  // namespace server
