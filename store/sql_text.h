#ifndef EDGEALLOC_STORE_SQL_TEXT_H_
#define EDGEALLOC_STORE_SQL_TEXT_H_

#include <cstddef>
#include <string>

namespace store {

// A statement's text made at compile time from pieces: string literals and
// other SqlTexts, such as a row's column list (store/row_columns.h). It is
// still one constant with one address, which the engines' statement caches
// key on (Db::Cached, PgConn::Run), and nothing is built per query.
template <size_t N>
struct SqlText {
  char text[N] = {};
  constexpr SqlText() = default;
  constexpr SqlText(const char (&s)[N]) {  // NOLINT: a literal is a piece
    for (size_t i = 0; i < N; ++i) text[i] = s[i];
  }
  static constexpr size_t size() { return N - 1; }
  constexpr const char* c_str() const { return text; }
  constexpr operator const char*() const { return text; }  // NOLINT: a statement's text
  operator std::string() const { return text; }            // NOLINT: as a literal would
};

// A text and a statement, as a text and a literal add up.
template <size_t N>
std::string operator+(std::string lhs, const SqlText<N>& rhs) {
  return lhs += rhs.text;
}

namespace sql_text_internal {

template <size_t N>
constexpr SqlText<N> Piece(const char (&s)[N]) {
  return SqlText<N>(s);
}
template <size_t N>
constexpr const SqlText<N>& Piece(const SqlText<N>& s) {
  return s;
}

template <size_t... Ns>
constexpr SqlText<(Ns + ... + 1) - sizeof...(Ns)> Join(const SqlText<Ns>&... pieces) {
  SqlText<(Ns + ... + 1) - sizeof...(Ns)> out;
  size_t at = 0;
  auto append = [&](const char* piece, size_t size) {
    for (size_t i = 0; i < size; ++i) out.text[at++] = piece[i];
  };
  (append(pieces.text, pieces.size()), ...);
  return out;
}

}  // namespace sql_text_internal

// The pieces, one after another, as one statement's text.
template <typename... Pieces>
constexpr auto Sql(const Pieces&... pieces) {
  return sql_text_internal::Join(sql_text_internal::Piece(pieces)...);
}

namespace sql_text_internal {

constexpr size_t Digits(int n) { return n < 10 ? 1 : 1 + Digits(n / 10); }

}  // namespace sql_text_internal

// "?1, ?2, ..." (kMark '?', SQLite) or "$1, $2, ..." ('$', PostgreSQL):
// kCount numbered parameters from kFirst on, so that a statement binding a
// row's columns (store/row_columns.h) has as many as the row has columns.
template <char kMark, int kFirst, int kCount>
constexpr auto Params() {
  static_assert(kFirst >= 1 && kCount >= 1);
  constexpr size_t length = [] {
    size_t n = 0;
    for (int i = kFirst; i < kFirst + kCount; ++i) {
      n += (i > kFirst ? 2 : 0) + 1 + sql_text_internal::Digits(i);
    }
    return n;
  }();
  SqlText<length + 1> out;
  size_t at = 0;
  for (int i = kFirst; i < kFirst + kCount; ++i) {
    if (i > kFirst) {
      out.text[at++] = ',';
      out.text[at++] = ' ';
    }
    out.text[at++] = kMark;
    const size_t digits = sql_text_internal::Digits(i);
    for (size_t d = 0, rest = static_cast<size_t>(i); d < digits; ++d, rest /= 10) {
      out.text[at + digits - 1 - d] = static_cast<char>('0' + rest % 10);
    }
    at += digits;
  }
  return out;
}

}  // namespace store

#endif  // EDGEALLOC_STORE_SQL_TEXT_H_
