#ifndef EDGEALLOC_SERVER_API_LIST_PAGES_H_
#define EDGEALLOC_SERVER_API_LIST_PAGES_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "server/api/errors.h"
#include "server/api/list_query.h"
#include "server/api/reader_pool.h"
#include "server/api/reply_bodies.h"
#include "server/http/router.h"
#include "store/list_page.h"
#include "store/status.h"

namespace server {

// What GET /v1/sessions and GET /v1/containers read from a query the same
// way. Each answers the refusal to send, or nothing when the query is good.

// ?region= and ?pool=: at most kMaxNameChars characters, no U+0000.
std::optional<Response> ReadRegionPoolFilter(const RouteRequest& req, std::string* region,
                                             std::string* pool);

// ?limit= and ?cursor= of a query with `fingerprint`, its cursor signed with
// `key` (ParseListPage).
std::optional<Response> ReadPageParams(const RouteRequest& req, const CursorKey& key,
                                       uint64_t fingerprint, int* limit, std::string* after);

// Reads one page off the io thread, as a job of `owner` (ReaderPool), with
// `list(&page, &next_after)` (a storage list call) and answers 200 with the
// page's items under `name` (each `item_json(row)`), up to
// kListPageBudgetBytes of them, and next_cursor: made for `fingerprint` and
// signed with `*key` when the page ended at the byte budget (after its last
// item) or the storage says a next page starts after some key. A failed
// read answers its status. `key` must outlive the read.
template <typename Row, typename List, typename ItemJson>
void ReadListPage(ReaderPool* pool, std::string owner, const boost::asio::any_io_executor& io,
                  const Reply& reply, const CursorKey* key, uint64_t fingerprint,
                  std::string request_id, std::string_view name, List list,
                  ItemJson item_json) {
  struct Read {
    store::Status status;
    std::vector<Row> page;
    std::string next_after;  // empty: the last page
  };
  ReadOffIo(
      pool, std::move(owner), io, reply,
      [list = std::move(list)] {
        Read r;
        r.status = list(&r.page, &r.next_after);
        return r;
      },
      [key, fingerprint, name, id = std::move(request_id), item_json = std::move(item_json)](
          const Read& r) {
        if (!r.status.ok()) return StatusResponse(r.status, id);
        std::string items;
        size_t kept = 0;
        // The item that reaches the budget is the last: at least one a page.
        while (kept < r.page.size() && items.size() < kListPageBudgetBytes) {
          if (kept > 0) items += ',';
          items += item_json(r.page[kept++]);
        }
        std::optional<std::string> next;
        if (kept < r.page.size()) {
          next = MakeCursor(*key, fingerprint, store::ListKey(r.page[kept - 1]));
        } else if (!r.next_after.empty()) {
          // A page may be short, even empty, and still carry a cursor: the
          // storage stopped after a bounded number of rows (ListExamineBound).
          next = MakeCursor(*key, fingerprint, r.next_after);
        }
        return JsonResponse(200, ListJson(name, items, next));
      });
}

}  // namespace server

#endif  // EDGEALLOC_SERVER_API_LIST_PAGES_H_
