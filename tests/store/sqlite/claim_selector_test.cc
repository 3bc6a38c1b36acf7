#include "store/sqlite/claim_selector.h"

#include <atomic>
#include <catch2/catch.hpp>
#include <map>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "base/clock.h"
#include "store/selector.h"
#include "store/sqlite/claim_sql.h"
#include "store/sqlite/schema.h"
#include "store/sqlite/selector_sql.h"
#include "store/storage.h"
#include "tests/store/sqlite/query_plan.h"
#include "tests/support/await.h"
#include "tests/support/engines.h"
#include "tests/support/pool_fixture.h"
#include "tests/support/db_queries.h"
#include "tests/support/requests.h"
#include "tests/support/temp_dir.h"

namespace {

using store::Outcome;
using testing::Await;
using testing::PlanOf;

// A line of `plan` that reads a table whole, or a whole index of one: what
// a claim must never do with a million containers. The selector's own JSON
// (json_each, a virtual table) and its terms materialized from it
// (other_terms, other_keys) are scans of a few terms, and candidate_pool
// of the K candidates, not of a table.
bool ScansATable(const std::string& plan) {
  std::istringstream lines(plan);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.rfind("SCAN ", 0) == 0 && line.find("VIRTUAL TABLE") == std::string::npos &&
        line != "SCAN candidate_pool" && line != "SCAN other_terms" && line != "SCAN other_keys") {
      return true;
    }
  }
  return false;
}

// How the candidates are found: the plan's lines from candidate_pool's
// co-routine to the scan of what it yields (the random pick after it sorts
// the K, whatever finds them).
std::string CandidatesOf(const std::string& plan) {
  const size_t from = plan.find("CO-ROUTINE candidate_pool");
  return from == std::string::npos ? "" : plan.substr(from, plan.find("SCAN candidate_pool") - from);
}

// The first line of `plan` that reads JSON (json_each, a virtual table)
// inside a correlated subquery, run again for each row the walk passes;
// empty if none does. Its JSON may be read only where the selector's other
// terms are materialized, or in a list subquery of the driving term's
// values, each read once a statement.
std::string JsonReadPerCandidate(const std::string& plan) {
  std::istringstream lines(plan);
  std::string line, block;
  while (std::getline(lines, line)) {
    if (line.find("SUBQUERY") != std::string::npos || line.rfind("MATERIALIZE ", 0) == 0 ||
        line.rfind("CO-ROUTINE ", 0) == 0) {
      block = line;
    } else if (line.find("VIRTUAL TABLE") != std::string::npos &&
               block != "MATERIALIZE other_terms" && block.rfind("LIST SUBQUERY", 0) != 0) {
      return block + ": " + line;
    }
  }
  return "";
}

// The walk of the driving term's open rows (a selector's claim), and of
// all its rows (the no_match read).
constexpr char kOpenSearch[] =
    "SEARCH a USING COVERING INDEX container_attributes_open (region=? AND pool=? AND key=? AND "
    "value=?)";
constexpr char kAttributeSearch[] =
    "SEARCH a USING COVERING INDEX container_attributes_claim (region=? AND pool=? AND key=? AND "
    "value=?)";

// The claim statement of `selector` under `placement`.
const char* Selected(store::Placement placement, std::vector<store::SelectorTerm> selector) {
  store::ClaimRequest req;
  req.selector = std::move(selector);
  return store::ClaimStatement(req, placement, store::DrivingTerm(req.selector));
}

using store::Placement;
const std::vector<store::SelectorTerm> kOneValue = {{"chrome", {"126"}}, {"gpu", {"a100"}}};
const std::vector<store::SelectorTerm> kValues = {{"chrome", {"125", "126"}},
                                                  {"gpu", {"a100", "t4"}}};

}  // namespace

TEST_CASE("claim_selector: a selector's claim finds its candidates through the attribute index "
          "of its driving term, each container by its key, never a scan of the pool") {
  const std::string one = PlanOf(Selected(Placement::kFittest, kOneValue));
  INFO(one);
  // One value: the index walk is in latency order, so it stops after K.
  CHECK(CandidatesOf(one).find(kOpenSearch) != std::string::npos);
  CHECK(CandidatesOf(one).find("TEMP B-TREE FOR ORDER BY") == std::string::npos);
  CHECK(one.find("SEARCH c USING INDEX sqlite_autoindex_containers_1 (id=?)") !=
        std::string::npos);
  CHECK(one.find("containers_claimable") == std::string::npos);
  CHECK_FALSE(ScansATable(one));
  // Several values: one range each, then sorted (a range of the matching ones only).
  const std::string several = PlanOf(Selected(Placement::kFittest, kValues));
  INFO(several);
  CHECK(CandidatesOf(several).find(kOpenSearch) != std::string::npos);
  CHECK(several.find("containers_claimable") == std::string::npos);
  CHECK_FALSE(ScansATable(several));
  // Every other term is checked by the attribute table's primary key.
  CHECK(one.find("SEARCH m USING PRIMARY KEY (container_id=? AND key=?)") != std::string::npos);
  CHECK(several.find("SEARCH m USING PRIMARY KEY (container_id=? AND key=?)") !=
        std::string::npos);
}

TEST_CASE("claim_selector: a fittest claim with a selector has an open-rows form, whose "
          "candidates are the open rows alone, and only its pick is looked up") {
  store::ClaimRequest req;
  req.selector = kOneValue;
  const char* open_rows = store::OpenRowsClaimStatement(req, Placement::kFittest, 0);
  REQUIRE(open_rows != nullptr);
  CHECK(open_rows == store::OpenRowsClaimStatement(req, Placement::kFittest, 0));  // kept
  CHECK(open_rows != store::ClaimStatement(req, Placement::kFittest, 0));
  const std::string plan = PlanOf(open_rows);
  INFO(plan);
  CHECK(CandidatesOf(plan).find(kOpenSearch) != std::string::npos);
  CHECK(CandidatesOf(plan).find("SEARCH m USING PRIMARY KEY (container_id=? AND key=?)") !=
        std::string::npos);
  CHECK(CandidatesOf(plan).find("containers") == std::string::npos);  // no lookup a candidate
  CHECK(CandidatesOf(plan).find("TEMP B-TREE FOR ORDER BY") == std::string::npos);
  CHECK(plan.find("SEARCH containers USING INDEX sqlite_autoindex_containers_1 (id=?)") !=
        std::string::npos);  // the pick, once
  CHECK_FALSE(ScansATable(plan));
  CHECK(JsonReadPerCandidate(plan).empty());
  const std::string text = open_rows;
  INFO(text);
  CHECK(text.find("AND region = ?1 AND pool = ?2 AND status = 'available' AND "
                  "last_heartbeat_ms >= ?3") != std::string::npos);
  req.selector = kValues;
  CHECK_FALSE(ScansATable(PlanOf(store::OpenRowsClaimStatement(req, Placement::kFittest, 0))));
  // None where the order is the container's own, or there is no selector.
  CHECK(store::OpenRowsClaimStatement(req, Placement::kPacked, 0) == nullptr);
  CHECK(store::OpenRowsClaimStatement(req, Placement::kDistributed, 0) == nullptr);
  req.placement = Placement::kPacked;
  CHECK(store::OpenRowsClaimStatement(req, Placement::kFittest, 0) == nullptr);
  CHECK(store::OpenRowsClaimStatement(store::ClaimRequest{}, Placement::kFittest, 0) == nullptr);
}

TEST_CASE("claim_selector: the selector's JSON is read once a claim, never once a candidate") {
  std::vector<const char*> statements = {store::sql::kAnySelectorMatch};
  for (Placement p : {Placement::kFittest, Placement::kPacked, Placement::kDistributed}) {
    statements.push_back(Selected(p, kOneValue));
    statements.push_back(Selected(p, kValues));
  }
  for (const char* sql : statements) {
    const std::string plan = PlanOf(sql);
    INFO(plan);
    CHECK(JsonReadPerCandidate(plan).empty());
  }
  CHECK(PlanOf(store::sql::kAnySelectorMatch).find("MATERIALIZE other_terms") !=
        std::string::npos);
}

TEST_CASE("claim_selector: the no_match read walks the attribute index, not the pool") {
  const std::string plan = PlanOf(store::sql::kAnySelectorMatch);
  INFO(plan);
  CHECK(plan.find(kAttributeSearch) != std::string::npos);
  CHECK_FALSE(ScansATable(plan));
}

TEST_CASE("claim_selector: the statement follows the placement and the selector's shape") {
  store::ClaimRequest req;
  CHECK(store::ClaimStatement(req, Placement::kFittest, 0) ==
        static_cast<const char*>(store::sql::kClaimFittest));
  CHECK(store::ClaimStatement(req, Placement::kPacked, 0) ==
        static_cast<const char*>(store::sql::kClaimPacked));
  req.placement = Placement::kDistributed;  // the claim's own wins over the server's
  CHECK(store::ClaimStatement(req, Placement::kPacked, 0) ==
        static_cast<const char*>(store::sql::kClaimDistributed));
  // One text a shape, kept: the same address for other names and values.
  const char* one = Selected(Placement::kFittest, kOneValue);
  CHECK(one == Selected(Placement::kFittest, {{"os", {"linux"}}, {"zone", {"b"}}}));
  CHECK(one != Selected(Placement::kPacked, kOneValue));
  CHECK(one != Selected(Placement::kFittest, kValues));
  CHECK(one != Selected(Placement::kFittest, {{"os", {"linux"}}}));
  const std::string text = one;
  INFO(text);
  CHECK(text.find("a.value = ?13 AND a.open = 1") != std::string::npos);
  CHECK(text.find("m.key = ?15 AND m.value = ?16)") != std::string::npos);
  CHECK(text.find("?17") == std::string::npos);
  // The driving term has several values (?13 a list), and so does the other.
  const std::string several = Selected(Placement::kDistributed, kValues);
  INFO(several);
  CHECK(several.find("a.value IN (SELECT value FROM json_each(?13))") != std::string::npos);
  CHECK(several.find("m.value IN (SELECT value FROM json_each(?16))") != std::string::npos);
  // Past three other terms, every one is checked against a list, so the
  // shapes are bounded whatever the selectors.
  std::vector<store::SelectorTerm> five;
  for (const char* key : {"a", "b", "c", "d", "e"}) five.push_back({key, {"x"}});
  const std::string lists = Selected(Placement::kFittest, five);
  INFO(lists);
  CHECK(lists.find("a.value = ?13") != std::string::npos);
  CHECK(lists.find("m.value IN (SELECT value FROM json_each(?22))") != std::string::npos);
  CHECK(lists.find("m.value = ?") == std::string::npos);
}

TEST_CASE("claim_selector: packed and distributed claims with a selector walk the attribute "
          "index too, never the pool") {
  for (const char* sql :
       {Selected(Placement::kPacked, kOneValue), Selected(Placement::kDistributed, kOneValue),
        Selected(Placement::kPacked, kValues), Selected(Placement::kDistributed, kValues)}) {
    const std::string plan = PlanOf(sql);
    INFO(plan);
    CHECK(CandidatesOf(plan).find(kOpenSearch) != std::string::npos);
    CHECK(plan.find("containers_claimable") == std::string::npos);
    CHECK(plan.find("containers_packing") == std::string::npos);
    CHECK_FALSE(ScansATable(plan));
  }
}

TEST_CASE("claim_selector: a claim's course through shards ends no_match only if no shard "
          "matched") {
  using store::Outcome;
  bool matched = false;
  Outcome o = Outcome::kNoMatch;
  CHECK(store::TryNextShard(&o, /*more_shards=*/true, &matched));
  o = Outcome::kNoCapacity;
  CHECK(store::TryNextShard(&o, true, &matched));
  CHECK(matched);
  o = Outcome::kNoMatch;
  CHECK_FALSE(store::TryNextShard(&o, false, &matched));
  CHECK(o == Outcome::kNoCapacity);
  bool none = false;
  o = Outcome::kNoMatch;
  CHECK_FALSE(store::TryNextShard(&o, false, &none));
  CHECK(o == Outcome::kNoMatch);
  o = Outcome::kOk;
  CHECK_FALSE(store::TryNextShard(&o, true, &none));
}

TEST_CASE("claim_selector: a packed claim seeks the fullest count, then its containers in latency "
          "order, never sorting the pool's idle ones") {
  const std::string plan = PlanOf(store::sql::kClaimPacked);
  INFO(plan);
  // Walked `slots_used DESC, latency_ms` in one go, the index gave latency
  // backwards and SQLite sorted the idle containers on most claims.
  CHECK(plan.find("SEARCH containers USING INDEX containers_packing (region=? AND pool=? AND "
                  "slots_used=?)") != std::string::npos);
  CHECK(plan.find("SCAN containers") == std::string::npos);
}

namespace {

// How many attribute rows of the file at `path` are closed while their
// container is available: hidden from every selector. (Open while it is not
// is allowed: a claim without a selector leaves them so, and the walk
// checks the container anyway.)
int64_t OpenMismatches(const std::string& path, std::string* example) {
  store::DbOptions options;
  options.read_only = true;
  std::unique_ptr<store::Db> db;
  REQUIRE(store::Db::Open(path, options, &db).ok());
  store::StatementRef q;
  REQUIRE(db->Cached(R"sql(
SELECT a.container_id, a.key, a.open, c.status FROM container_attributes a
JOIN containers c ON c.id = a.container_id
WHERE a.open = 0 AND c.status = 'available'
)sql",
                     &q)
              .ok());
  int64_t n = 0;
  for (bool row = true;;) {
    REQUIRE(q->Step(&row).ok());
    if (!row) return n;
    if (n++ == 0) {
      *example = q->ColumnString(0) + " " + q->ColumnString(1) + " open=" +
                 std::to_string(q->ColumnInt64(2)) + " status=" + q->ColumnString(3);
    }
  }
}

}  // namespace

// A selector walks only the attribute rows marked open (schema version
// 18), which no trigger keeps: every statement that may make a container
// available is followed by its own sync. A random walk of every operation
// that writes a status (claims of every placement with and without
// selectors, releases, expiries, reports of each state, drains, undrains,
// deaths, re-registrations that change slots or attributes, deletes), the
// file checked after each step: a path that forgot its sync leaves an
// available container's rows closed, hidden from every selector.
TEST_CASE("claim_selector: no available container's attribute rows are ever closed, through a "
          "random walk of every operation") {
  testing::Engine e("sqlite");
  store::Storage* s = e.storage.get();
  std::mt19937 rng(20261130);
  auto pick = [&](size_t n) { return static_cast<size_t>(rng() % n); };
  const std::vector<std::string> ids = {"c0", "c1", "c2", "c3", "c4", "c5", "c6", "c7"};
  auto reg = [&](const std::string& id) {
    store::ContainerSpec spec = testing::Spec(id, "weur", "p", static_cast<int64_t>(pick(50)));
    spec.slots = 1 + static_cast<int64_t>(pick(3));
    const int kind = static_cast<int>(pick(4));  // 3: keep what is stored
    if (kind == 0) spec.attributes = R"({"gpu":"yes","arch":"x86"})";
    if (kind == 1) spec.attributes = R"({"gpu":"no","arch":"x86"})";
    if (kind == 2) spec.attributes = "{}";
    return Await<store::ContainerResult>([&](auto cb) { s->Register({spec}, cb); }).outcome;
  };
  for (const std::string& id : ids) REQUIRE(reg(id) == Outcome::kOk);
  const std::vector<std::vector<store::SelectorTerm>> selectors = {
      {}, {{"gpu", {"yes"}}}, {{"arch", {"x86"}}, {"gpu", {"yes", "no"}}}};
  std::vector<store::Session> held;
  std::map<std::string, int> ops;
  int64_t ts = 1;
  for (int step = 0; step < 1500; ++step) {
    const std::string& id = ids[pick(ids.size())];
    std::string op;
    switch (pick(10)) {
      case 0: case 1: case 2: {
        store::ClaimRequest req = testing::Req("weur", "t1", "p");
        req.lease_ms = pick(4) == 0 ? 1 : 60000;
        req.placement = static_cast<Placement>(pick(4));
        req.selector = selectors[pick(selectors.size())];
        auto r = Await<store::SessionResult>([&](auto cb) { s->Claim(std::move(req), cb); });
        if (r.outcome == Outcome::kOk) held.push_back(r.session);
        op = "claim " + std::string(store::OutcomeName(r.outcome));
        break;
      }
      case 3: {
        if (held.empty()) continue;
        const size_t i = pick(held.size());
        const store::Session session = held[i];
        held.erase(held.begin() + static_cast<std::ptrdiff_t>(i));
        auto r = Await<store::SessionResult>([&](auto cb) {
          s->Release(testing::Tenant("t1"), session.session_id, session.token, cb);
        });
        op = "release " + std::string(store::OutcomeName(r.outcome));
        break;
      }
      case 4: {
        store::HeartbeatRow row;
        row.container_id = id;
        row.accepted_ms = base::NowMs();
        row.ts_ms = ts++;
        row.state = static_cast<store::ReportedState>(pick(4));
        store::HeartbeatWriteResult result;
        REQUIRE(s->WriteHeartbeats(0, {row}, &result).ok());
        op = std::string("report ") + (store::ReportedStateName(row.state) != nullptr
                                           ? store::ReportedStateName(row.state)
                                           : "none");
        break;
      }
      case 5: {
        const bool drain = pick(2) == 0;
        Await<store::ContainerResult>([&](auto cb) {
          if (drain) {
            s->Drain(id, cb);
          } else {
            s->Undrain(id, cb);
          }
        });
        op = drain ? "drain" : "undrain";
        break;
      }
      case 6:
        op = "register " + std::string(store::OutcomeName(reg(id)));
        break;
      case 7:
        Await<store::ContainerResult>([&](auto cb) { s->Remove(id, cb); });
        op = "remove";
        break;
      case 8: {
        int64_t ended = 0;
        REQUIRE(s->SweepExpiredLeases(0, 100, &ended).ok());
        op = "expire " + std::to_string(ended);
        break;
      }
      default: {
        // Silent: every container not heard in the last few milliseconds.
        const int64_t cutoff = base::NowMs() - static_cast<int64_t>(pick(4));
        store::SilenceSweep sweep;
        REQUIRE(s->SweepSilentContainers(0, [cutoff] { return cutoff; }, store::HeldPools{}, 100,
                                         &sweep)
                    .ok());
        op = "death sweep " + std::to_string(sweep.dead.size());
        break;
      }
    }
    ++ops[op.substr(0, op.find(' '))];
    std::string example;
    const int64_t wrong = OpenMismatches(e.db, &example);
    INFO("step " << step << ": " << op << " (" << id << "): " << example);
    REQUIRE(wrong == 0);
  }
  // Every kind of step ran, many times.
  for (const char* kind : {"claim", "release", "report", "drain", "undrain", "register", "remove",
                           "expire", "death"}) {
    INFO(kind);
    CHECK(ops[kind] > 20);
  }
}

namespace {

// The open flags of container `id`'s attribute rows, "gpu:1,os:1".
std::string OpenOf(const std::string& path, const std::string& id) {
  store::DbOptions options;
  options.read_only = true;
  std::unique_ptr<store::Db> db;
  REQUIRE(store::Db::Open(path, options, &db).ok());
  store::StatementRef q;
  REQUIRE(db->Cached("SELECT group_concat(key || ':' || open) FROM (SELECT key, open FROM "
                     "container_attributes WHERE container_id = ?1 ORDER BY key)",
                     &q)
              .ok());
  q->Bind(1, id);
  bool row = false;
  REQUIRE(q->Step(&row).ok());
  return row ? q->ColumnString(0) : "";
}

}  // namespace

// What keeps the walk short: a selector's claim closes the rows of the
// container whose last slot it took, and a container a walk finds open
// while it is not (a claim without a selector took it: that claim pays
// nothing for selectors) has its rows closed by that walk's job; a release
// opens them again.
TEST_CASE("claim_selector: a selector's claim closes what it fills and what its walk passed, and a "
          "release opens them again") {
  store::ClaimPolicy policy;
  policy.candidates = 1;  // the fittest only: "fast" first
  testing::Engine e("sqlite", policy);
  store::Storage* s = e.storage.get();
  std::vector<store::ContainerSpec> specs;
  for (const char* id : {"fast", "slow"}) {
    store::ContainerSpec spec =
        testing::Spec(id, "weur", "p", std::string(id) == "fast" ? 1 : 2);
    spec.attributes = R"({"gpu":"yes","os":"linux"})";
    specs.push_back(spec);
  }
  REQUIRE(Await<store::ContainerResult>([&](auto cb) { s->Register(specs, cb); }).outcome ==
          Outcome::kOk);
  auto claim = [&](std::vector<store::SelectorTerm> selector) {
    store::ClaimRequest req = testing::Req("weur", "t1", "p");
    req.lease_ms = 60000;
    req.selector = std::move(selector);
    auto r = Await<store::SessionResult>([&](auto cb) { s->Claim(std::move(req), cb); });
    REQUIRE(r.outcome == Outcome::kOk);
    return r.session;
  };
  const store::Session plain = claim({});
  CHECK(plain.container_id == "fast");
  CHECK(OpenOf(e.db, "fast") == "gpu:1,os:1");  // left open by a claim without a selector
  const store::Session selected = claim({{"gpu", {"yes"}}, {"os", {"linux"}}});
  CHECK(selected.container_id == "slow");
  CHECK(OpenOf(e.db, "fast") == "gpu:0,os:0");  // passed by the walk, closed
  CHECK(OpenOf(e.db, "slow") == "gpu:0,os:0");  // its last slot taken
  for (const store::Session& held : {plain, selected}) {
    REQUIRE(Await<store::SessionResult>([&](auto cb) {
              s->Release(testing::Tenant("t1"), held.session_id, held.token, cb);
            }).outcome == Outcome::kOk);
  }
  CHECK(OpenOf(e.db, "fast") == "gpu:1,os:1");
  CHECK(OpenOf(e.db, "slow") == "gpu:1,os:1");
}

// The term with the fewest open rows drives, whatever its place or its
// number of values; counts are kept a second; a claim reads at most
// kReadsAClaim of them.
TEST_CASE("claim_selector: the term with the fewest open rows drives the walk, its counts kept a "
          "second") {
  testing::TempDir dir;
  std::unique_ptr<store::Db> db = testing::OpenOrDie(dir.File("pool.db"));
  REQUIRE(store::Migrate(db.get()).ok());
  // arch=x86 on 10 open rows, gpu=yes on 3, gpu=no on 2, os=linux on 4 closed ones.
  auto add = [&](const std::string& id, const std::string& key, const std::string& value,
                 int open) {
    REQUIRE(db->Exec("INSERT INTO container_attributes (container_id, key, value, region, pool, "
                     "latency_ms, open) VALUES ('" + id + "', '" + key + "', '" + value +
                     "', 'weur', 'p', 0, " + std::to_string(open) + ")")
                .ok());
  };
  for (int i = 0; i < 10; ++i) add("c" + std::to_string(i), "arch", "x86", 1);
  for (int i = 0; i < 3; ++i) add("c" + std::to_string(i), "gpu", "yes", 1);
  for (int i = 3; i < 5; ++i) add("c" + std::to_string(i), "gpu", "no", 1);
  for (int i = 0; i < 4; ++i) add("c" + std::to_string(i), "os", "linux", 0);
  store::DrivingCounts counts;
  size_t driving = 9;
  const int64_t now = 1000000;
  // DrivingTerm would take arch (first of the one-value terms).
  REQUIRE(counts.Choose(db.get(), "weur", "p", {{"arch", {"x86"}}, {"gpu", {"yes"}}}, now,
                        &driving)
              .ok());
  CHECK(driving == 1);
  // Two values of gpu hold 5 rows, fewer than arch's 10; closed rows do not count.
  REQUIRE(counts.Choose(db.get(), "weur", "p",
                        {{"arch", {"x86"}}, {"gpu", {"no", "yes"}}, {"os", {"linux"}}}, now,
                        &driving)
              .ok());
  CHECK(driving == 2);
  // Kept a second: more gpu=yes rows are not seen until then.
  for (int i = 10; i < 30; ++i) add("d" + std::to_string(i), "gpu", "yes", 1);
  const std::vector<store::SelectorTerm> two = {{"arch", {"x86"}}, {"gpu", {"yes"}}};
  REQUIRE(counts.Choose(db.get(), "weur", "p", two, now + 999, &driving).ok());
  CHECK(driving == 1);
  REQUIRE(counts.Choose(db.get(), "weur", "p", two, now + 1000, &driving).ok());
  CHECK(driving == 0);
  // A selector of six terms never read: four counts read (a to d, 2 rows
  // each), and e, which holds none, does not drive until the next claim
  // reads its count.
  for (const char* key : {"a", "b", "c", "d"}) {
    for (const char* id : {"c0", "c1"}) add(id, key, "v", 1);
  }
  std::vector<store::SelectorTerm> six;
  for (const char* key : {"a", "b", "c", "d", "e", "f"}) six.push_back({key, {"v"}});
  REQUIRE(counts.Choose(db.get(), "weur", "p", six, now, &driving).ok());
  CHECK(driving == 0);
  REQUIRE(counts.Choose(db.get(), "weur", "p", six, now, &driving).ok());
  CHECK(driving == 4);
  // One term: nothing to read.
  REQUIRE(counts.Choose(db.get(), "weur", "p", {{"gpu", {"yes", "no"}}}, now, &driving).ok());
  CHECK(driving == 0);
}

TEST_CASE("claim_selector: the count of open rows walks the open index and stops at its cap") {
  const std::string plan = PlanOf(store::sql::kCountOpenAttributes);
  INFO(plan);
  CHECK(plan.find("SEARCH container_attributes USING COVERING INDEX container_attributes_open "
                  "(region=? AND pool=? AND key=? AND value=?)") != std::string::npos);
}

namespace {

const std::vector<store::SelectorTerm> kGpuLinux = {{"gpu", {"yes"}}, {"os", {"linux"}}};

store::ContainerSpec WithGpuLinux(const std::string& id, int64_t latency_ms) {
  store::ContainerSpec spec = testing::Spec(id, "weur", "p", latency_ms);
  spec.attributes = R"({"gpu":"yes","os":"linux"})";
  return spec;
}

// What RunClaimStatements did: how many statements it ran (each is bound
// once), whether one took a slot, and what the last one took and passed.
struct Ran {
  int statements = 0;
  bool claimed = false;
  bool rechecked = false;
  store::Took took;
};

// RunClaimStatements on shard 0's writer for a fittest claim of kGpuLinux
// in weur/p among the K fittest.
Ran ClaimWithStatements(testing::Pool* pool, int64_t k) {
  store::ClaimRequest req = testing::Req("weur", "t1", "p");
  req.selector = kGpuLinux;
  Ran ran;
  const store::Status s = pool->shard(0)->writer->RunSync([&](store::Db* db) {
    auto bind = [&](store::Statement* q) {
      ++ran.statements;
      q->Bind(1, "weur");
      q->Bind(2, "p");
      q->Bind(3, int64_t{0});
      q->Bind(4, k);
      q->Bind(5, "t1");
      q->BindNull(6);
      q->Bind(7, int64_t{-1});
    };
    store::Status st = store::RunClaimStatements(db, req, Placement::kFittest,
                                                 store::DrivingTerm(req.selector), bind,
                                                 &ran.claimed, &ran.rechecked);
    ran.took = db->took();
    return st;
  });
  INFO(s.ToString());
  REQUIRE(s.ok());
  return ran;
}

}  // namespace

// The open-rows form runs first and, when its pick is claimable, alone;
// when it is not (here the only candidate, K = 1: a container held by a
// claim without a selector, its rows left open), the form that checks
// every candidate runs after it, passes that container (its rows then
// closed by the job) and takes the next.
TEST_CASE("claim_selector: a claim runs the open-rows form alone when its pick is claimable, "
          "and the checking form after it when not") {
  {
    testing::Pool pool({}, 1, {}, testing::Policy(1));
    pool.Add({WithGpuLinux("good", 1), WithGpuLinux("next", 2)});
    const Ran ran = ClaimWithStatements(&pool, 1);
    CHECK(ran.claimed);
    CHECK(ran.statements == 1);
    CHECK_FALSE(ran.rechecked);
    CHECK(ran.took.container_id == "good");
    CHECK(ran.took.closed);  // its one slot: the job closes its rows
  }
  testing::Pool pool({}, 1, {}, testing::Policy(1));
  pool.Add({WithGpuLinux("held", 1), WithGpuLinux("good", 2)});
  const store::SessionResult plain = pool.Claim(testing::Req("weur", "t1", "p"));
  REQUIRE(plain.outcome == Outcome::kOk);
  REQUIRE(plain.session.container_id == "held");
  const Ran ran = ClaimWithStatements(&pool, 1);
  CHECK(ran.claimed);
  CHECK(ran.statements == 2);
  CHECK(ran.rechecked);
  CHECK(ran.took.container_id == "good");
  CHECK(ran.took.passed == std::vector<std::string>{"held"});
}

// Every kind of row open on a container a claim may not take sits among
// the K fittest, below the one container it may: held by a claim without
// a selector, drained, unheard of, moved to another region by a binary that
// left its copies (all rows are made open again before each claim, as
// they may be for a while). Each claim takes that one: with the open-rows
// form's take unchecked, claims took the others; without the checking form
// after a pick that failed, most answered no_capacity. Each claim whose
// first pick failed is counted (edgealloc_store_selector_claims_rechecked_total);
// claims on rows that are right count nothing.
TEST_CASE("claim_selector: a claim never takes a container its open rows are wrong about, and "
          "never fails for them") {
  testing::Pool pool({}, 1, {}, testing::Policy(5));
  pool.Add({WithGpuLinux("held", 1)});
  REQUIRE(pool.Claim(testing::Req("weur", "t1", "p")).outcome == Outcome::kOk);
  const std::atomic<uint64_t>& rechecked =
      pool.storage().writer_stats(0).selector_claims_rechecked;
  pool.Add({WithGpuLinux("drained", 2), WithGpuLinux("unheard", 3), WithGpuLinux("moved", 4),
            WithGpuLinux("good", 9)});
  REQUIRE(pool.Drain("drained").outcome == Outcome::kOk);
  pool.Exec("weur", "UPDATE containers SET last_heartbeat_ms = 1 WHERE id = 'unheard'");
  pool.Exec("weur", "UPDATE containers SET region = 'eeur' WHERE id = 'moved'");
  auto claim_good = [&](const std::string& what) {
    store::ClaimRequest req = testing::Req("weur", "t1", "p");
    req.selector = kGpuLinux;
    const store::SessionResult r = pool.Claim(req);
    INFO(what << ": " << r.message);
    REQUIRE(r.outcome == Outcome::kOk);
    CHECK(r.session.container_id == "good");
    REQUIRE(pool.Release(testing::Tenant("t1"), r.session.session_id, r.session.token).outcome ==
            Outcome::kOk);
  };
  for (int i = 0; i < 40; ++i) {
    pool.Exec("weur", "UPDATE container_attributes SET open = 1");
    claim_good("claim " + std::to_string(i));
  }
  // Four picks of five are wrong: nearly every claim ran the second statement.
  CHECK(rechecked.load() >= 20);
  CHECK(rechecked.load() <= 40);
  // The wrong rows closed: the open-rows form alone, nothing counted.
  pool.Exec("weur", "UPDATE container_attributes SET open = 0 WHERE container_id <> 'good'");
  const uint64_t before = rechecked.load();
  for (int i = 0; i < 10; ++i) claim_good("right rows, claim " + std::to_string(i));
  CHECK(rechecked.load() == before);
}
