#ifndef EDGEALLOC_STORE_POSTGRES_FENCE_H_
#define EDGEALLOC_STORE_POSTGRES_FENCE_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "base/mutex.h"
#include "store/status.h"

namespace store {

class PgConn;

// Where a primary stands in the database's history of failovers: the fence
// epoch its edgealloc_meta row 'fence' records, and the timeline it writes
// (a promotion starts a new one). Epoch 0: the database has no edgealloc
// schema yet.
struct FenceMark {
  int64_t epoch = 0;
  int64_t timeline = 0;
};

// A node's fence against an old primary that comes back after a failover
// (its failover manager was slow to stop it, or the connection string lists
// it first): one PgFence for all of a node's connections, checked on every
// connect and reconnect (PgConn::Open).
//
// The first connection to a primary whose timeline is not the one its fence
// row records (it was promoted since) bumps the epoch, in that database, so
// the promoted primary's epoch is above the old one's, whose row and
// timeline are unchanged. A node remembers the highest mark it has seen and
// refuses a server below it, or at its epoch on another timeline (two
// primaries promoted from one), before writing anything there, the bump
// included: the old primary is only read. A node that has seen nothing
// learns the marks of every host its connection string lists, standbys
// included, before it connects (Learn).
class PgFence {
 public:
  // `warn` is told of each bump and of refusals (once a minute for the same).
  explicit PgFence(std::function<void(const std::string&)> warn = {}) : warn_(std::move(warn)) {}

  // Ok and remembered if `server` (read at `where`, "host:port") is not
  // below what this node has seen; else IOError "unavailable: fenced: ..."
  // (IsFenced) that says what, counted in refusals().
  Status Admit(const FenceMark& server, const std::string& where);
  // Raises what this node has seen to `mark`, if above (Learn's findings).
  void Raise(const FenceMark& mark);
  FenceMark seen() const;
  uint64_t refusals() const { return refusals_.load(std::memory_order_relaxed); }
  // Reads the mark of every host `uri` lists (a standby's replicated row; a
  // primary's row, or its bump to come), without writing, and raises the
  // seen mark to the highest. Hosts that do not answer within `timeout_s`
  // are skipped. Nothing to learn from one host: a no-op then.
  void Learn(const std::string& uri, int timeout_s = 2);
  // Logs that the primary at `where` was promoted: epoch `from` to `to`.
  void Bumped(const FenceMark& from, const FenceMark& to, const std::string& where);

 private:
  const std::function<void(const std::string&)> warn_;
  std::atomic<uint64_t> refusals_{0};
  mutable base::Mutex mu_;
  FenceMark seen_ GUARDED_BY(mu_);
  std::string last_warned_ GUARDED_BY(mu_);
  int64_t last_warned_ms_ GUARDED_BY(mu_) = 0;
};

// Whether a connect failed because the fence refused the server.
inline bool IsFenced(const Status& s) {
  return s.message().find("fenced:") != std::string::npos;
}

// On a fresh connection to a primary: its mark, bumping the epoch first if
// it was promoted since the row was written (only once `fence` admits the
// mark that bump would make). `where` names the server in messages.
Status CheckFence(PgConn* conn, PgFence* fence, const std::string& where);

// `uri` (a libpq URI or key=value words) once per host it lists, each with
// that host alone (and its port), as key=value words; `uri` itself if it
// lists one host, nothing if libpq cannot parse it.
std::vector<std::string> SingleHostConninfos(const std::string& uri);

}  // namespace store

#endif  // EDGEALLOC_STORE_POSTGRES_FENCE_H_
