#ifndef EDGEALLOC_STORE_POSTGRES_DB_CLOCK_H_
#define EDGEALLOC_STORE_POSTGRES_DB_CLOCK_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>

#include "base/mutex.h"
#include "store/clock_steps.h"
#include "store/postgres/pg.h"
#include "store/status.h"

namespace store {

// One reading of the database's clock (pgsql::kDbClockReading): its value,
// this node's clocks before and after the round trip, and the fleet's
// record of the shifts applied so far (db_clock_shifts) as of the statement.
struct DbClockReading {
  int64_t db_ms = 0;
  int64_t wall_before_ms = 0, wall_after_ms = 0;            // base::NowMs
  int64_t monotonic_before_ms = 0, monotonic_after_ms = 0;  // steady_clock
  int64_t fleet_shifts = 0;      // shifts applied by any node, ever
  int64_t fleet_shifted_ms = 0;  // their sum
  // A round trip this long or longer says too little of when the database
  // read its clock to tell a step from it.
  bool trusted() const;
};

// Reads the database's clock on `conn` (inside a transaction or not), and
// the fleet's record of shifts if `with_shifts` (else left 0).
Status ReadDbClock(PgConn* conn, DbClockReading* reading, bool with_shifts = true);
// Fills *reading's database side from pgsql::kDbClockReading's result.
Status TakeDbClockReading(const PgResult& r, DbClockReading* reading);

// Steps of the database host's wall clock, as this node sees them through
// its readings (ClockStepTracker against its own monotonic clock), and the
// shift of the stored instants that answers each step, made once for the
// fleet: every node on the database sees the same step, so the shift is
// claimed by a compare-and-set of db_clock_shifts' count in the transaction
// that moves the rows (ApplyShift). A node's readings subtract what the
// fleet shifted since its last one from what it saw step, so a node that
// saw a step another node already shifted for (or was paused across it)
// shifts nothing and goes on from the shifted rows. One for a node, shared
// by its writers. Thread-safe.
class DbClockSteps {
 public:
  explicit DbClockSteps(std::function<void(const std::string&)> warn = {},
                        int64_t tolerance_ms = kClockStepToleranceMs)
      : warn_(std::move(warn)), tolerance_ms_(tolerance_ms), tracker_(tolerance_ms) {}

  // Takes a trusted reading. Returns the shift this node should make now
  // (0: none due), and in *expected_shifts the fleet's count its
  // compare-and-set expects.
  int64_t Observe(const DbClockReading& reading, int64_t* expected_shifts);
  // The shift Observe proposed was committed by this node.
  void Applied(int64_t expected_shifts, int64_t shift_ms);
  // How far `reading` (a read's, not taken in) is ahead of the clock the
  // stored rows are on, as far as this node can tell: a step seen in it or
  // before it that no one has shifted for yet (0: none). A read judges a
  // lease by the database's now less this, as SQLite's reads take the
  // clock as it was until the shift.
  int64_t Unshifted(const DbClockReading& reading) const;
  // Whether a step this node saw is not yet shifted for (by anyone, as far
  // as its last reading knows): nothing may be judged on the clock then.
  bool pending() const;
  // Steps of the database's clock this node shifted the stored instants
  // for (each step once in the fleet: summed over nodes, the fleet's).
  uint64_t applied() const { return applied_.load(std::memory_order_relaxed); }

 private:
  const std::function<void(const std::string&)> warn_;
  const int64_t tolerance_ms_;
  mutable base::Mutex mu_;
  ClockStepTracker tracker_ GUARDED_BY(mu_);
  bool known_ GUARDED_BY(mu_) = false;
  int64_t last_db_ms_ GUARDED_BY(mu_) = 0;         // the last reading taken in,
  int64_t last_monotonic_ms_ GUARDED_BY(mu_) = 0;  // at the middle of its round trip
  int64_t known_shifts_ GUARDED_BY(mu_) = 0;
  int64_t known_shifted_ms_ GUARDED_BY(mu_) = 0;
  // Steps seen less what the fleet shifted since: what is still to shift.
  int64_t pending_ms_ GUARDED_BY(mu_) = 0;
  std::atomic<uint64_t> applied_{0};
};

// In `conn`'s open transaction: claims the shift for the fleet (the count
// of db_clock_shifts still `expected_shifts`) and moves the stored instants
// by `shift_ms`. Busy when another node shifted first.
Status ClaimClockShift(PgConn* conn, int64_t expected_shifts, int64_t shift_ms);

// In `conn`'s open transaction: a reading, and the shift it calls for, if
// any, claimed for the fleet (db_clock_shifts) and applied to the stored
// instants. Ok with *shifted (what to tell DbClockSteps::Applied after the
// commit; 0: nothing shifted here) when the clock may be judged by the rest
// of the transaction; Busy when it may not (the reading was not trusted, or
// a step is due and another transaction claimed the shift first: the next
// reading sees it). *reading: the reading taken.
Status CheckDbClock(PgConn* conn, DbClockSteps* steps, DbClockReading* reading,
                    int64_t* expected_shifts, int64_t* shifted);

}  // namespace store

#endif  // EDGEALLOC_STORE_POSTGRES_DB_CLOCK_H_
