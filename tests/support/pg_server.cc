#include "tests/support/pg_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <libpq-fe.h>
#include <netinet/in.h>
#include <pwd.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <thread>

extern char** environ;

namespace testing {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

// Debian 12's postgresql-15 (scripts/setup.sh installs it).
constexpr char kBinDir[] = "/usr/lib/postgresql/15/bin/";
constexpr char kSuperuser[] = "edgealloc";
constexpr char kConfFile[] = "edgealloc_test.conf";
// Every command and every wait of the fixture gives up after this: a test
// that fails is better than one that hangs CI. pg_ctl gets kTimeoutSeconds
// (-t) and the command itself kCommandTimeout, a little more, so pg_ctl's
// own message is what a failure shows.
constexpr int kTimeoutSeconds = 30;
constexpr auto kWaitTimeout = std::chrono::seconds(kTimeoutSeconds);
constexpr auto kCommandTimeout = std::chrono::seconds(kTimeoutSeconds + 15);

bool IsRoot() { return ::geteuid() == 0; }

std::string Bin(const char* name) { return std::string(kBinDir) + name; }

// The file's bytes from offset `from` on ("" if it cannot be read). Reads
// to the end rather than trusting the size: /proc files say 0.
std::string ReadFile(const std::string& path, size_t from = 0) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return "";
  if (from > 0 && !in.seekg(static_cast<std::streamoff>(from))) return "";
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

size_t FileSize(const std::string& path) {
  std::error_code ec;
  auto size = fs::file_size(path, ec);
  return ec ? 0 : static_cast<size_t>(size);
}

struct PostgresUser {
  uid_t uid;
  gid_t gid;
};

// The `postgres` system user, whom initdb and postgres run as when we are
// root (they refuse root).
PostgresUser PostgresAccount() {
  struct passwd* pw = ::getpwnam("postgres");
  if (pw == nullptr) {
    FAIL(
        "running as root, but there is no `postgres` user to run PostgreSQL as "
        "(scripts/setup.sh installs the postgresql package, which makes it)");
  }
  return {pw->pw_uid, pw->pw_gid};
}

// Writes `text` to `path`, owned by whom the server runs as.
void WriteServerFile(const std::string& path, const std::string& text, bool append) {
  {
    std::ofstream out(path, append ? std::ios::app : std::ios::trunc);
    out << text;
    if (!out.flush()) FAIL("cannot write " << path);
  }
  if (IsRoot()) {
    PostgresUser pg = PostgresAccount();
    if (::chown(path.c_str(), pg.uid, pg.gid) != 0) {
      FAIL("chown " << path << ": " << std::strerror(errno));
    }
  }
}

struct CommandResult {
  std::string command;  // as a shell would show it
  int exit_code = -1;   // 128 + signal if a signal ended it
  bool timed_out = false;
  std::string output;  // stdout and stderr, interleaved

  bool ok() const { return !timed_out && exit_code == 0; }
  std::string Describe() const {
    std::ostringstream text;
    text << "$ " << command << "\n";
    if (timed_out) {
      text << "(killed: still running after " << kCommandTimeout.count() << " s)\n";
    } else {
      text << "(exit code " << exit_code << ")\n";
    }
    text << output;
    return text.str();
  }
};

// Runs argv[0] (a full path) in `cwd`, as the postgres user when we are
// root, with stdout and stderr into `out_file` (a file, not a pipe: the
// server pg_ctl starts could otherwise hold our pipe open). Kills its
// process group after kCommandTimeout. PG* variables of our environment are
// left out, so only the arguments say where to connect.
CommandResult Run(std::vector<std::string> argv, const std::string& cwd,
                  const std::string& out_file) {
  if (IsRoot()) {
    PostgresAccount();  // FAILs early and clearly if there is none.
    argv.insert(argv.begin(), {"/usr/bin/setpriv", "--reuid=postgres", "--regid=postgres",
                               "--init-groups", "--"});
  }
  CommandResult result;
  for (const auto& arg : argv) result.command += (result.command.empty() ? "" : " ") + arg;

  // Everything the child needs is built before fork: between fork and exec
  // only async-signal-safe calls.
  std::vector<char*> args;
  for (auto& arg : argv) args.push_back(arg.data());
  args.push_back(nullptr);
  std::vector<char*> env;
  for (char** e = environ; *e != nullptr; ++e) {
    if (std::strncmp(*e, "PG", 2) != 0) env.push_back(*e);
  }
  env.push_back(nullptr);
  int out = ::open(out_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (out < 0) FAIL("open " << out_file << ": " << std::strerror(errno));
  int null_in = ::open("/dev/null", O_RDONLY | O_CLOEXEC);

  pid_t pid = ::fork();
  if (pid < 0) {
    ::close(out);
    ::close(null_in);
    FAIL("fork: " << std::strerror(errno));
  }
  if (pid == 0) {
    ::setpgid(0, 0);
    ::dup2(null_in, 0);
    ::dup2(out, 1);
    ::dup2(out, 2);
    ::close_range(3, ~0U, 0);  // no test fd (sockets, files) leaks into a server
    if (::chdir(cwd.c_str()) != 0) ::_exit(126);
    ::execve(args[0], args.data(), env.data());
    ::_exit(127);
  }
  ::close(out);
  ::close(null_in);

  auto deadline = Clock::now() + kCommandTimeout;
  int status = 0;
  for (;;) {
    pid_t done = ::waitpid(pid, &status, WNOHANG);
    if (done == pid) break;
    if (done < 0 && errno != EINTR) {
      result.output = "waitpid: " + std::string(std::strerror(errno));
      return result;
    }
    if (Clock::now() > deadline) {
      ::kill(-pid, SIGKILL);
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      result.timed_out = true;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  if (!result.timed_out) {
    result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }
  result.output = ReadFile(out_file);
  return result;
}

// A port nobody listens on now: the kernel's pick for 127.0.0.1:0. Another
// process may take it before the server binds it; StartOnFreePort retries.
int FreePort() {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) FAIL("socket: " << std::strerror(errno));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof addr;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    int error = errno;
    ::close(fd);
    FAIL("bind 127.0.0.1:0: " << std::strerror(error));
  }
  ::close(fd);
  return ntohs(addr.sin_port);
}

// The third field of /proc/PID/stat (state) and the fourth (ppid); false if
// there is no such process.
bool ProcStat(pid_t pid, char* state, pid_t* ppid) {
  std::string stat = ReadFile("/proc/" + std::to_string(pid) + "/stat");
  // The command name (field 2) is in parentheses and may hold anything.
  size_t close = stat.rfind(')');
  if (close == std::string::npos) return false;
  std::istringstream rest(stat.substr(close + 1));
  long parent = 0;
  if (!(rest >> *state >> parent)) return false;
  *ppid = static_cast<pid_t>(parent);
  return true;
}

// True while `pid` runs. A zombie counts as gone: nobody may reap it (a
// container's pid 1 need not), and it holds no file, socket or memory.
bool Alive(pid_t pid) {
  char state = 0;
  pid_t ppid = 0;
  return ProcStat(pid, &state, &ppid) && state != 'Z' && state != 'X';
}

std::vector<pid_t> ChildrenOf(pid_t parent) {
  std::vector<pid_t> children;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator("/proc", ec)) {
    const std::string name = entry.path().filename().string();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    pid_t pid = static_cast<pid_t>(std::stol(name));
    char state = 0;
    pid_t ppid = 0;
    if (ProcStat(pid, &state, &ppid) && ppid == parent) children.push_back(pid);
  }
  return children;
}

// The postmaster's pid from the first line of DATA/postmaster.pid (-1 if
// there is none).
pid_t PidFileOwner(const std::string& data_dir) {
  std::istringstream in(ReadFile(data_dir + "/postmaster.pid"));
  long pid = -1;
  if (!(in >> pid) || pid <= 0) return -1;
  return static_cast<pid_t>(pid);
}

bool WaitUntil(const std::function<bool()>& done) {
  auto deadline = Clock::now() + kWaitTimeout;
  while (!done()) {
    if (Clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return true;
}

// Makes `dir` (a fresh TempDir) the postgres user's, and every folder above
// it passable (o+x) for that user, when we are root.
void HandToServerUser(const std::string& dir) {
  if (!IsRoot()) return;
  PostgresUser pg = PostgresAccount();
  if (::chown(dir.c_str(), pg.uid, pg.gid) != 0) {
    FAIL("chown " << dir << ": " << std::strerror(errno));
  }
  for (fs::path p = fs::path(dir).parent_path(); !p.empty(); p = p.parent_path()) {
    struct stat st;
    if (::stat(p.c_str(), &st) == 0 && (st.st_mode & S_IXOTH) == 0) {
      if (::chmod(p.c_str(), (st.st_mode & 07777) | S_IXOTH) != 0) {
        FAIL("chmod o+x " << p.string()
                          << " (the postgres user must pass through it): " << std::strerror(errno));
      }
    }
    if (p == p.root_path()) break;
  }
}

CommandResult InitDb(const std::string& data_dir, const std::string& cwd,
                     const std::string& out_file) {
  return Run({Bin("initdb"), "-D", data_dir, "-A", "trust", "-U", kSuperuser, "--no-sync", "-E",
              "UTF8", "--locale=C"},
             cwd, out_file);
}

// The template cluster every fixture copies (TemplateCluster), in the
// temporary directory; the name changes with initdb's arguments.
fs::path TemplatePath() {
  return fs::temp_directory_path() / ("edgealloc-pg-template-15-v1-uid" + std::to_string(::geteuid()));
}

// The data directory of a fresh cluster made once on this machine, or ""
// if it could not be made. initdb gives the same cluster every time and
// took about 1.5 s of CPU, where a copy takes about 0.1 s; the PostgreSQL
// tests start some 150 clusters a run. Made aside and renamed into place,
// so concurrent test processes see a whole template or none.
std::string TemplateCluster(const std::string& out_file) {
  const fs::path path = TemplatePath();
  const std::string data = (path / "data").string();
  std::error_code ec;
  if (fs::exists(data + "/PG_VERSION", ec)) return data;
  std::string aside = path.string() + ".XXXXXX";
  if (::mkdtemp(aside.data()) == nullptr) return "";
  HandToServerUser(aside);
  if (InitDb(aside + "/data", aside, out_file).ok() &&
      (::rename(aside.c_str(), path.c_str()) == 0 || fs::exists(data + "/PG_VERSION", ec))) {
    fs::remove_all(aside, ec);  // another process's won the rename, or ours is gone
    return data;
  }
  fs::remove_all(aside, ec);
  return "";
}

// A fresh cluster in data_dir: a copy of the template, or initdb's own.
void MakeCluster(const std::string& data_dir, const std::string& cwd,
                 const std::string& out_file) {
  const std::string source = TemplateCluster(out_file);
  if (!source.empty() && Run({"/bin/cp", "-a", source, data_dir}, cwd, out_file).ok()) return;
  std::error_code ec;
  fs::remove_all(data_dir, ec);
  CommandResult init = InitDb(data_dir, cwd, out_file);
  if (!init.ok()) FAIL("initdb failed:\n" << init.Describe());
}

// An open libpq connection, closed on scope exit.
struct Connection {
  PGconn* conn;
  explicit Connection(const std::string& uri) {
    // connect_timeout and statement_timeout: no query of the fixture waits
    // unbounded, not even a commit waiting for a synchronous standby.
    const std::string options = "-c statement_timeout=" + std::to_string(kTimeoutSeconds * 1000);
    const char* keys[] = {"dbname", "connect_timeout", "options", nullptr};
    const char* values[] = {uri.c_str(), "10", options.c_str(), nullptr};
    conn = PQconnectdbParams(keys, values, /*expand_dbname=*/1);
  }
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;
  ~Connection() { PQfinish(conn); }
};

bool ValidIdentifier(const std::string& name) {
  return !name.empty() && name.size() < 64 &&
         name.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789_") == std::string::npos &&
         !std::isdigit(static_cast<unsigned char>(name[0]));
}

}  // namespace

PgServer::PgServer(const Options& options) : options_(options) {
  HandToServerUser(dir_.path());
  MakeCluster(data_dir(), dir_.path(), dir_.File("command.out"));
  // Our settings live in a file of their own, included last, so a standby
  // (whose pg_basebackup copies both) rewrites just that file.
  WriteServerFile(data_dir() + "/postgresql.conf",
                  "\n# tests/support/pg_server.cc\ninclude '" + std::string(kConfFile) + "'\n",
                  /*append=*/true);
  StartOnFreePort();
}

PgServer PgServer::StandbyOf(const PgServer& primary, const Options& options) {
  return PgServer(StandbyTag{}, primary, options);
}

PgServer PgServer::StandbyOf(const PgServer& primary) {
  return PgServer(StandbyTag{}, primary, Options{});
}

PgServer::PgServer(StandbyTag, const PgServer& primary, const Options& options)
    : options_(options) {
  HandToServerUser(dir_.path());
  // -c fast: the backup's checkpoint at once, not spread over minutes.
  // -R: standby.signal and primary_conninfo, so it starts as a standby.
  // --no-sync, as initdb's: Kill() keeps the page cache, and a server
  // started after a crash syncs all its files before recovery anyway.
  CommandResult backup =
      Run({Bin("pg_basebackup"), "-D", data_dir(), "-R", "-X", "stream", "-c", "fast", "--no-sync",
           "-h", "127.0.0.1", "-p", std::to_string(primary.port()), "-U", kSuperuser},
          dir_.path(), dir_.File("command.out"));
  if (!backup.ok()) {
    FAIL("pg_basebackup of the primary failed:\n"
         << backup.Describe() << "\n--- primary's log:\n"
         << primary.LogTail());
  }
  StartOnFreePort();
}

PgServer::~PgServer() {
  if (running_) StopQuietly();
}

std::string PgServer::uri(const std::string& dbname) const {
  return "postgresql://" + std::string(kSuperuser) + "@127.0.0.1:" + std::to_string(port_) + "/" +
         dbname;
}

void PgServer::CreateDatabase(const std::string& name) {
  if (!ValidIdentifier(name)) FAIL("not a plain SQL identifier: '" << name << "'");
  Query(uri("postgres"), "CREATE DATABASE " + name);
}

std::string PgServer::NewDatabaseUri() {
  const std::string name = "test_" + std::to_string(++next_database_);
  CreateDatabase(name);
  return uri(name);
}

std::string PgServer::Query(const std::string& uri, const std::string& sql) {
  Connection c(uri);
  if (PQstatus(c.conn) != CONNECTION_OK) {
    FAIL("cannot connect to " << uri << ": " << PQerrorMessage(c.conn));
  }
  PGresult* res = PQexec(c.conn, sql.c_str());
  ExecStatusType status = PQresultStatus(res);
  if (status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK) {
    std::string error = PQerrorMessage(c.conn);
    PQclear(res);
    FAIL("on " << uri << ": " << sql << "\n" << error);
  }
  std::string value;
  if (status == PGRES_TUPLES_OK && PQntuples(res) > 0 && PQnfields(res) > 0 &&
      !PQgetisnull(res, 0, 0)) {
    value = PQgetvalue(res, 0, 0);
  }
  PQclear(res);
  return value;
}

void PgServer::WriteConf() {
  std::ostringstream conf;
  conf << "# Written by tests/support/pg_server.cc for this server.\n"
       << "port = " << port_ << "\n"
       << "listen_addresses = '127.0.0.1'\n"
       << "unix_socket_directories = '" << dir_.path() << "'\n"
       << "max_connections = 200\n"
       << "fsync = " << (options_.fsync ? "on" : "off")
       << "\n"
       // After a crash the server first syncs all of PGDATA (initdb and
       // pg_basebackup ran with --no-sync): file by file, the default, took
       // 2.3 s on the 2-core test machine, one syncfs() 0.4 s.
       << "recovery_init_sync_method = syncfs\n";
  for (const auto& line : options_.extra_conf) conf << line << "\n";
  WriteServerFile(data_dir() + "/" + kConfFile, conf.str(), /*append=*/false);
}

void PgServer::StartOnFreePort() {
  std::string why;
  for (int attempt = 0; attempt < 5; ++attempt) {
    port_ = FreePort();
    WriteConf();
    if (TryStart(&why)) return;
    // Someone took the port between FreePort and the server's bind: again.
    if (why.find("Address already in use") == std::string::npos) break;
  }
  FAIL("PostgreSQL did not start:\n" << why);
}

void PgServer::Start() {
  if (running_) FAIL("Start(): the server is running already");
  std::string why;
  if (!TryStart(&why)) FAIL("PostgreSQL did not start again:\n" << why);
}

bool PgServer::TryStart(std::string* why) {
  RemoveStaleLockFiles();
  const size_t log_start = FileSize(log_file());
  // -w -t: pg_ctl returns once the server accepts connections (a standby:
  // read-only ones), or fails after the timeout.
  CommandResult start = Run({Bin("pg_ctl"), "-D", data_dir(), "-l", log_file(), "-w", "-t",
                             std::to_string(kTimeoutSeconds), "start"},
                            dir_.path(), dir_.File("command.out"));
  pid_t pid = PidFileOwner(data_dir());
  if (!start.ok()) {
    *why = start.Describe() + "\n--- server log:\n" + ReadFile(log_file(), log_start);
    // A server that came up too slowly must not outlive the test.
    if (pid > 0 && Alive(pid)) {
      postmaster_pid_ = pid;
      std::string ignored;
      KillAll(&ignored);
    }
    postmaster_pid_ = -1;
    return false;
  }
  postmaster_pid_ = pid;
  running_ = true;
  // pg_ctl -w said ready; a connection through TCP (what the tests use, not
  // the socket pg_ctl tried) says it too.
  const std::string conninfo = uri() + "?connect_timeout=5";
  if (!WaitUntil([&] { return PQping(conninfo.c_str()) == PQPING_OK; })) {
    *why = "pg_ctl started the server, but " + uri() + " does not answer\n--- server log:\n" +
           LogTail();
    StopQuietly();
    return false;
  }
  return true;
}

void PgServer::Stop() {
  if (!running_) FAIL("Stop(): the server is not running");
  CommandResult stop = Run({Bin("pg_ctl"), "-D", data_dir(), "-m", "fast", "-w", "-t",
                            std::to_string(kTimeoutSeconds), "stop"},
                           dir_.path(), dir_.File("command.out"));
  if (!stop.ok()) {
    std::string message = stop.Describe() + "\n--- server log:\n" + LogTail();
    StopQuietly();
    FAIL("pg_ctl stop failed:\n" << message);
  }
  pid_t pid = postmaster_pid_;
  bool gone = WaitUntil([pid] { return !Alive(pid); });
  running_ = false;
  postmaster_pid_ = -1;
  if (!gone) FAIL("the postmaster (pid " << pid << ") outlived pg_ctl stop");
}

void PgServer::Kill() {
  if (!running_) FAIL("Kill(): the server is not running");
  std::string why;
  bool dead = KillAll(&why);
  running_ = false;
  if (!dead) FAIL(why);
  RemoveStaleLockFiles();
}

void PgServer::Promote() {
  if (!running_) FAIL("Promote(): the server is not running");
  CommandResult promote =
      Run({Bin("pg_ctl"), "-D", data_dir(), "-w", "-t", std::to_string(kTimeoutSeconds), "promote"},
          dir_.path(), dir_.File("command.out"));
  if (!promote.ok()) {
    FAIL("pg_ctl promote failed:\n" << promote.Describe() << "\n--- server log:\n" << LogTail());
  }
}

void PgServer::StopQuietly() {
  // Immediate: no checkpoint, the quickest way down; the files go anyway.
  Run({Bin("pg_ctl"), "-D", data_dir(), "-m", "immediate", "-w", "-t",
       std::to_string(kTimeoutSeconds), "stop"},
      dir_.path(), dir_.File("command.out"));
  std::string ignored;
  if (postmaster_pid_ > 0 && Alive(postmaster_pid_)) KillAll(&ignored);
  running_ = false;
  postmaster_pid_ = -1;
}

bool PgServer::KillAll(std::string* why) {
  pid_t pm = postmaster_pid_ > 0 ? postmaster_pid_ : PidFileOwner(data_dir());
  if (pm <= 0) {
    *why = "no postmaster pid to kill";
    return false;
  }
  // Stopped, the postmaster forks no new process while we list its
  // children; then all die at once.
  ::kill(pm, SIGSTOP);
  std::vector<pid_t> all = ChildrenOf(pm);
  all.push_back(pm);
  ::kill(pm, SIGKILL);
  for (pid_t child : all) ::kill(child, SIGKILL);
  postmaster_pid_ = -1;
  if (!WaitUntil([&] {
        for (pid_t pid : all) {
          if (Alive(pid)) return false;
        }
        return true;
      })) {
    *why = "a PostgreSQL process survived SIGKILL for " + std::to_string(kTimeoutSeconds) + " s";
    return false;
  }
  return true;
}

void PgServer::RemoveStaleLockFiles() {
  // A new postmaster refuses to start while the pid in postmaster.pid (or in
  // the socket's lock file) exists, and a zombie nobody reaps exists. On a
  // real machine the pid would just be gone; here we remove the files once
  // the pid is dead, which is what the server then does itself.
  pid_t owner = PidFileOwner(data_dir());
  if (owner > 0 && Alive(owner)) return;
  std::error_code ec;
  fs::remove(data_dir() + "/postmaster.pid", ec);
  for (const auto& entry : fs::directory_iterator(dir_.path(), ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind(".s.PGSQL.", 0) == 0) fs::remove(entry.path(), ec);
  }
}

std::string PgServer::LogTail(size_t bytes) const {
  size_t size = FileSize(log_file());
  return ReadFile(log_file(), size > bytes ? size - bytes : 0);
}

}  // namespace testing
