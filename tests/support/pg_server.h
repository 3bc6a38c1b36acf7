#ifndef EDGEALLOC_TESTS_SUPPORT_PG_SERVER_H_
#define EDGEALLOC_TESTS_SUPPORT_PG_SERVER_H_

#include <sys/types.h>

#include <string>
#include <vector>

#include "tests/support/temp_dir.h"

namespace testing {

// A PgServer is a real PostgreSQL 15 server of its own (no mock): a cluster
// made by initdb in a TempDir, listening on 127.0.0.1 at a free port and on
// a Unix socket in that folder, with trust authentication for the superuser
// `edgealloc`. The constructor returns with the server accepting
// connections; the destructor stops it (immediate mode) and removes every
// file. Tests get an empty database each from NewDatabaseUri().
//
// Failures: every step that fails (initdb, start, stop, a query of the
// fixture's own) FAILs the running Catch2 test case with the command, its
// output and the tail of the server log. No step waits unbounded: each
// command and each wait gives up after about 30 s.
//
// As root (initdb and postgres refuse root), the programs run as the
// `postgres` system user (setpriv): the TempDir is handed to that user, and
// folders above it that others could not pass through get o+x.
//
// Thread rules: owned by one thread, the test case's (FAIL is Catch2's and
// wants that thread). port(), uri() and the paths never change after the
// constructor and may be read from any thread, e.g. by the code under test;
// Query() is static and may run on any thread that may FAIL. Servers of
// different objects are independent (ctest -j runs them side by side).
//
// Crashes: Kill() ends the processes, not the machine; what PostgreSQL had
// written to the kernel survives it, so Kill() + Start() tests recovery
// from the WAL, not the fsyncs (fsync off would pass it too). There is no
// power-loss simulation here.
class PgServer {
 public:
  struct Options {
    // fsync = on, the default, as in production; off skips the disk
    // flushes (commits, checkpoints, the sync before crash recovery) where a
    // test does not care.
    bool fsync = true;
    // Lines appended to the server's settings, after the fixture's own
    // (later lines win), e.g. "synchronous_standby_names = 'standby'".
    std::vector<std::string> extra_conf;
  };

  PgServer() : PgServer(Options{}) {}
  explicit PgServer(const Options& options);
  PgServer(const PgServer&) = delete;
  PgServer& operator=(const PgServer&) = delete;
  ~PgServer();

  // A streaming standby of `primary` (pg_basebackup -R -X stream), started
  // and accepting read-only connections, with its own folder and port; it
  // replicates from `primary` until Promote(). For the synchronous case give
  // the standby "cluster_name = 'NAME'" in options.extra_conf (its
  // walreceiver then connects under that application_name) and the primary
  // "synchronous_standby_names = 'NAME'", and make the standby before the
  // first write on the primary, whose commit would otherwise wait for it
  // (until statement_timeout, if one is set).
  // (Returned as a prvalue: `auto standby = PgServer::StandbyOf(primary);`
  // constructs in place; PgServer is not movable.)
  static PgServer StandbyOf(const PgServer& primary, const Options& options);
  static PgServer StandbyOf(const PgServer& primary);

  // 127.0.0.1's port (also the Unix socket's name in socket_dir()).
  int port() const { return port_; }
  // The folder of the Unix socket (host=socket_dir() connects through it).
  const std::string& socket_dir() const { return dir_.path(); }
  // The data directory (PGDATA) and the server's log file.
  std::string data_dir() const { return dir_.File("data"); }
  std::string log_file() const { return dir_.File("server.log"); }

  // "postgresql://edgealloc@127.0.0.1:PORT/DBNAME". The database "postgres"
  // always exists; others come from CreateDatabase / NewDatabaseUri.
  std::string uri(const std::string& dbname = "postgres") const;
  // CREATE DATABASE `name` (an SQL identifier: letters, digits, _).
  void CreateDatabase(const std::string& name);
  // Creates an empty database with a name no other call on this server gave
  // and returns its uri().
  std::string NewDatabaseUri();

  // Runs `sql` (one or more statements) over libpq on the database of
  // `uri` and returns the first column of the first row of the last result
  // ("" if none or NULL). For the tests' own checks; FAILs on any error.
  // Statements give up after 30 s (statement_timeout).
  static std::string Query(const std::string& uri, const std::string& sql);

  // pg_ctl stop -m fast: sessions are ended, a checkpoint is written.
  void Stop();
  // SIGKILL to the postmaster and all its processes at once (see Crashes
  // above). Returns with every process gone; the next Start() runs crash
  // recovery. The server's connections break (clients see an error).
  void Kill();
  // Starts the server again on the same data directory and port, after
  // Stop() or Kill(); returns when it accepts connections.
  void Start();
  // pg_ctl promote -w: a standby becomes a primary, accepting writes.
  void Promote();
  bool running() const { return running_; }
  // The postmaster's pid while running (-1 otherwise).
  pid_t postmaster_pid() const { return postmaster_pid_; }

  // The last `bytes` of the server log (for failure messages).
  std::string LogTail(size_t bytes = 4000) const;

 private:
  struct StandbyTag {};
  PgServer(StandbyTag, const PgServer& primary, const Options& options);

  // Writes the fixture's settings (edgealloc_test.conf, included from
  // postgresql.conf) for port_ and options_.
  void WriteConf();
  // Start() with a fresh free port each time the port turns out taken.
  void StartOnFreePort();
  // pg_ctl start; false (no FAIL) if the server did not come up, with
  // `why` saying what happened.
  bool TryStart(std::string* why);
  // Stops without FAIL, for the destructor and failure paths.
  void StopQuietly();
  // SIGKILLs the postmaster and its children and waits until they are gone;
  // false if one would not die in time.
  bool KillAll(std::string* why);
  // Removes the pid and socket lock files a killed server left.
  void RemoveStaleLockFiles();

  Options options_;
  TempDir dir_;
  int port_ = 0;
  bool running_ = false;
  pid_t postmaster_pid_ = -1;
  int next_database_ = 0;
};

}  // namespace testing

#endif  // EDGEALLOC_TESTS_SUPPORT_PG_SERVER_H_
