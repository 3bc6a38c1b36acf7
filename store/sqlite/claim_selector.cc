#include "store/sqlite/claim_selector.h"

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>

#include "store/selector.h"
#include "store/sqlite/claim_sql.h"
#include "store/sqlite/selector_sql.h"

namespace store {

namespace {

// Up to this many terms beside the driving one, each term's check binds one
// value as such; past it, every term's values as a JSON list: so at most 3
// placements x 2 driving forms x (1 + 2 + 4 + 8 shapes of 0 to 3 other
// terms, + 12 of 4 to 15) = 162 texts exist, whatever the selectors asked
// (16 keys at most, docs/api.md).
constexpr size_t kTermsByForm = 3;

// ClaimForm::placement of fittest: the index of its statements (kPlain,
// sql::kSelectedOrder) and the one placement with an open-rows form.
constexpr int kFittestForm = 0;

// Whether the term at `i` of the other terms is checked against a JSON list
// of its values (else one value).
bool CheckedAsList(const std::vector<SelectorTerm>& selector, size_t others, size_t term) {
  return others > kTermsByForm || selector[term].values.size() > 1;
}

// The claim statement of a selector's shape (selector_sql.h's pieces, in
// their order), in its open-rows form or not, put together once a process
// and kept: Db::Cached keys statements by their text's address.
const char* SelectedClaimSql(int placement, const std::vector<SelectorTerm>& selector,
                             size_t driving, bool open_rows) {
  const size_t others = selector.size() - 1;
  std::string shape = (open_rows ? "o" : "") + std::to_string(placement) +
                      (selector[driving].values.size() > 1 ? "n" : "1") + std::to_string(others);
  for (size_t i = 0; i < selector.size(); ++i) {
    if (i != driving) shape += CheckedAsList(selector, others, i) ? 'n' : '1';
  }
  static std::mutex mu;
  static std::map<std::string, std::unique_ptr<const std::string>> texts;
  std::lock_guard<std::mutex> lock(mu);
  auto& text = texts[shape];
  if (text) return text->c_str();
  std::string sql = open_rows ? sql::kOpenRowsHead : sql::kSelectedHead;
  sql += selector[driving].values.size() > 1 ? sql::kDrivingValues : sql::kDrivingOneValue;
  sql += open_rows ? sql::kOpenRowsOpen : sql::kSelectedOpen;
  int param = 15;
  for (size_t i = 0; i < selector.size(); ++i) {
    if (i == driving) continue;
    sql += sql::kTermCheckHead + std::to_string(param) + sql::kTermCheckValue;
    const std::string values = "?" + std::to_string(param + 1);
    sql += CheckedAsList(selector, others, i) ? "IN (SELECT value FROM json_each(" + values + "))"
                                              : "= " + values;
    sql += ")\n";
    param += 2;
  }
  sql += std::string("  ORDER BY ") + sql::kSelectedOrder[placement] + "\n  LIMIT ?4)\n";
  sql += open_rows ? sql::kTakeOpenRow : sql::kTakeSelected[placement];
  text = std::make_unique<const std::string>(std::move(sql));
  return text->c_str();
}

}  // namespace

const char* ClaimStatement(const ClaimRequest& req, Placement server, size_t driving) {
  static constexpr const char* kPlain[3] = {sql::kClaimFittest, sql::kClaimPacked,
                                            sql::kClaimDistributed};
  const ClaimForm form = ClaimFormOf(req, server);
  if (req.selector.empty()) return kPlain[form.placement];
  return SelectedClaimSql(form.placement, req.selector, driving, false);
}

const char* OpenRowsClaimStatement(const ClaimRequest& req, Placement server, size_t driving) {
  if (req.selector.empty() || ClaimFormOf(req, server).placement != kFittestForm) return nullptr;
  return SelectedClaimSql(kFittestForm, req.selector, driving, true);
}

Status RunClaimStatements(Db* db, const ClaimRequest& req, Placement server, size_t driving,
                          const std::function<void(Statement*)>& bind, bool* claimed,
                          bool* rechecked) {
  *claimed = false;
  const char* open_rows = OpenRowsClaimStatement(req, server, driving);
  *rechecked = false;
  for (int form = open_rows != nullptr ? 0 : 1; form < 2; ++form) {
    *rechecked = form == 1 && open_rows != nullptr;
    // (the checking form's text only when it runs: a shape's text is found under a lock)
    const char* sql = form == 0 ? open_rows : ClaimStatement(req, server, driving);
    StatementRef claim;
    RETURN_IF_ERROR(db->Cached(sql, &claim));
    bind(&*claim);
    BindSelector(&*claim, req.selector, driving);
    Took& took = db->took();
    took.any = false;
    took.passed.clear();
    RETURN_IF_ERROR(claim->Run());
    *claimed = db->Changes() == 1;
    if (*claimed) break;
  }
  return Status::Ok();
}

void BindSelector(Statement* q, const std::vector<SelectorTerm>& selector, size_t driving) {
  if (selector.empty()) return;
  const size_t others = selector.size() - 1;
  // A term's key at `param`, its values at the next: one as such, or a list.
  auto bind_term = [q](int param, const SelectorTerm& term, bool as_list) {
    q->Bind(param, term.key);
    if (as_list) {
      q->Bind(param + 1, ValuesJson(term.values));
    } else {
      q->Bind(param + 1, term.values[0]);
    }
  };
  bind_term(12, selector[driving], selector[driving].values.size() > 1);
  int param = 15;
  for (size_t i = 0; i < selector.size(); ++i) {
    if (i == driving) continue;
    bind_term(param, selector[i], CheckedAsList(selector, others, i));
    param += 2;
  }
}

Status AnySelectorMatch(Db* db, const std::string& region, const std::string& pool,
                        const std::vector<SelectorTerm>& selector, bool* any) {
  StatementRef q;
  RETURN_IF_ERROR(db->Cached(sql::kAnySelectorMatch, &q));
  q->Bind(1, region);
  q->Bind(2, pool);
  const SelectorTerm& driving = selector[DrivingTerm(selector)];
  q->Bind(12, driving.key);
  q->Bind(13, ValuesJson(driving.values));  // a list, even of one: the statement takes a list
  q->Bind(14, SelectorJson(selector));
  return q->Step(any);
}

Status DrivingCounts::Choose(Db* db, const std::string& region, const std::string& pool,
                             const std::vector<SelectorTerm>& selector, int64_t now_ms,
                             size_t* driving) {
  *driving = DrivingTerm(selector);
  if (selector.size() < 2) return Status::Ok();
  if (counts_.size() > kMaxKept) counts_.clear();
  int reads = 0;
  std::vector<int64_t> rows(selector.size(), 0);
  for (size_t i = 0; i < selector.size(); ++i) {
    for (const std::string& value : selector[i].values) {
      std::string name = region;
      for (const std::string* part : {&pool, &selector[i].key, &value}) {
        name += '\0';
        name += *part;
      }
      Count& count = counts_[name];
      // (A step of the clock back counts it as old, too.)
      if (count.read_at_ms == 0 || now_ms < count.read_at_ms ||
          now_ms - count.read_at_ms >= kKeptMs) {
        if (reads == kReadsAClaim) {  // not known: this term does not drive
          counts_.erase(name);
          rows[i] = INT64_MAX;
          break;
        }
        ++reads;
        StatementRef q;
        RETURN_IF_ERROR(db->Cached(sql::kCountOpenAttributes, &q));
        q->Bind(1, region);
        q->Bind(2, pool);
        q->Bind(3, selector[i].key);
        q->Bind(4, value);
        q->Bind(5, kCountCap);
        bool row = false;
        RETURN_IF_ERROR(q->Step(&row));
        count.rows = row ? q->ColumnInt64(0) : 0;
        count.read_at_ms = now_ms;
      }
      rows[i] += count.rows;
    }
  }
  for (size_t i = 0; i < selector.size(); ++i) {
    if (rows[i] < rows[*driving]) *driving = i;
  }
  return Status::Ok();
}

Status SyncAttributesOpen(Db* db, const std::string& id) {
  StatementRef q;
  RETURN_IF_ERROR(db->Cached(sql::kSyncAttributesOpen, &q));
  q->Bind(1, id);
  return q->Run();
}

bool TryNextShard(Outcome* outcome, bool more_shards, bool* selector_matched) {
  if (*outcome == Outcome::kNoCapacity) *selector_matched = true;
  if (*outcome != Outcome::kNoCapacity && *outcome != Outcome::kNoMatch) return false;
  if (more_shards) return true;
  if (*outcome == Outcome::kNoMatch && *selector_matched) *outcome = Outcome::kNoCapacity;
  return false;
}

}  // namespace store
