#include "server/config_file.h"

#include <CLI/CLI.hpp>
#include <toml++/toml.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <ostream>
#include <sstream>

#include "server/usage_hints.h"

namespace server {
namespace {

std::string Where(const std::string& path, const toml::source_region& at) {
  return path + ":" + std::to_string(at.begin.line);
}

// The command-line spelling of a TOML value; false for a value no flag takes.
bool ValueText(const toml::node& node, ConfigSetting* setting) {
  if (const auto* s = node.as_string()) {
    setting->value = s->get();
  } else if (const auto* i = node.as_integer()) {
    setting->value = std::to_string(i->get());
  } else if (const auto* f = node.as_floating_point()) {
    std::ostringstream text;
    text << f->get();
    setting->value = text.str();
  } else if (const auto* b = node.as_boolean()) {
    setting->value = b->get() ? "true" : "false";
    setting->is_switch = true;
  } else if (const auto* list = node.as_array()) {
    // A flag given several times (--warm-buffer): its values joined by
    // commas, as its environment variable takes them.
    for (const toml::node& item : *list) {
      ConfigSetting one;
      if (item.is_array() || !ValueText(item, &one) || one.is_switch) return false;
      setting->value += (setting->value.empty() ? "" : ",") + one.value;
    }
  } else {
    return false;
  }
  return true;
}

// The one setting written as a table of pairs, each a flag's REGION=BACKUP:
// [serve.backup-region] weur = "eeur".
constexpr std::string_view kPairTableKey = "backup-region";

bool PairSettings(const std::string& path, const toml::table& table, const ConfigSetting& head,
                  std::vector<ConfigSetting>* settings, std::string* error) {
  for (const auto& [name, value] : table) {
    const auto* text = value.as_string();
    if (text == nullptr) {
      *error = Where(path, value.source()) + ": " + head.key + "." + std::string(name.str()) +
               ": takes a region's name in quotes";
      return false;
    }
    ConfigSetting pair = head;
    pair.line = static_cast<int>(value.source().begin.line);
    pair.value = std::string(name.str()) + "=" + text->get();
    settings->push_back(std::move(pair));
  }
  return true;
}

}  // namespace

bool ReadConfigFile(const std::string& path, std::vector<ConfigSetting>* settings,
                    std::string* error) {
  toml::table file;
  try {
    file = toml::parse_file(path);
  } catch (const toml::parse_error& e) {
    const auto& at = e.source().begin;
    *error = path + ":" + std::to_string(at.line) + ":" + std::to_string(at.column) +
             ": not TOML: " + std::string(e.description()) +
             " (a text value is quoted: listen = \"127.0.0.1:8080\")";
    return false;
  }
  const toml::table* serve = file["serve"].as_table();
  const toml::table& keys = serve != nullptr ? *serve : file;
  // With a [serve] section, a key above it would be read by nobody.
  if (serve != nullptr) {
    for (const auto& [key, node] : file) {
      if (&node == serve) continue;
      *error = Where(path, node.source()) + ": " +
               (node.is_table() ? "[" + std::string(key.str()) + "] is not a section edgealloc reads"
                                : std::string(key.str()) + " is outside [serve]");
      return false;
    }
  }
  for (const auto& [key, node] : keys) {
    ConfigSetting setting;
    setting.key = std::string(key.str());
    setting.line = static_cast<int>(node.source().begin.line);
    if (setting.key == kPairTableKey && node.is_table()) {
      if (!PairSettings(path, *node.as_table(), setting, settings, error)) return false;
      continue;
    }
    if (&keys == &file && node.is_table()) {
      *error = Where(path, node.source()) + ": [" + setting.key +
               "] is not a section edgealloc reads";
      return false;
    }
    if (!ValueText(node, &setting)) {
      *error = Where(path, node.source()) + ": " + setting.key +
               ": takes a text, a number, true/false or a list of texts or numbers";
      return false;
    }
    settings->push_back(std::move(setting));
  }
  return true;
}

// The first refusal of `value` by the option's own checks (a range, a set
// of names), "" when they take it: a file's value is checked where it is
// written, so the error can name its line, not only the flag it became.
std::string RefusalOf(CLI::Option* opt, std::string value) {
  for (int i = 0;; ++i) {
    CLI::Validator* check = nullptr;
    try {
      check = opt->get_validator(i);
    } catch (const CLI::OptionNotFound&) {
      return "";
    }
    std::string refusal = (*check)(value);
    if (!refusal.empty()) return refusal;
  }
}

std::string ConfigFileOf(int argc, const char* const* argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "--config" && i + 1 < argc) return argv[i + 1];
    if (arg.rfind("--config=", 0) == 0) return std::string(arg.substr(9));
  }
  const char* from_env = std::getenv("EDGEALLOC_CONFIG");
  return from_env != nullptr ? from_env : "";
}

bool GivenOnCommandLine(int argc, const char* const* argv, std::string_view flag) {
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == flag) return true;
    if (arg.size() > flag.size() && arg.rfind(flag, 0) == 0 && arg[flag.size()] == '=') {
      return true;
    }
  }
  return false;
}

bool ArgsWithConfigFile(CLI::App* serve, int argc, const char* const* argv,
                        std::ostream& err, std::vector<std::string>* args) {
  args->assign(argv + 1, argv + argc);
  const auto at = std::find(args->begin(), args->end(), "serve");
  const std::string path = ConfigFileOf(argc, argv);
  if (path.empty() || at == args->end() || GivenOnCommandLine(argc, argv, "--help") ||
      GivenOnCommandLine(argc, argv, "-h")) {
    return true;
  }
  std::vector<ConfigSetting> settings;
  std::string error;
  if (!std::ifstream(path).good()) {
    const bool from_flag = GivenOnCommandLine(argc, argv, "--config");
    err << "edgealloc: " << (from_flag ? "--config " : "EDGEALLOC_CONFIG=") << path
        << ": the file cannot be read (missing?)\n";
    return false;
  } else {
    ReadConfigFile(path, &settings, &error);
  }
  std::vector<std::string> from_file;
  for (const ConfigSetting& setting : settings) {
    const std::string flag = "--" + setting.key;
    CLI::Option* opt = setting.key == "config" ? nullptr : serve->get_option_no_throw(flag);
    if (opt == nullptr) {
      const std::string near = NearestWord(flag, LongFlagsOf(serve));
      error = path + ":" + std::to_string(setting.line) + ": " + setting.key +
              " is not a setting of edgealloc serve" +
              (near.empty() ? "" : " (did you mean " + near.substr(2) + "?)");
      break;
    }
    const char* env = opt->get_envname().empty() ? nullptr : std::getenv(opt->get_envname().c_str());
    if (GivenOnCommandLine(argc, argv, flag) || (env != nullptr && *env != '\0')) continue;
    if (!setting.is_switch) {
      if (std::string refusal = RefusalOf(opt, setting.value); !refusal.empty()) {
        error = path + ":" + std::to_string(setting.line) + ": " + setting.key + " = " +
                setting.value + ": " + refusal;
        break;
      }
    }
    if (setting.is_switch) {
      if (setting.value == "true") from_file.push_back(flag);
    } else {
      from_file.push_back(flag + "=" + setting.value);
    }
  }
  if (!error.empty()) {
    err << "edgealloc: --config " << error
        << " (settings go under [serve], named as the long flags of `edgealloc serve --help`; "
           "packaging/edgealloc.toml has them all)\n";
    return false;
  }
  args->insert(at + 1, from_file.begin(), from_file.end());
  return true;
}

}  // namespace server
