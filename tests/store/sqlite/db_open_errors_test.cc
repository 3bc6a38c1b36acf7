// Db::Open of a database this user cannot write: what is in the way and
// what to do, in words a user acts on (store/sqlite/db.cc WhyNotWritable).

#include "store/sqlite/db.h"

#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <memory>
#include <string>

#include "tests/support/db_queries.h"
#include "tests/support/temp_dir.h"

namespace {

using store::Db;
using store::DbOptions;
using store::Status;
using testing::OpenOrDie;

// Db::Open's Status text, as a user other than root when we are root (root
// writes any file), in a child so that this process keeps its user.
std::string OpenAsUserText(const std::string& path) {
  if (::geteuid() != 0) {
    std::unique_ptr<Db> db;
    return Db::Open(path, DbOptions(), &db).ToString();
  }
  int out[2];
  REQUIRE(::pipe(out) == 0);
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    ::close(out[0]);
    if (::setgid(65534) != 0 || ::setuid(65534) != 0) ::_exit(1);  // nobody
    std::unique_ptr<Db> db;
    const std::string text = Db::Open(path, DbOptions(), &db).ToString();
    (void)!::write(out[1], text.data(), text.size());
    ::_exit(0);
  }
  ::close(out[1]);
  std::string text;
  char buf[512];
  for (ssize_t n; (n = ::read(out[0], buf, sizeof buf)) > 0;) text.append(buf, static_cast<size_t>(n));
  ::close(out[0]);
  int status = 0;
  ::waitpid(child, &status, 0);
  REQUIRE(WIFEXITED(status));
  REQUIRE(WEXITSTATUS(status) == 0);
  return text;
}

TEST_CASE("db: a database that cannot be written says what is in the way and what to do") {
  testing::TempDir dir;
  // Another user passes through the test's folder.
  std::filesystem::permissions(dir.path(), std::filesystem::perms::others_exec,
                               std::filesystem::perm_options::add);
  std::unique_ptr<Db> db;
  const std::string missing = dir.File("no-such-folder") + "/fleet.db";
  Status s = Db::Open(missing, DbOptions(), &db);
  CHECK(db == nullptr);
  CHECK_THAT(s.ToString(), Catch::Contains(missing) &&
                               Catch::Contains("its folder " + dir.File("no-such-folder") +
                                               " does not exist") &&
                               Catch::Contains("mkdir -p"));
  // A file the user may not write, in a folder it may.
  const std::string folder = dir.File("open");
  std::filesystem::create_directory(folder);
  std::filesystem::permissions(folder, std::filesystem::perms::all);
  const std::string read_only = folder + "/fleet.db";
  { OpenOrDie(read_only); }
  std::filesystem::remove(read_only + ".lock");
  std::filesystem::permissions(read_only, std::filesystem::perms::owner_read |
                                              std::filesystem::perms::group_read |
                                              std::filesystem::perms::others_read);
  CHECK_THAT(OpenAsUserText(read_only),
             Catch::Contains("the file is not readable and writable by this user"));
  // A folder the user may not write (SQLite creates -wal, -shm beside it).
  const std::string closed = dir.File("closed");
  std::filesystem::create_directory(closed);
  std::filesystem::permissions(closed, std::filesystem::perms::owner_all |
                                           std::filesystem::perms::others_read |
                                           std::filesystem::perms::others_exec);
  CHECK_THAT(OpenAsUserText(closed + "/fleet.db"),
             Catch::Contains("its folder " + closed + " is not writable by this user"));
}

}  // namespace
