#ifndef EDGEALLOC_ALLOCATOR_REGION_BACKUPS_H_
#define EDGEALLOC_ALLOCATOR_REGION_BACKUPS_H_

#include <cstdint>
#include <functional>
#include <map>
#include <stop_token>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "base/mutex.h"
#include "store/types.h"

namespace allocator {

// Each region's designated backup (--backup-region R=B): a claim tries its
// region, its fallback_regions, then its region's backup; while its region's
// heartbeat lag is past the bound, the backup first and the region not at
// all (RegionBackups).
using BackupMap = std::map<std::string, std::string>;

// The default bound on a region's heartbeat lag (--max-heartbeat-lag-ms).
inline constexpr int64_t kDefaultMaxHeartbeatLagMs = 2000;

// Adds one "R=B" to *map; "" if taken, else why not (no '=', an empty
// side, a region its own backup, a region given two backups).
std::string AddBackupRegion(std::string_view text, BackupMap* map);
// "" if following backups from any region never comes back to it, else
// the first cycle found, spelled "a -> b -> a": a claim would go round it.
std::string BackupCycle(const BackupMap& map);

// Which of a claim's regions served it (the 201's served_by).
enum class ServedBy { kHome, kFallback, kBackup };
const char* ServedByName(ServedBy served_by);

// One region's switch to its backup, with hysteresis so that a lag
// hovering about the bound does not flap: on the backup as soon as a lag
// sample is past max_lag_ms; home again only once every sample for
// max_lag_ms has been at most half of it. Not thread-safe.
class LagHysteresis {
 public:
  explicit LagHysteresis(int64_t max_lag_ms) : max_lag_ms_(max_lag_ms) {}
  // Takes a sample of the lag at steady `now_ms`; whether on the backup.
  bool Update(int64_t lag_ms, int64_t now_ms);
  bool on_backup() const { return on_backup_; }
  // Steady ms since the region is on its backup (0: home).
  int64_t since_ms() const { return on_backup_ ? since_ms_ : 0; }

 private:
  const int64_t max_lag_ms_;
  bool on_backup_ = false;
  int64_t since_ms_ = 0;
  int64_t calm_since_ms_ = -1;  // on the backup: the first of the samples <= half, or -1
};

// A region with a backup, as the dashboard and /metrics show it.
struct BackupState {
  std::string region, backup;
  int64_t lag_ms = 0;       // the latest sample
  bool on_backup = false;
  int64_t on_backup_ms = 0;  // how long it is on its backup, 0 if home
  uint64_t switches = 0;     // times it went to its backup
};

// The backups, and which regions are on theirs now. A thread samples the
// lag of every region that has a backup each refresh_ms(); a claim samples
// its own regions' as it is routed, so a claim never goes to a region whose
// lag is past the bound, however recent. Safe from any thread.
class RegionBackups {
 public:
  RegionBackups(BackupMap backups, int64_t max_lag_ms);
  RegionBackups(const RegionBackups&) = delete;
  RegionBackups& operator=(const RegionBackups&) = delete;
  ~RegionBackups() { Stop(); }

  // The lag of a region's heartbeats, in ms (the batcher's). Unset: no lag,
  // never on the backup. Set it before Start.
  void SetLag(std::function<int64_t(const std::string& region)> lag_ms) { lag_ms_ = std::move(lag_ms); }
  void Start();
  void Stop();

  // Adds the backup of req->region to its fallback_regions, last, unless
  // named already: the regions a claim may take a container of.
  void AddBackup(store::ClaimRequest* req) const;
  // The claim as it is tried now: each region it names in order, a region
  // on its backup replaced by that backup (followed while that one is on
  // its own), each region once. A region on its backup is never tried.
  store::ClaimRequest Routed(const store::ClaimRequest& req);
  // home when `served` is `home`, backup when it is home's backup (or that
  // one's, and so on), else fallback.
  ServedBy ServedByOf(const std::string& home, const std::string& served) const;

  bool empty() const { return backups_.empty(); }
  int64_t max_lag_ms() const { return max_lag_ms_; }
  // How often the thread samples: a quarter of the bound, in [10, 250] ms.
  int64_t refresh_ms() const;
  std::vector<BackupState> States() const;
  // Samples every region with a backup now (the thread's round; tests).
  void RefreshAll();

 private:
  // Whether `region` is on its backup, after a sample of its lag now.
  bool OnBackup(const std::string& region);
  std::string Resolve(const std::string& region);
  void Loop(std::stop_token stop);

  const BackupMap backups_;
  const int64_t max_lag_ms_;
  std::function<int64_t(const std::string&)> lag_ms_;
  mutable base::Mutex mu_;
  struct Region {
    explicit Region(int64_t max_lag_ms) : hysteresis(max_lag_ms) {}
    LagHysteresis hysteresis;
    int64_t lag_ms = 0;
    uint64_t switches = 0;
  };
  std::map<std::string, Region> regions_ GUARDED_BY(mu_);
  std::jthread thread_;
};

}  // namespace allocator

#endif  // EDGEALLOC_ALLOCATOR_REGION_BACKUPS_H_
