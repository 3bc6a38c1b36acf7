#ifndef EDGEALLOC_STORE_STATUS_H_
#define EDGEALLOC_STORE_STATUS_H_

#include <string>
#include <string_view>

namespace store {

// A Status says whether an operation succeeded and, if not, why, in LevelDB's
// shape. It is a plain value: cheap to copy when Ok, safe to pass between
// threads. Expected outcomes of the domain (no capacity, stale token) are not
// Statuses; they are result values of the part that owns them.
class [[nodiscard]] Status {
 public:
  enum class Code { kOk, kNotFound, kConflict, kBusy, kInvalidArgument, kIOError, kCorruption };

  Status() = default;
  static Status Ok() { return Status(); }
  static Status NotFound(std::string_view msg) { return Status(Code::kNotFound, msg); }
  static Status Conflict(std::string_view msg) { return Status(Code::kConflict, msg); }
  static Status Busy(std::string_view msg) { return Status(Code::kBusy, msg); }
  static Status InvalidArgument(std::string_view msg) {
    return Status(Code::kInvalidArgument, msg);
  }
  static Status IOError(std::string_view msg) { return Status(Code::kIOError, msg); }
  static Status Corruption(std::string_view msg) { return Status(Code::kCorruption, msg); }

  bool ok() const { return code_ == Code::kOk; }
  bool IsNotFound() const { return code_ == Code::kNotFound; }
  bool IsConflict() const { return code_ == Code::kConflict; }
  bool IsBusy() const { return code_ == Code::kBusy; }
  bool IsInvalidArgument() const { return code_ == Code::kInvalidArgument; }
  bool IsIOError() const { return code_ == Code::kIOError; }
  bool IsCorruption() const { return code_ == Code::kCorruption; }
  Code code() const { return code_; }
  const std::string& message() const { return message_; }

  // "OK" or "<Code>: <message>", for logs and error replies.
  std::string ToString() const;

 private:
  Status(Code code, std::string_view msg) : code_(code), message_(msg) {}
  Code code_ = Code::kOk;
  std::string message_;
};


// The message prefix of the IOError a group's jobs get when its COMMIT
// failed: the outcome is unknown (an engine's writer: store/sqlite/writer.h WriteJob::Done).
inline constexpr char kCommitOutcomeUnknown[] = "commit outcome unknown: ";
inline bool IsCommitOutcomeUnknown(const Status& s) {
  return s.IsIOError() && s.message().rfind(kCommitOutcomeUnknown, 0) == 0;
}

// The message prefix of the error of a job that failed after part of it was
// written, which no statement undid and only the end of the transaction can:
// its group fails whole (store/group_writer.cc RunJobs), so that the part is
// never committed. A job that writes twice without a savepoint returns it
// when the second write fails (store/sqlite/release.cc).
inline constexpr char kHalfWritten[] = "half written, its group fails whole: ";
inline Status HalfWritten(const Status& s) {
  return Status::IOError(std::string(kHalfWritten) + s.ToString());
}
inline bool IsHalfWritten(const Status& s) {
  return s.IsIOError() && s.message().rfind(kHalfWritten, 0) == 0;
}

}  // namespace store

// Returns the Status of `expr` from the enclosing function unless it is Ok.
#define RETURN_IF_ERROR(expr)                           \
  do {                                                  \
    ::store::Status edgealloc_status_ = (expr);         \
    if (!edgealloc_status_.ok()) return edgealloc_status_; \
  } while (0)

#endif  // EDGEALLOC_STORE_STATUS_H_
