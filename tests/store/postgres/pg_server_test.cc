// The PostgreSQL server fixture (tests/support/pg_server.h) on its own: a
// real server starts, gives out empty databases, keeps committed data
// through a SIGKILL, and a synchronous standby takes over from a dead
// primary. The product's PostgreSQL tests stand on these guarantees.
#include "tests/support/pg_server.h"

#include <libpq-fe.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <fstream>
#include <string>
#include <thread>

namespace {

using testing::PgServer;

// A raw libpq connection (the fixture's own checks need no more).
class Conn {
 public:
  explicit Conn(const std::string& conninfo) : conn_(PQconnectdb(conninfo.c_str())) {
    INFO(conninfo);
    REQUIRE(PQstatus(conn_) == CONNECTION_OK);
  }
  Conn(const Conn&) = delete;
  Conn& operator=(const Conn&) = delete;
  ~Conn() { PQfinish(conn_); }

  // Runs `sql`; REQUIREs success and returns the first cell ("" if none).
  std::string Exec(const std::string& sql) {
    std::string sqlstate;
    std::string value;
    bool ok = TryExec(sql, &value, &sqlstate);
    INFO(sql << ": " << PQerrorMessage(conn_));
    REQUIRE(ok);
    return value;
  }
  // Runs `sql`; on failure returns its SQLSTATE, on success "".
  std::string ExecError(const std::string& sql) {
    std::string sqlstate;
    std::string value;
    TryExec(sql, &value, &sqlstate);
    return sqlstate;
  }

 private:
  bool TryExec(const std::string& sql, std::string* value, std::string* sqlstate) {
    PGresult* res = PQexec(conn_, sql.c_str());
    ExecStatusType status = PQresultStatus(res);
    bool ok = status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK;
    if (!ok) {
      const char* state = PQresultErrorField(res, PG_DIAG_SQLSTATE);
      *sqlstate = state != nullptr ? state : "?????";
    } else if (status == PGRES_TUPLES_OK && PQntuples(res) > 0 && !PQgetisnull(res, 0, 0)) {
      *value = PQgetvalue(res, 0, 0);
    }
    PQclear(res);
    return ok;
  }

  PGconn* conn_;
};

// True while `pid` exists and is not a zombie.
bool ProcessRuns(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  size_t close = stat.rfind(')');
  return close != std::string::npos && close + 2 < stat.size() && stat[close + 2] != 'Z';
}

// Polls `sql` on `uri` until it returns `want`, for at most 30 s; returns
// the last value, or the last error. For what a standby has not yet applied
// (a database it does not have yet is an error, not a FAIL, here).
std::string WaitForValue(const std::string& uri, const std::string& sql, const std::string& want) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  std::string got;
  for (;;) {
    PGconn* conn = PQconnectdb((uri + "?connect_timeout=5").c_str());
    if (PQstatus(conn) != CONNECTION_OK) {
      got = PQerrorMessage(conn);
    } else {
      PGresult* res = PQexec(conn, sql.c_str());
      if (PQresultStatus(res) == PGRES_TUPLES_OK && PQntuples(res) > 0) {
        got = PQgetvalue(res, 0, 0);
      } else {
        got = PQerrorMessage(conn);
      }
      PQclear(res);
    }
    PQfinish(conn);
    if (got == want || std::chrono::steady_clock::now() > deadline) return got;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

// fsync off: these cases never kill, so they need not wait for the disk.
PgServer::Options NoFsync() {
  PgServer::Options options;
  options.fsync = false;
  return options;
}

PgServer::Options WithConf(const std::string& line) {
  PgServer::Options options;
  options.extra_conf.push_back(line);
  return options;
}

TEST_CASE("pg_server: starts, and each new database is empty and usable through libpq") {
  PgServer server(NoFsync());
  REQUIRE(server.running());
  REQUIRE(ProcessRuns(server.postmaster_pid()));
  CHECK(PgServer::Query(server.uri(), "SHOW port") == std::to_string(server.port()));
  CHECK(PgServer::Query(server.uri(), "SHOW fsync") == "off");
  CHECK(PgServer::Query(server.uri(), "SHOW max_connections") == "200");
  CHECK(PgServer::Query(server.uri(), "SELECT current_user") == "edgealloc");
  CHECK(PgServer::Query(server.uri(), "SHOW server_version_num").substr(0, 2) == "15");

  std::string a = server.NewDatabaseUri();
  std::string b = server.NewDatabaseUri();
  REQUIRE(a != b);
  {
    Conn conn(a);
    conn.Exec("CREATE TABLE t (id int PRIMARY KEY, name text NOT NULL)");
    conn.Exec("INSERT INTO t VALUES (1, 'one'), (2, 'two')");
    CHECK(conn.Exec("SELECT name FROM t WHERE id = 2") == "two");
  }
  // b is a database of its own: a's table is not there.
  CHECK(PgServer::Query(b, "SELECT count(*) FROM pg_tables WHERE tablename = 't'") == "0");

  server.CreateDatabase("named_db");
  CHECK(PgServer::Query(server.uri("named_db"), "SELECT current_database()") == "named_db");

  // The Unix socket in socket_dir() works too.
  Conn local("host=" + server.socket_dir() + " port=" + std::to_string(server.port()) +
             " user=edgealloc dbname=postgres");
  CHECK(local.Exec("SELECT 1") == "1");
}

TEST_CASE("pg_server: Stop and Start keep the data and the port") {
  PgServer server(NoFsync());
  std::string db = server.NewDatabaseUri();
  PgServer::Query(db, "CREATE TABLE t (n int); INSERT INTO t VALUES (42)");
  int port = server.port();
  pid_t old_pid = server.postmaster_pid();

  server.Stop();
  CHECK_FALSE(server.running());
  CHECK_FALSE(ProcessRuns(old_pid));
  server.Start();
  CHECK(server.port() == port);
  CHECK(server.postmaster_pid() != old_pid);
  CHECK(PgServer::Query(db, "SELECT n FROM t") == "42");
}

TEST_CASE("pg_server: Kill and Start keep every committed transaction (fsync on)") {
  PgServer server;
  CHECK(PgServer::Query(server.uri(), "SHOW fsync") == "on");
  std::string db = server.NewDatabaseUri();
  constexpr int kCommitted = 100;
  {
    Conn conn(db);
    conn.Exec("CREATE TABLE t (n int PRIMARY KEY)");
    for (int i = 1; i <= kCommitted; ++i) {
      conn.Exec("INSERT INTO t VALUES (" + std::to_string(i) + ")");  // one commit each
    }
  }
  // A transaction still open when the server dies must be gone afterwards.
  Conn open(db);
  open.Exec("BEGIN");
  open.Exec("INSERT INTO t VALUES (-1)");

  pid_t old_pid = server.postmaster_pid();
  server.Kill();
  CHECK_FALSE(server.running());
  CHECK_FALSE(ProcessRuns(old_pid));
  // The open session died with the server.
  CHECK_FALSE(open.ExecError("COMMIT").empty());

  server.Start();
  CHECK(PgServer::Query(db, "SELECT count(*) FROM t") == std::to_string(kCommitted));
  CHECK(PgServer::Query(db, "SELECT count(*) FROM t WHERE n < 0") == "0");
  // Recovery ran: the log says the server was not shut down cleanly.
  std::ifstream log(server.log_file());
  std::string text((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
  CHECK(text.find("database system was interrupted") != std::string::npos);
}

TEST_CASE("pg_server: a synchronous standby follows its primary and takes over when it dies") {
  // The standby connects as application_name = cluster_name; the primary
  // waits for it on every commit.
  PgServer primary(WithConf("synchronous_standby_names = 'pg_server_test_standby'"));
  PgServer standby =
      PgServer::StandbyOf(primary, WithConf("cluster_name = 'pg_server_test_standby'"));
  REQUIRE(standby.port() != primary.port());
  CHECK(PgServer::Query(standby.uri(), "SELECT pg_is_in_recovery()") == "t");
  CHECK(WaitForValue(primary.uri(),
                     "SELECT sync_state FROM pg_stat_replication "
                     "WHERE application_name = 'pg_server_test_standby'",
                     "sync") == "sync");

  std::string primary_db = primary.NewDatabaseUri();
  PgServer::Query(primary_db, "CREATE TABLE t (n int); INSERT INTO t VALUES (1), (2)");
  // The same database on the standby (created by replication, not by us).
  std::string standby_db = standby.uri(primary_db.substr(primary_db.rfind('/') + 1));
  CHECK(WaitForValue(standby_db, "SELECT count(*) FROM t", "2") == "2");
  {
    Conn read_only(standby_db);
    CHECK(read_only.ExecError("INSERT INTO t VALUES (3)") == "25006");  // read-only transaction
  }

  primary.Kill();
  standby.Promote();
  CHECK(PgServer::Query(standby.uri(), "SELECT pg_is_in_recovery()") == "f");
  Conn conn(standby_db);
  conn.Exec("INSERT INTO t VALUES (3)");
  CHECK(conn.Exec("SELECT sum(n) FROM t") == "6");
}

}  // namespace
