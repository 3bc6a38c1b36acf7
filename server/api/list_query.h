#ifndef EDGEALLOC_SERVER_API_LIST_QUERY_H_
#define EDGEALLOC_SERVER_API_LIST_QUERY_H_

#include <cstddef>
#include <initializer_list>
#include <string>
#include <string_view>

#include "server/api/cursor_key.h"
#include "server/api/request_bodies.h"

namespace server {

// Page sizes of GET /v1/sessions and GET /v1/containers (API 1.1 "Lists").
inline constexpr int kDefaultListLimit = 100;
inline constexpr int kMaxListLimit = 1000;

// A page also ends at about this many bytes of items: the item that reaches
// it is the page's last (so a page always holds at least one, and paging
// always moves on), and next_cursor resumes after it. By count alone a page
// of 1,000 sessions with every label at its limit is about 20 MB, built in
// memory and written by one reader and one io thread while other tenants
// wait; 1 MiB is still hundreds of ordinary sessions (about 300 bytes each),
// so plain pages stay limit-sized, and the reply is what the server takes as
// a request body (--max-body-bytes' default).
inline constexpr size_t kListPageBudgetBytes = size_t{1} << 20;

// A list's cursor is opaque to clients: "c2." + a 64-bit fingerprint of the
// query it was made for (the list and its filters) + "." + the hex of the
// key its next page starts after (the last item of a full page, or the last
// row the storage examined for a short one) + "." + a signature of all that
// (CursorKey). The signature is what makes a cursor the server did not make,
// or one altered, refused (400 invalid_field); the fingerprint lets a cursor
// handed to another query be refused too, instead of silently paging
// through the wrong list; the key is where the next page starts (keyset
// pagination, store::Storage::ListSessions).

// The fingerprint of a list query: its kind ("sessions") and filter values,
// in a fixed order.
uint64_t ListFingerprint(std::initializer_list<std::string_view> parts);

// The cursor of the page that ended at `last_key`, signed with `key`.
std::string MakeCursor(const CursorKey& key, uint64_t fingerprint, std::string_view last_key);

// Reads ?limit= (1 to kMaxListLimit; absent: kDefaultListLimit) and ?cursor=
// (absent: the first page, *after empty) of a list query with `fingerprint`,
// a cursor made with `key` (or a key of the same secret). False with *error
// (invalid_field naming limit or cursor) otherwise.
bool ParseListPage(const std::string* limit_param, const std::string* cursor_param,
                   const CursorKey& key, uint64_t fingerprint, int* limit, std::string* after,
                   BodyError* error);

// ?label=KEY:VALUE (split at the first ':'): a key of 1 to 64 characters and
// a value of 0 to 256, as claim labels, neither holding U+0000. False with
// *error (naming the parameter `name`) otherwise. Container lists'
// ?attribute=KEY:VALUE is read alike.
bool ParseLabelFilter(std::string_view param, std::string* key, std::string* value,
                      BodyError* error, std::string_view name = "label");

}  // namespace server

#endif  // EDGEALLOC_SERVER_API_LIST_QUERY_H_
