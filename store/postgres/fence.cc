#include "store/postgres/fence.h"

#include <libpq-fe.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <memory>
#include <optional>

#include "base/clock.h"
#include "store/postgres/pg.h"

namespace store {
namespace {

// The timeline this primary writes: the first 8 hex digits of its current
// WAL file's name. Unlike pg_control_checkpoint()'s, it is the new one as
// soon as a promotion ends, not after the next checkpoint. Any role may ask.
#define EDGEALLOC_PG_TIMELINE \
  "('x' || substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8))::bit(32)::bigint"
// Whether the fence row can be read: a role that may not read edgealloc's
// tables is told what it lacks by MigrateSchema, not by the fence.
#define EDGEALLOC_PG_META_READABLE                                      \
  "CASE WHEN to_regclass('edgealloc_meta') IS NULL THEN false "         \
  "ELSE has_table_privilege(to_regclass('edgealloc_meta'), 'SELECT') END"
constexpr char kFenceTimeline[] =
    "SELECT " EDGEALLOC_PG_TIMELINE ", " EDGEALLOC_PG_META_READABLE;
// Learn's: a standby too (its timeline is not asked, only its replicated row).
constexpr char kFenceLearn[] =
    "SELECT pg_is_in_recovery(), CASE WHEN pg_is_in_recovery() THEN 0 ELSE " EDGEALLOC_PG_TIMELINE
    " END, " EDGEALLOC_PG_META_READABLE;
#undef EDGEALLOC_PG_TIMELINE
#undef EDGEALLOC_PG_META_READABLE
constexpr char kFenceRow[] = "SELECT value FROM edgealloc_meta WHERE key = 'fence'";
// The value is "EPOCH TIMELINE"; a bump is a compare-and-swap on it, so of
// nodes connecting together one bumps and the others read its bump.
constexpr char kFenceInsert[] =
    "INSERT INTO edgealloc_meta (key, value) VALUES ('fence', $1) ON CONFLICT (key) DO NOTHING";
constexpr char kFenceBump[] = "UPDATE edgealloc_meta SET value = $2 WHERE key = 'fence' AND value = $1";

constexpr int64_t kRewarnMs = 60000;

std::string Text(const FenceMark& m) {
  return std::to_string(m.epoch) + " " + std::to_string(m.timeline);
}

std::string Describe(const FenceMark& m) {
  return "fence epoch " + std::to_string(m.epoch) + " (timeline " + std::to_string(m.timeline) +
         ")";
}

std::optional<FenceMark> Parse(std::string_view value) {
  const std::string text(value);
  char* end = nullptr;
  FenceMark m;
  m.epoch = std::strtoll(text.c_str(), &end, 10);
  if (end == text.c_str() || *end != ' ') return std::nullopt;
  const char* rest = end + 1;
  m.timeline = std::strtoll(rest, &end, 10);
  if (end == rest || *end != '\0' || m.epoch < 1) return std::nullopt;
  return m;
}

// The row's mark; nullopt if there is none yet; an error if it is not ours.
Status ReadRow(PgConn* conn, std::optional<FenceMark>* recorded) {
  PgResult row;
  RETURN_IF_ERROR(conn->Run(kFenceRow, {}, &row));
  recorded->reset();
  if (row.rows() == 0) return Status::Ok();
  *recorded = Parse(row.Text(0, 0));
  if (!*recorded) {
    return Status::IOError("edgealloc_meta's fence row reads '" + row.String(0, 0) +
                           "', not 'EPOCH TIMELINE'");
  }
  return Status::Ok();
}

bool Below(const FenceMark& a, const FenceMark& b) {
  return a.epoch < b.epoch || (a.epoch == b.epoch && a.timeline < b.timeline);
}

}  // namespace

Status PgFence::Admit(const FenceMark& server, const std::string& where) {
  base::MutexLock lock(&mu_);
  std::string why;
  if (server.epoch == 0 && seen_.epoch > 0) {
    why = "has no edgealloc schema";
  } else if (server.epoch < seen_.epoch) {
    why = "is at " + Describe(server) + ", below the " + Describe(seen_) + " this node has seen";
  } else if (server.epoch == seen_.epoch && server.epoch > 0 && server.timeline != seen_.timeline) {
    why = "is at " + Describe(server) + ", another timeline than the " + Describe(seen_) +
          " this node has seen (two primaries promoted from one?)";
  }
  if (why.empty()) {
    if (Below(seen_, server)) seen_ = server;
    last_warned_.clear();
    return Status::Ok();
  }
  refusals_.fetch_add(1, std::memory_order_relaxed);
  const std::string message =
      "fenced: the PostgreSQL primary at " + where + " " + why +
      "; an old primary back after a failover? Nothing is written there; this node waits for "
      "the current primary (fence it or rebuild it as a standby: pg_rewind)";
  const int64_t now = base::SteadyNowMs();
  if (warn_ && (message != last_warned_ || now - last_warned_ms_ >= kRewarnMs)) {
    last_warned_ = message;
    last_warned_ms_ = now;
    warn_(message);
  }
  return Status::IOError("unavailable: " + message);
}

void PgFence::Raise(const FenceMark& mark) {
  base::MutexLock lock(&mu_);
  if (Below(seen_, mark)) seen_ = mark;
}

FenceMark PgFence::seen() const {
  base::MutexLock lock(&mu_);
  return seen_;
}

void PgFence::Bumped(const FenceMark& from, const FenceMark& to, const std::string& where) {
  if (!warn_) return;
  warn_("the PostgreSQL primary at " + where + " was promoted (timeline " +
        std::to_string(from.timeline) + " to " + std::to_string(to.timeline) +
        "): fence epoch " + std::to_string(from.epoch) + " is now " + std::to_string(to.epoch) +
        "; nodes that saw it refuse the old primary");
}

Status CheckFence(PgConn* conn, PgFence* fence, const std::string& where) {
  PgResult now;
  RETURN_IF_ERROR(conn->Run(kFenceTimeline, {}, &now));
  if (now.rows() != 1) return Status::IOError("the timeline query returned no row");
  const int64_t timeline = now.Int64(0, 0);
  // No schema yet (a new database, which the migration gives a row), or
  // none this role may read.
  if (now.Text(0, 1) != "t") return fence->Admit({0, timeline}, where);
  constexpr int kAttempts = 3;
  for (int attempt = 0; attempt < kAttempts; ++attempt) {
    std::optional<FenceMark> recorded;
    RETURN_IF_ERROR(ReadRow(conn, &recorded));
    if (recorded && recorded->timeline == timeline) return fence->Admit(*recorded, where);
    const FenceMark next{recorded ? recorded->epoch + 1 : 1, timeline};
    // Admitted before anything is written: an old primary is only read.
    RETURN_IF_ERROR(fence->Admit(next, where));
    PgResult written;
    RETURN_IF_ERROR(recorded ? conn->Run(kFenceBump, {Text(*recorded), Text(next)}, &written)
                             : conn->Run(kFenceInsert, {Text(next)}, &written));
    if (written.changed() == 1) {
      if (recorded) fence->Bumped(*recorded, next, where);
      return Status::Ok();
    }
    // Another node wrote it first: read what it wrote.
  }
  return Status::Busy("the fence row kept changing while this node read it");
}

void PgFence::Learn(const std::string& uri, int timeout_s) {
  const std::vector<std::string> hosts = SingleHostConninfos(uri);
  if (hosts.size() < 2) return;
  for (const std::string& host : hosts) {
    std::unique_ptr<PgConn> conn;
    const std::string conninfo = host + " connect_timeout=" + std::to_string(timeout_s);
    if (!PgConn::ConnectAny(conninfo, "edgealloc fence", &conn).ok()) continue;
    conn->set_io_timeout_ms(int64_t{timeout_s} * 1000);
    PgResult r;
    if (!conn->Run(kFenceLearn, {}, &r).ok() || r.rows() != 1 || r.Text(0, 2) != "t") continue;
    const bool standby = r.Text(0, 0) == "t";
    const int64_t timeline = r.Int64(0, 1);
    std::optional<FenceMark> recorded;
    if (!ReadRow(conn.get(), &recorded).ok()) continue;
    if (standby) {
      if (recorded) Raise(*recorded);
    } else if (recorded && recorded->timeline != timeline) {
      Raise({recorded->epoch + 1, timeline});  // the bump its first connect makes
    } else {
      Raise(recorded ? *recorded : FenceMark{1, timeline});
    }
  }
}

std::vector<std::string> SingleHostConninfos(const std::string& uri) {
  char* error = nullptr;
  PQconninfoOption* options = PQconninfoParse(uri.c_str(), &error);
  if (error != nullptr) PQfreemem(error);
  if (options == nullptr) return {};
  const auto split = [](const char* list) {
    std::vector<std::string> items;
    if (list == nullptr) return items;
    std::string item;
    for (const char* c = list;; ++c) {
      if (*c == ',' || *c == '\0') {
        items.push_back(item);
        item.clear();
        if (*c == '\0') break;
      } else {
        item.push_back(*c);
      }
    }
    return items;
  };
  std::vector<std::string> hosts, addrs, ports;
  for (PQconninfoOption* o = options; o->keyword != nullptr; ++o) {
    const std::string key = o->keyword;
    if (key == "host") hosts = split(o->val);
    if (key == "hostaddr") addrs = split(o->val);
    if (key == "port") ports = split(o->val);
  }
  const size_t n = std::max(hosts.size(), addrs.size());
  std::vector<std::string> out;
  if (n < 2) out.push_back(uri);
  const auto quoted = [](const std::string& v) {
    std::string q = "'";
    for (char c : v) {
      if (c == '\'' || c == '\\') q.push_back('\\');
      q.push_back(c);
    }
    return q + "'";
  };
  const auto nth = [](const std::vector<std::string>& list, size_t i) {
    return list.size() == 1 ? list[0] : (i < list.size() ? list[i] : std::string());
  };
  for (size_t i = 0; n >= 2 && i < n; ++i) {
    std::string words;
    for (PQconninfoOption* o = options; o->keyword != nullptr; ++o) {
      if (o->val == nullptr) continue;
      const std::string key = o->keyword;
      std::string value = o->val;
      if (key == "host") value = nth(hosts, i);
      if (key == "hostaddr") value = nth(addrs, i);
      if (key == "port") value = nth(ports, i);
      if (value.empty() && (key == "host" || key == "hostaddr" || key == "port")) continue;
      if (!words.empty()) words.push_back(' ');
      words += key + "=" + quoted(value);
    }
    out.push_back(words);
  }
  PQconninfoFree(options);
  return out;
}

}  // namespace store
