#include "server/backup_region_flags.h"

#include "allocator/region_backups.h"
#include "server/cli_flags.h"

namespace server {

void AddBackupRegionFlags(CLI::App* serve, ServeConfig* s) {
  AddFlag(serve, "--backup-region", &s->backup_region_pairs,
          "REGION=BACKUP (repeat): the region's designated backup; a claim tries its region, "
          "its fallback_regions, then the region's backup, and the backup first (its region "
          "not at all) while the region's heartbeat lag is past --max-heartbeat-lag-ms; in the "
          "config file a table, [serve.backup-region] weur = \"eeur\"; no cycles")
      ->type_name("PAIR")
      ->delimiter(',');
  AddNumber(serve, "--max-heartbeat-lag-ms", &s->max_heartbeat_lag_ms,
            "a region with a backup whose oldest heartbeat not yet written is older than this "
            "has its claims go to the backup; they come home once its lag has stayed at most "
            "half of this for this long",
            1, kBigFlagValue, "heartbeat lag bound in ms");
}

std::string FinishBackupRegions(ServeConfig* s) {
  s->backup_regions.clear();
  for (const std::string& pair : s->backup_region_pairs) {
    if (pair.empty()) continue;  // backup-region = "" in a config file: none
    if (std::string error = allocator::AddBackupRegion(pair, &s->backup_regions); !error.empty()) {
      return "--backup-region: " + error;
    }
  }
  if (std::string cycle = allocator::BackupCycle(s->backup_regions); !cycle.empty()) {
    return "--backup-region: the backups go round in a cycle (" + cycle +
           "): a claim of its regions would go from backup to backup; break it";
  }
  return "";
}

}  // namespace server
