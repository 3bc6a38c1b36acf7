// load_fleet: writes a migrated edgealloc database holding N containers, fast,
// for the benches that ask what a claim costs as the pool grows (bench/
// scale.sh). A million containers through `edgealloc register` would be a
// 100 MB JSON file parsed into one transaction; this writes the same rows in
// seconds.
//
// The rows are the ones `edgealloc register` writes, by construction: the
// file is opened and migrated by store::OpenShardDb (the real schema, the
// shard layout check), and every row goes through store::sql::
// kUpsertContainer, the statement SqliteStorage::Register runs (then its
// copy of the attributes for the selectors), with the same binds (id,
// region, pool, latency_ms, data, now as the registration's heartbeat,
// slots, attributes). Only the batching differs: kBatchRows rows a
// transaction, on a connection with a large page cache and
// synchronous=NORMAL, checkpointed at the end so that the server starts on a
// file without a WAL to replay.
//
//   load_fleet --db /tmp/x.db bench:default:1000:c- fill:p0:999000:f-
//
// Each SPEC is region:pool:count:idprefix[:slots[:attributes]], like
// bench/lib.sh's Fleet: ids idprefix0.., latency_ms = i % --latency-mod,
// data {} or, with --data endpoint, {"endpoint":"ws://10.a.b.c:9222"} (a
// typical payload); slots 1 unless given; attributes none, or `gpu`:
// {"arch":"x86","gpu":"yes"} for even i, "no" for odd (bench/placement.sh's
// two-key selector matches half).
// Prints `name value unit` lines.

#include <sqlite3.h>

#include <chrono>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "base/clock.h"
#include "store/sqlite/db.h"
#include "store/sqlite/lifecycle_sql.h"
#include "store/sqlite/selector_sql.h"
#include "store/sqlite/shard.h"
#include "store/sqlite/shard_map.h"
#include "store/types.h"

namespace {

// Rows a transaction: big enough that the commits cost nothing next to the
// inserts, small enough that the WAL (auto-checkpointed after each commit)
// stays far below the size of the file.
constexpr int64_t kBatchRows = 100000;
// The loader's page cache, in KiB: every index of 1M rows fits, so index
// pages are written once a checkpoint, not re-read. Only this process.
constexpr int64_t kLoaderCacheKib = 512 * 1024;

struct Spec {
  std::string region, pool, prefix;
  int64_t count = 0;
  int64_t slots = 1;
  std::string attributes = "none";
};

bool ParseSpec(const std::string& text, Spec* out) {
  std::vector<std::string> parts;
  size_t start = 0;
  for (;;) {
    const size_t colon = text.find(':', start);
    parts.push_back(text.substr(start, colon == std::string::npos ? colon : colon - start));
    if (colon == std::string::npos) break;
    start = colon + 1;
  }
  if (parts.size() < 4 || parts.size() > 6 || parts[0].empty() || parts[1].empty()) return false;
  char* end = nullptr;
  const long long n = std::strtoll(parts[2].c_str(), &end, 10);
  if (end == parts[2].c_str() || *end != '\0' || n < 0) return false;
  *out = Spec{parts[0], parts[1], parts[3], n};
  if (parts.size() >= 5) {
    const long long slots = std::strtoll(parts[4].c_str(), &end, 10);
    if (end == parts[4].c_str() || *end != '\0' || slots < store::kMinSlots ||
        slots > store::kMaxSlots) {
      return false;
    }
    out->slots = slots;
  }
  if (parts.size() == 6) {
    if (parts[5] != "none" && parts[5] != "gpu") return false;
    out->attributes = parts[5];
  }
  return true;
}

std::string Data(const std::string& kind, int64_t i) {
  if (kind != "endpoint") return "{}";
  // What ParseRegistration would store for {"endpoint": "ws://..."}: the
  // object serialized compactly.
  return "{\"endpoint\":\"ws://10." + std::to_string((i >> 16) & 255) + "." +
         std::to_string((i >> 8) & 255) + "." + std::to_string(i & 255) + ":9222\"}";
}

// A container's attributes as Register stores them (a JSON object, keys
// sorted), or nullopt for none.
std::optional<std::string> Attributes(const std::string& kind, int64_t i) {
  if (kind != "gpu") return std::nullopt;
  return std::string("{\"arch\":\"x86\",\"gpu\":\"") + (i % 2 == 0 ? "yes" : "no") + "\"}";
}

void Die(const store::Status& s) {
  std::fprintf(stderr, "load_fleet: %s\n", s.ToString().c_str());
  std::exit(1);
}

}  // namespace

int main(int argc, char** argv) {
  std::string db_path;
  int shards = 1;
  int latency_mod = 50;
  std::string data = "endpoint";
  std::vector<std::string> spec_texts;
  CLI::App app{"writes a migrated edgealloc database of N containers (the rows of `register`)"};
  app.add_option("--db", db_path, "database file (its base name with --shards > 1)")->required();
  app.add_option("--shards", shards, "shard layout, as `edgealloc serve --shards`")
      ->check(CLI::Range(1, 64));
  app.add_option("--latency-mod", latency_mod, "latency_ms = i % this")->check(CLI::Range(1, 1 << 30));
  app.add_option("--data", data, "container data: {} or a typical endpoint")
      ->check(CLI::IsMember({"empty", "endpoint"}));
  app.add_option("specs", spec_texts, "region:pool:count:idprefix ...")->required();
  CLI11_PARSE(app, argc, argv);

  std::vector<Spec> specs;
  for (const std::string& t : spec_texts) {
    Spec s;
    if (!ParseSpec(t, &s)) {
      std::fprintf(stderr,
                   "load_fleet: bad spec '%s' (want region:pool:count:idprefix[:slots[:none|gpu]])\n",
                   t.c_str());
      return 2;
    }
    specs.push_back(s);
  }

  const auto t0 = std::chrono::steady_clock::now();
  store::ShardMap map(db_path, shards);
  store::DbOptions options;
  options.sync = store::Sync::kNormal;
  options.program = "load_fleet";
  std::vector<std::unique_ptr<store::Db>> dbs(shards);
  for (int i = 0; i < shards; ++i) {
    store::Status s = store::OpenShardDb(map, i, options, &dbs[i]);
    if (!s.ok()) Die(s);
    s = dbs[i]->Exec("PRAGMA cache_size=-" + std::to_string(kLoaderCacheKib));
    if (!s.ok()) Die(s);
    // A file being built needs no crash safety: one write per page, straight
    // into the file, instead of WAL then checkpoint, each fsynced.
    s = dbs[i]->Exec("PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF");
    if (!s.ok()) Die(s);
  }

  // The secondary indexes are dropped for the load and built again after it
  // from their own CREATE statements, read back from sqlite_schema (so the
  // real schema's, whatever version it is): one sort an index instead of a
  // B-tree insert a row and index. The PRIMARY KEY's index stays, so the
  // upsert still sees ids already stored.
  std::vector<std::vector<std::string>> indexes(shards);
  for (int i = 0; i < shards; ++i) {
    store::Status s;
    {
      store::StatementRef q;
      s = dbs[i]->Cached(
          "SELECT name, sql FROM sqlite_schema WHERE type = 'index' AND tbl_name = 'containers' "
          "AND sql IS NOT NULL",
          &q);
      if (!s.ok()) Die(s);
      for (;;) {
        bool row = false;
        s = q->Step(&row);
        if (!s.ok()) Die(s);
        if (!row) break;
        indexes[i].push_back(q->ColumnString(0));
        indexes[i].push_back(q->ColumnString(1));
      }
    }
    store::Transaction txn(dbs[i].get());
    s = txn.Begin();
    for (size_t k = 0; s.ok() && k < indexes[i].size(); k += 2) {
      s = dbs[i]->Exec("DROP INDEX \"" + indexes[i][k] + "\"");
    }
    if (s.ok()) s = txn.Commit();
    if (!s.ok()) Die(s);
  }

  // One open transaction a shard at a time, committed every kBatchRows rows
  // of that shard.
  std::vector<std::unique_ptr<store::Transaction>> txns(shards);
  std::vector<int64_t> in_txn(shards, 0);
  int64_t rows = 0;
  for (const Spec& spec : specs) {
    const int shard = map.ShardOf(spec.region);
    store::Db* db = dbs[shard].get();
    for (int64_t i = 0; i < spec.count; ++i) {
      store::Status s;
      if (txns[shard] == nullptr) {
        txns[shard] = std::make_unique<store::Transaction>(db);
        s = txns[shard]->Begin();
        if (!s.ok()) Die(s);
      }
      {
        store::StatementRef up;
        s = db->Cached(store::sql::kUpsertContainer, &up);
        if (!s.ok()) Die(s);
        up->Bind(1, spec.prefix + std::to_string(i));
        up->Bind(2, spec.region);
        up->Bind(3, spec.pool);
        up->Bind(4, static_cast<int64_t>(i % latency_mod));
        up->Bind(5, Data(data, i));
        up->Bind(6, base::NowMs());
        up->Bind(7, int64_t{0});  // one shard: its own token floor is enough
        up->Bind(8, spec.slots);
        const std::optional<std::string> attributes = Attributes(spec.attributes, i);
        if (attributes) {
          up->Bind(9, *attributes);
        } else {
          up->BindNull(9);
        }
        s = up->Run();
        if (!s.ok()) Die(s);
        // The selector's copy, as Register writes it (sqlite_storage_containers.cc).
        for (const char* copy : {store::sql::kDropAttributes, store::sql::kCopyAttributes}) {
          if (!attributes) break;
          store::StatementRef q;
          s = db->Cached(copy, &q);
          if (s.ok()) {
            q->Bind(1, spec.prefix + std::to_string(i));
            s = q->Run();
          }
          if (!s.ok()) Die(s);
        }
      }
      ++rows;
      if (++in_txn[shard] == kBatchRows) {
        s = txns[shard]->Commit();
        if (!s.ok()) Die(s);
        txns[shard].reset();
        in_txn[shard] = 0;
      }
    }
  }
  for (int i = 0; i < shards; ++i) {
    if (txns[i] == nullptr) continue;
    store::Status s = txns[i]->Commit();
    if (!s.ok()) Die(s);
    txns[i].reset();
  }
  for (int i = 0; i < shards; ++i) {
    store::Transaction txn(dbs[i].get());
    store::Status s = txn.Begin();
    for (size_t k = 1; s.ok() && k < indexes[i].size(); k += 2) s = dbs[i]->Exec(indexes[i][k]);
    if (s.ok()) s = txn.Commit();
    if (!s.ok()) Die(s);
  }
  const auto t1 = std::chrono::steady_clock::now();
  // Back to WAL, the mode the server expects (persistent in the file), and
  // everything on disk before the file is handed over.
  for (auto& db : dbs) {
    store::Status s = db->Exec("PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL");
    if (!s.ok()) Die(s);
  }
  dbs.clear();
  const auto t2 = std::chrono::steady_clock::now();
  const double insert_s = std::chrono::duration<double>(t1 - t0).count();
  std::printf("# sqlite %s, shards %d, sync normal while loading\n", sqlite3_libversion(), shards);
  std::printf("load_fleet_rows %lld count\n", static_cast<long long>(rows));
  std::printf("load_fleet_insert_seconds %.2f s\n", insert_s);
  std::printf("load_fleet_rows_per_s %.0f 1/s\n", insert_s > 0 ? rows / insert_s : 0.0);
  std::printf("load_fleet_seconds %.2f s\n", std::chrono::duration<double>(t2 - t0).count());
  return 0;
}
