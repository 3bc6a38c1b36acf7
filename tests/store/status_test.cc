#include "store/status.h"

#include <catch2/catch.hpp>

TEST_CASE("status: a default Status is Ok and prints OK") {
  store::Status s;
  CHECK(s.ok());
  CHECK(s.code() == store::Status::Code::kOk);
  CHECK(s.ToString() == "OK");
}

TEST_CASE("status: each error code answers only its own predicate and keeps its message") {
  using store::Status;
  struct Case {
    Status s;
    bool (Status::*is)() const;
  };
  const Case cases[] = {
      {Status::NotFound("m"), &Status::IsNotFound},
      {Status::Conflict("m"), &Status::IsConflict},
      {Status::Busy("m"), &Status::IsBusy},
      {Status::InvalidArgument("m"), &Status::IsInvalidArgument},
      {Status::IOError("m"), &Status::IsIOError},
      {Status::Corruption("m"), &Status::IsCorruption},
  };
  bool (Status::*all[])() const = {&Status::IsNotFound, &Status::IsConflict, &Status::IsBusy,
                                   &Status::IsInvalidArgument, &Status::IsIOError,
                                   &Status::IsCorruption};
  for (const Case& c : cases) {
    CHECK_FALSE(c.s.ok());
    CHECK(c.s.message() == "m");
    CHECK_THAT(c.s.ToString(), Catch::EndsWith(": m"));
    int matches = 0;
    for (auto is : all) matches += (c.s.*is)() ? 1 : 0;
    CHECK(matches == 1);
    CHECK((c.s.*c.is)());
  }
}
