#ifndef EDGEALLOC_SERVER_API_LIST_PAGES_H_
#define EDGEALLOC_SERVER_API_LIST_PAGES_H_

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "server/api/errors.h"
#include "server/api/list_query.h"
#include "server/api/reader_pool.h"
#include "server/http/router.h"
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

// Reads one page off the io thread with `list(&page, &next_after)` (a
// storage list call) and answers 200 with `to_json(page, cursor)`, the cursor
// made for `fingerprint` and signed with `*key` when the storage says a next
// page starts after some key; a failed read answers its status. `key` must
// outlive the read.
template <typename Row, typename List, typename ToJson>
void ReadListPage(ReaderPool* pool, const boost::asio::any_io_executor& io, const Reply& reply,
                  const CursorKey* key, uint64_t fingerprint, std::string request_id, List list,
                  ToJson to_json) {
  struct Read {
    store::Status status;
    std::vector<Row> page;
    std::string next_after;  // empty: the last page
  };
  ReadOffIo(
      pool, io, reply,
      [list = std::move(list)] {
        Read r;
        r.status = list(&r.page, &r.next_after);
        return r;
      },
      [key, fingerprint, id = std::move(request_id), to_json = std::move(to_json)](
          const Read& r) {
        if (!r.status.ok()) return StatusResponse(r.status, id);
        std::optional<std::string> next;
        // A page may be short, even empty, and still carry a cursor: the
        // storage stopped after a bounded number of rows (ListExamineBound).
        if (!r.next_after.empty()) next = MakeCursor(*key, fingerprint, r.next_after);
        return JsonResponse(200, to_json(r.page, next));
      });
}

}  // namespace server

#endif  // EDGEALLOC_SERVER_API_LIST_PAGES_H_
