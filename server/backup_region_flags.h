#ifndef EDGEALLOC_SERVER_BACKUP_REGION_FLAGS_H_
#define EDGEALLOC_SERVER_BACKUP_REGION_FLAGS_H_

#include <CLI/CLI.hpp>

#include <string>

#include "server/config.h"

namespace server {

// --backup-region R=B (repeatable; in the config file, a table of them) and
// --max-heartbeat-lag-ms: each region's designated backup, and the lag of
// a region's heartbeats past which its claims go there
// (allocator/region_backups.h).
void AddBackupRegionFlags(CLI::App* serve, ServeConfig* s);

// Makes s->backup_regions of the flags' pairs; "" if they may serve, else
// the usage error (a malformed pair, a region given two backups, a cycle).
std::string FinishBackupRegions(ServeConfig* s);

}  // namespace server

#endif  // EDGEALLOC_SERVER_BACKUP_REGION_FLAGS_H_
