#include "server/usage_hints.h"

#include <algorithm>

namespace server {

std::vector<std::string> LongFlagsOf(const CLI::App* app) {
  std::vector<std::string> flags;
  for (const CLI::Option* opt : app->get_options()) {
    for (const std::string& name : opt->get_lnames()) flags.push_back("--" + name);
  }
  return flags;
}

std::string Suggestions(const CLI::App* app, const CLI::ExtrasError& e) {
  const CLI::App* called = app;
  for (const CLI::App* sub : app->get_subcommands()) called = sub;  // the one parsed
  const std::vector<std::string> known = LongFlagsOf(called);
  std::string out;
  std::string_view what = e.what();
  size_t at = 0;
  while ((at = what.find("--", at)) != std::string_view::npos) {
    size_t end = what.find_first_of(" ,]", at);
    const std::string word(what.substr(at, end == std::string_view::npos ? end : end - at));
    const std::string near = NearestWord(word.substr(0, word.find('=')), known);
    if (!near.empty()) out += "edgealloc: did you mean " + near + " (not " + word + ")?\n";
    at = end == std::string_view::npos ? what.size() : end;
  }
  return out;
}

namespace {

std::vector<std::string> SubcommandNames(const CLI::App* app) {
  std::vector<std::string> names;
  for (const CLI::App* sub : app->get_subcommands([](const CLI::App*) { return true; })) {
    names.push_back(sub->get_name());
  }
  return names;
}

}  // namespace

std::string SubcommandHint(const CLI::App* app, const std::vector<std::string>& args) {
  const CLI::App* at = app;
  std::string path = app->get_name();
  for (const std::string& arg : args) {
    if (arg.empty() || arg[0] == '-') continue;
    const std::vector<std::string> names = SubcommandNames(at);
    if (std::find(names.begin(), names.end(), arg) == names.end()) {
      const std::string near = NearestWord(arg, names);
      if (!near.empty()) return "edgealloc: did you mean " + path + " " + near + "?\n";
      continue;  // a flag's value, or a word near nothing
    }
    at = at->get_subcommand(arg);
    path += " " + arg;
  }
  std::string list;
  for (const std::string& name : SubcommandNames(at)) list += (list.empty() ? "" : ", ") + name;
  return list.empty() ? "" : "edgealloc: " + path + " takes one of: " + list + "\n";
}

}  // namespace server
