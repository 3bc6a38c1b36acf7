#ifndef EDGEALLOC_SERVER_CONFIG_FILE_H_
#define EDGEALLOC_SERVER_CONFIG_FILE_H_

#include <iosfwd>
#include <string>
#include <string_view>
#include <vector>

namespace CLI {
class App;
class ExtrasError;
}  // namespace CLI

namespace server {

// One setting of a config file: a long flag without its dashes and its value
// as it would be written on the command line, and where it stands.
struct ConfigSetting {
  std::string key;    // "listen", "lease-ms"
  std::string value;  // "127.0.0.1:8080", "60000", "true" / "false" for a switch
  bool is_switch = false;
  int line = 0;
};

// Reads a TOML config file (toml++): the keys of its [serve] table, or of
// its top level for a file without one. A value is a string, a whole
// number, a number or true/false; anything else (an array, a table, a date)
// is refused, but for backup-region, a table of REGION = "BACKUP" pairs
// (`[serve.backup-region]`), each a setting "backup-region" of value
// "REGION=BACKUP". False with *error naming the file, the line and the key, or
// the parser's own words and position for a file that is not TOML.
bool ReadConfigFile(const std::string& path, std::vector<ConfigSetting>* settings,
                    std::string* error);

// The config file named on the command line (`--config FILE` or
// `--config=FILE`, before or after the subcommand), else by EDGEALLOC_CONFIG;
// empty for none.
std::string ConfigFileOf(int argc, const char* const* argv);

// True if `flag` ("--listen") is given in `argv`, as `--listen X` or
// `--listen=X`.
bool GivenOnCommandLine(int argc, const char* const* argv, std::string_view flag);

// The arguments to parse: argv without its program name, with the config
// file's settings (if a file is named, ConfigFileOf) put right after `serve`
// as flags, each only where neither the command line nor its EDGEALLOC_*
// variable sets it, so that the order is flag, then environment, then file,
// then default. False with a usage error on `err` for a file that cannot be
// read or names a key `serve` lacks (with the nearest for a typo).
bool ArgsWithConfigFile(CLI::App* serve, int argc, const char* const* argv,
                        std::ostream& err, std::vector<std::string>* args);

}  // namespace server

#endif  // EDGEALLOC_SERVER_CONFIG_FILE_H_
