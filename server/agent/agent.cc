#include "server/agent/agent.h"

#include <nlohmann/json.hpp>
#include <signal.h>
#include <sys/wait.h>

#include <algorithm>
#include <cerrno>
#include <ctime>
#include <chrono>

#include "base/clock.h"
#include "server/client/http_client.h"
#include "server/agent/retry_delay.h"
#include "server/agent/shell_command.h"

namespace server {
namespace {

using nlohmann::json;

constexpr int64_t kRequestTimeoutMs = 5000;
// How often, while it drains at SIGTERM, the agent asks whether its
// container is still picked.
constexpr int64_t kDrainPollMs = 500;

// Whether a 400 refused the heartbeat's ts_ms (too far ahead of the server's
// clock: --max-clock-skew-ms), and not something else of it.
bool RefusedTs(const HttpReply& r) {
  if (r.status != 400) return false;
  json body = json::parse(r.body, nullptr, false);
  if (!body.is_object() || !body.contains("error") || !body["error"].is_object()) return false;
  return body["error"].value("message", "").rfind("heartbeats[0].ts_ms", 0) == 0;
}

// "503 overloaded", "403 forbidden", or why nothing answered.
std::string Describe(const HttpReply& r) {
  if (!r.answered()) return r.error;
  std::string code;
  json body = json::parse(r.body, nullptr, false);
  if (body.is_object() && body.contains("error") && body["error"].is_object()) {
    code = body["error"].value("code", "");
  }
  return std::to_string(r.status) + (code.empty() ? "" : " " + code);
}

// 429 and 5xx are the server's "later"; so is no answer at all.
bool Transient(const HttpReply& r) {
  return !r.answered() || r.status == 429 || r.status >= 500;
}

std::string SignalName(int signo) { return signo == SIGINT ? "SIGINT" : "SIGTERM"; }

class Agent {
 public:
  Agent(const AgentConfig& cfg, HttpUrl server) : cfg_(cfg), server_(std::move(server)) {
    sigemptyset(&signals_);
    sigaddset(&signals_, SIGTERM);
    sigaddset(&signals_, SIGINT);
  }

  int Run() {
    LogLine("agent: " + cfg_.id + " reports to " + cfg_.server + " every " +
            std::to_string(cfg_.interval_ms) + " ms, health from " + HealthSource());
    if (cfg_.register_container) {
      int exit_code = 0;
      if (!Register(&exit_code)) return exit_code;
    }
    for (;;) {
      const int64_t start = base::SteadyNowMs();
      ReapOnDrain();
      const int64_t wait = Beat(HealthState());
      if (int signo = Sleep(std::max<int64_t>(0, wait - (base::SteadyNowMs() - start)))) {
        return DrainAndExit(signo);
      }
    }
  }

 private:
  std::string HealthSource() const {
    if (!cfg_.health_url.empty()) return "GET " + cfg_.health_url;
    if (!cfg_.health_cmd.empty()) return "command `" + cfg_.health_cmd + "`";
    return "nothing (always ready)";
  }

  // Waits up to `ms` for SIGTERM or SIGINT: the signal, or 0.
  int Sleep(int64_t ms) {
    const int64_t until = base::SteadyNowMs() + ms;
    for (;;) {
      const int64_t left = std::max<int64_t>(0, until - base::SteadyNowMs());
      timespec ts{static_cast<time_t>(left / 1000), static_cast<long>(left % 1000) * 1000000};
      const int signo = sigtimedwait(&signals_, nullptr, &ts);
      if (signo > 0) return signo;
      if (errno != EINTR || left == 0) return 0;
    }
  }

  HttpReply Call(const std::string& method, const std::string& target, std::string body = "") {
    HttpCall call;
    call.method = method;
    call.target = target;
    call.bearer_key = cfg_.key;
    call.body = std::move(body);
    call.timeout_ms = kRequestTimeoutMs;
    return SendHttp(server_, call);
  }

  std::string RegistrationBody() const {
    json c = {{"id", cfg_.id}, {"region", cfg_.region}, {"pool", cfg_.pool}};
    if (cfg_.latency_ms) c["latency_ms"] = *cfg_.latency_ms;
    if (!cfg_.data.empty()) c["data"] = json::parse(cfg_.data);  // checked by the flag
    if (cfg_.slots) c["slots"] = *cfg_.slots;
    if (!cfg_.attributes.empty()) c["attributes"] = json::parse(cfg_.attributes);  // checked too
    return json{{"containers", json::array({c})}}.dump();
  }

  // POST /v1/containers until it is taken; false (with the exit code) if it
  // is refused or a signal comes first.
  bool Register(int* exit_code) {
    for (int failures = 1;; ++failures) {
      HttpReply r = Call("POST", "/v1/containers", RegistrationBody());
      if (r.status == 200) {
        LogLine("agent: registered " + cfg_.id + " (region " + cfg_.region + ", pool " +
                cfg_.pool + ")");
        return true;
      }
      if (!Transient(r)) {
        LogError("agent: registration of " + cfg_.id + " refused: " + Describe(r) + " " +
                 r.body + (r.status == 403 ? " (--register needs an admin key)" : ""));
        *exit_code = 2;
        return false;
      }
      const int64_t delay = RetryDelayMs(failures, r.retry_after_s, cfg_.interval_ms, JitterUnit());
      if (failures == 1) {
        LogWarn("agent: registration failed: " + Describe(r) + "; retrying, backing off");
      }
      if (int signo = Sleep(delay)) {
        LogLine("agent: " + SignalName(signo) + " before registration; exiting");
        *exit_code = 0;
        return false;
      }
    }
  }

  // "ready" if the check passes (or there is none), else "draining": a
  // failing container is never claimed, yet keeps the session it holds.
  std::string HealthState() {
    std::string failure;
    if (!cfg_.health_url.empty()) {
      HttpUrl url;
      std::string error;
      ParseHttpUrl(cfg_.health_url, &url, &error);  // checked by the flag
      HttpCall call;
      call.timeout_ms = cfg_.health_timeout_ms;
      HttpReply r = SendHttp(url, call);
      if (r.status < 200 || r.status > 299) failure = Describe(r);
    } else if (!cfg_.health_cmd.empty()) {
      const int code = RunShell(cfg_.health_cmd, cfg_.health_timeout_ms);
      if (code != 0) failure = code < 0 ? "killed or timed out" : "exit " + std::to_string(code);
    }
    if (failure.empty() && health_failing_) LogLine("agent: health check of " + cfg_.id + " passes");
    if (!failure.empty() && !health_failing_) {
      LogWarn("agent: health check of " + cfg_.id + " fails (" + failure + ")");
    }
    health_failing_ = !failure.empty();
    return health_failing_ ? "draining" : "ready";
  }

  // This container's clock for ts_ms: the host's wall clock, never going
  // back while the agent runs (after a step back, a report must not look
  // older than the one before it, which the server would take for liveness
  // only). ts_ms orders this container's reports when they reach the
  // database through different nodes, one of them late.
  int64_t NextTsMs() const { return std::max(base::NowMs(), last_ts_ms_ + 1); }

  // POSTs one heartbeat of `state` with ts_ms; if the server refuses ts_ms
  // (this host's clock too far ahead of the fleet's), again without it, so
  // that a wrong clock never silences the container, and says so once. A
  // refused ts_ms is forgotten: once the clock is fixed, the next is taken.
  HttpReply PostBeat(const std::string& state) {
    const int64_t ts_ms = NextTsMs();
    json item = {{"container_id", cfg_.id}, {"state", state}, {"ts_ms", ts_ms}};
    HttpReply r = Call("POST", "/v1/heartbeats", json{{"heartbeats", json::array({item})}}.dump());
    if (!RefusedTs(r)) {
      last_ts_ms_ = ts_ms;  // perhaps taken, even unanswered
      if (r.status == 202 && ts_refused_) LogLine("agent: the server takes this host's clock again");
      if (r.status == 202) ts_refused_ = false;
      return r;
    }
    if (!ts_refused_) {
      LogWarn("agent: the server refuses this host's clock (" + r.body +
              "); reporting without ts_ms until it takes it: fix this host's time (NTP)");
    }
    ts_refused_ = true;
    item.erase("ts_ms");
    return Call("POST", "/v1/heartbeats", json{{"heartbeats", json::array({item})}}.dump());
  }

  // One heartbeat of `state`; how long until the next.
  int64_t Beat(const std::string& state) {
    HttpReply r = PostBeat(state);
    if (r.status == 202) {
      if (failures_ > 0) {
        LogLine("agent: the server takes heartbeats again, after " + std::to_string(failures_) +
                " failed");
      }
      failures_ = 0;
      const json reply = json::parse(r.body, nullptr, false);
      // An id the server has no container for is dropped, not reported.
      if (!OnUnknown(reply)) {
        if (state != reported_) LogLine("agent: " + cfg_.id + " reported " + state);
        reported_ = state;
      }
      OnDrain(reply);
      return cfg_.interval_ms;
    }
    ++failures_;
    if (!Transient(r)) {
      // A wrong key or id: said once, tried again at the interval (a keys
      // file may be fixed and the server restarted under the agent).
      if (failures_ == 1) LogError("agent: heartbeat refused: " + Describe(r) + " " + r.body);
      return cfg_.interval_ms;
    }
    const int64_t delay = RetryDelayMs(failures_, r.retry_after_s, cfg_.interval_ms, JitterUnit());
    if (failures_ == 1) {
      LogWarn("agent: heartbeat failed: " + Describe(r) + "; retrying in " +
              std::to_string(delay) + " ms, backing off");
    }
    return delay;
  }

  // Whether the reply's list `name` holds this agent's id.
  bool Names(const json& reply, const char* name) const {
    if (!reply.is_object() || !reply.contains(name) || !reply[name].is_array()) return false;
    const json& ids = reply[name];
    return std::find(ids.begin(), ids.end(), json(cfg_.id)) != ids.end();
  }

  // The reply's `unknown`: the server has no container of this id (named
  // from the heartbeat after the write that found it, until a write finds
  // it). Said once, and once again when it is known; true while named.
  bool OnUnknown(const json& reply) {
    const bool unknown = Names(reply, "unknown");
    if (unknown && !unknown_) {
      LogError("agent: the server has no container " + cfg_.id +
               "; its heartbeats are dropped until it is registered (POST /v1/containers, or "
               "--register with an admin key)");
      reported_.clear();
    } else if (!unknown && unknown_) {
      LogLine("agent: the server knows " + cfg_.id + " now");
    }
    unknown_ = unknown;
    return unknown;
  }

  // The reply's `drain`: the ids an operator has drained.
  void OnDrain(const json& reply) {
    if (!reply.is_object() || !reply.contains("drain") || !reply["drain"].is_array()) return;
    const bool drained = Names(reply, "drain");
    if (drained && !operator_drain_) {
      LogWarn("agent: an operator drained " + cfg_.id);
      if (!cfg_.on_drain.empty() && on_drain_pid_ < 0) {
        on_drain_pid_ = StartShell(cfg_.on_drain);
        LogLine("agent: --on-drain " + std::string(on_drain_pid_ < 0 ? "could not start" : "started"));
      }
    } else if (!drained && operator_drain_) {
      LogLine("agent: the operator drain of " + cfg_.id + " is lifted");
    }
    operator_drain_ = drained;
  }

  void ReapOnDrain() {
    int status = 0;
    if (on_drain_pid_ > 0 && waitpid(on_drain_pid_, &status, WNOHANG) == on_drain_pid_) {
      LogLine("agent: --on-drain exited " +
              (WIFEXITED(status) ? std::to_string(WEXITSTATUS(status)) : std::string("by a signal")));
      on_drain_pid_ = -1;
    }
  }

  // kCannotTell: the server did not answer, or refused this key; waiting
  // on it would only wait out --drain-timeout-ms.
  enum class Picked { kYes, kNo, kUnknown, kCannotTell };

  // Whether the container may still hold a session. `available` counts as
  // picked: the draining report is not written yet, and a claim may come.
  Picked ReadPicked(std::string* why) {
    HttpReply r = Call("GET", "/v1/containers/" + PathSegment(cfg_.id));
    if (r.status == 404) return Picked::kNo;
    if (!r.answered() || r.status == 401 || r.status == 403) {
      *why = Describe(r);
      return Picked::kCannotTell;
    }
    if (r.status != 200) return Picked::kUnknown;
    json c = json::parse(r.body, nullptr, false);
    const std::string status = c.is_object() ? c.value("status", "") : "";
    return status == "draining" || status == "dead" ? Picked::kNo : Picked::kYes;
  }

  int DrainAndExit(int signo) {
    LogLine("agent: " + SignalName(signo) + ": " + cfg_.id +
            " reports draining; exiting once it is not picked, at most " +
            std::to_string(cfg_.drain_timeout_ms) + " ms");
    const int64_t deadline = base::SteadyNowMs() + cfg_.drain_timeout_ms;
    int64_t next_beat = base::SteadyNowMs();
    for (;;) {
      ReapOnDrain();
      if (base::SteadyNowMs() >= next_beat) next_beat = base::SteadyNowMs() + Beat("draining");
      std::string why;
      const Picked picked = ReadPicked(&why);
      if (picked == Picked::kNo && failures_ == 0) {
        LogLine("agent: " + cfg_.id + " is not picked; exiting");
        return 0;
      }
      if (picked == Picked::kCannotTell) {
        LogLine("agent: the server cannot tell whether " + cfg_.id + " is picked (" + why +
                "); exiting now");
        return 0;
      }
      const int64_t now = base::SteadyNowMs();
      if (now >= deadline) {
        LogLine("agent: --drain-timeout-ms passed; exiting");
        return 0;
      }
      if (int again = Sleep(std::min({kDrainPollMs, deadline - now, next_beat - now}))) {
        LogLine("agent: a second " + SignalName(again) + "; exiting now");
        return 0;
      }
    }
  }

  const AgentConfig& cfg_;
  const HttpUrl server_;
  sigset_t signals_;
  std::string reported_;  // the state of the last heartbeat taken
  int failures_ = 0;      // heartbeats failed in a row
  int64_t last_ts_ms_ = 0;   // the newest ts_ms sent and not refused
  bool ts_refused_ = false;  // the server refused the last ts_ms sent
  bool health_failing_ = false;
  bool operator_drain_ = false;
  bool unknown_ = false;  // the last reply named this id unknown
  pid_t on_drain_pid_ = -1;
};

}  // namespace

int RunAgent(const AgentConfig& cfg) {
  ConfigureLogging(cfg.log);
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  // Blocked, so that they wait for sigtimedwait between heartbeats instead
  // of killing the agent mid-report; StartShell unblocks them for children.
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  HttpUrl server;
  std::string error;
  if (!ParseHttpUrl(cfg.server, &server, &error)) {
    LogError("agent: --server: " + error);
    return 2;
  }
  return Agent(cfg, server).Run();
}

}  // namespace server
