#include "store/postgres/db_clock.h"

#include <chrono>
#include <cstdio>

#include "base/clock.h"
#include "store/postgres/clock_sql.h"

namespace store {
namespace {

// The database read its clock somewhere in the round trip: taking its
// middle errs by half of it at most, and two readings' errors add up. Under
// the step tolerance (500 ms) with room to spare.
constexpr int64_t kMaxTrustedRoundTripMs = 300;

std::string Seconds(int64_t ms) {
  char text[32];
  snprintf(text, sizeof text, "%+.3f s", static_cast<double>(ms) / 1e3);
  return text;
}

}  // namespace

bool DbClockReading::trusted() const {
  return monotonic_after_ms - monotonic_before_ms < kMaxTrustedRoundTripMs;
}

Status ReadDbClock(PgConn* conn, DbClockReading* reading, bool with_shifts) {
  *reading = DbClockReading{};
  reading->wall_before_ms = base::NowMs();
  reading->monotonic_before_ms = base::SteadyNowMs();
  PgResult r;
  RETURN_IF_ERROR(conn->Run(with_shifts ? pgsql::kDbClockReading : pgsql::kDbClockMs, {}, &r));
  reading->monotonic_after_ms = base::SteadyNowMs();
  reading->wall_after_ms = base::NowMs();
  if (with_shifts) return TakeDbClockReading(r, reading);
  if (r.rows() != 1) return Status::IOError("the database's clock read returned no row");
  reading->db_ms = r.Int64(0, 0);
  return Status::Ok();
}

Status TakeDbClockReading(const PgResult& r, DbClockReading* reading) {
  if (r.rows() != 1) return Status::IOError("db_clock_shifts has no row; the schema is damaged");
  reading->db_ms = r.Int64(0, 0);
  reading->fleet_shifts = r.Int64(0, 1);
  reading->fleet_shifted_ms = r.Int64(0, 2);
  return Status::Ok();
}

int64_t DbClockSteps::Observe(const DbClockReading& reading, int64_t* expected_shifts) {
  base::MutexLock lock(&mu_);
  const int64_t monotonic = (reading.monotonic_before_ms + reading.monotonic_after_ms) / 2;
  if (known_ && monotonic < last_monotonic_ms_) {
    // Taken before the last one taken in (another writer's, concurrent):
    // taken in out of order, a step between the two would count twice.
    *expected_shifts = known_shifts_;
    return pending_ms_;
  }
  const int64_t step = tracker_.Observe(reading.db_ms, monotonic);
  last_db_ms_ = reading.db_ms;
  last_monotonic_ms_ = monotonic;
  if (!known_) {
    // The first reading: the rows are as the fleet left them.
    known_ = true;
  } else {
    const int64_t shifted_since = reading.fleet_shifted_ms - known_shifted_ms_;
    pending_ms_ += step - shifted_since;
    if (step != 0 && warn_) {
      warn_("the database's clock stepped " + Seconds(step) +
            " (against this node's monotonic clock)" +
            (shifted_since != 0 ? "; another node moved the stored instants by " +
                                      Seconds(shifted_since) + " for it"
                                : ""));
    }
  }
  known_shifts_ = reading.fleet_shifts;
  known_shifted_ms_ = reading.fleet_shifted_ms;
  // What is left within the tolerance is two readings' error, not a step.
  if (pending_ms_ <= tolerance_ms_ && pending_ms_ >= -tolerance_ms_) pending_ms_ = 0;
  *expected_shifts = known_shifts_;
  return pending_ms_;
}

void DbClockSteps::Applied(int64_t expected_shifts, int64_t shift_ms) {
  base::MutexLock lock(&mu_);
  if (known_shifts_ == expected_shifts) {
    // No reading since has counted this shift in.
    known_shifts_ = expected_shifts + 1;
    known_shifted_ms_ += shift_ms;
    pending_ms_ -= shift_ms;
  }
  applied_.fetch_add(1, std::memory_order_relaxed);
  if (warn_) {
    warn_("the database's clock stepped: lease ends, heartbeats and deaths on the database were "
          "moved by " + Seconds(shift_ms) +
          " (once for the fleet), so leases keep their length and silences their measure");
  }
}

int64_t DbClockSteps::Unshifted(const DbClockReading& reading) const {
  base::MutexLock lock(&mu_);
  if (!known_ || !reading.trusted()) return pending_ms_;
  const int64_t monotonic = (reading.monotonic_before_ms + reading.monotonic_after_ms) / 2;
  int64_t drift = (reading.db_ms - last_db_ms_) - (monotonic - last_monotonic_ms_);
  if (drift <= tolerance_ms_ && drift >= -tolerance_ms_) drift = 0;
  const int64_t unshifted = pending_ms_ + drift - (reading.fleet_shifted_ms - known_shifted_ms_);
  return unshifted <= tolerance_ms_ && unshifted >= -tolerance_ms_ ? 0 : unshifted;
}

bool DbClockSteps::pending() const {
  base::MutexLock lock(&mu_);
  return pending_ms_ != 0;
}

Status ClaimClockShift(PgConn* conn, int64_t expected_shifts, int64_t shift_ms) {
  PgResult claim;
  RETURN_IF_ERROR(conn->Run(pgsql::kClaimClockShift, {P(expected_shifts), P(shift_ms)}, &claim));
  if (claim.changed() != 1) {
    return Status::Busy("another node shifted for a step of the database's clock; next reading");
  }
  RETURN_IF_ERROR(conn->Run(pgsql::kShiftStoredInstants, {P(shift_ms)}));
  return conn->Run(pgsql::kShiftHeardUntil, {P(shift_ms)});
}

Status CheckDbClock(PgConn* conn, DbClockSteps* steps, DbClockReading* reading,
                    int64_t* expected_shifts, int64_t* shifted) {
  *shifted = 0;
  RETURN_IF_ERROR(ReadDbClock(conn, reading));
  if (!reading->trusted()) {
    return Status::Busy("the database's clock was read over a slow round trip; next reading");
  }
  const int64_t shift = steps->Observe(*reading, expected_shifts);
  if (shift == 0) return Status::Ok();
  RETURN_IF_ERROR(ClaimClockShift(conn, *expected_shifts, shift));
  *shifted = shift;
  return Status::Ok();
}

}  // namespace store
