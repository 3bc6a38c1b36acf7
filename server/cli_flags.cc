#include "server/cli_flags.h"

#include <cctype>
#include <charconv>

#include "server/config.h"

namespace server {

CLI::Validator InRange(int64_t lo, int64_t hi, const std::string& what) {
  return CLI::Validator(
      [lo, hi, what](std::string& s) -> std::string {
        int64_t v = 0;
        auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
        if (ec != std::errc() || end != s.data() + s.size()) {
          return "'" + s + "' is not a whole number (" + what + ")";
        }
        if (v < lo || v > hi) {
          return "must be between " + std::to_string(lo) + " and " + std::to_string(hi) + ", got " +
                 s + " (" + what + ")";
        }
        return "";
      },
      "", "InRange");
}

std::string EnvNameOf(const std::string& flag) {
  std::string name = "EDGEALLOC_";
  for (char c : flag.substr(2)) name += c == '-' ? '_' : static_cast<char>(std::toupper(c));
  return name;
}

CLI::Option* AddWord(CLI::App* app, const std::string& flag, std::string* value,
                     const std::string& help, std::vector<std::string> words) {
  return AddFlag(app, flag, value, help)->check(CLI::IsMember(words))->capture_default_str();
}

CLI::App* AddRegisterCommand(CLI::App* app, RegisterConfig* r) {
  CLI::App* reg = app->add_subcommand(
      "register",
      "Register containers from a JSON file ({\"containers\":[...]}, as POST /v1/containers), "
      "also while a server runs.");
  AddFlag(reg, "--db", &r->db, "SQLite database file, or a PostgreSQL URI (postgresql://...)")
      ->capture_default_str();
  AddNumber(reg, "--shards", &r->shards, "database files the pool is split over (as the server)", 1,
            kMaxShards, "database files the pool is split over");
  reg->add_option("file", r->file, "JSON file, or - for stdin")->required();
  return reg;
}

}  // namespace server
