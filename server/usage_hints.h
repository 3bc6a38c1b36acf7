// What a mistyped command line is told: the nearest flag or subcommand to
// a word that is none, or the subcommands a command takes. Used by the
// command line (config.cc) and the --config file (config_file.cc).

#ifndef EDGEALLOC_SERVER_USAGE_HINTS_H_
#define EDGEALLOC_SERVER_USAGE_HINTS_H_

#include <CLI/CLI.hpp>

#include <string>
#include <string_view>
#include <vector>

#include "base/nearest_word.h"

namespace server {

// The nearest word to a typo, shared with the request bodies' field check.
using base::NearestWord;

// The long flags of `app` ("--listen"), for suggesting one for a typo.
std::vector<std::string> LongFlagsOf(const CLI::App* app);

// "did you mean --listen?" lines for each unexpected argument of `e` that
// is near a flag of the subcommand that was called (or of `app`).
std::string Suggestions(const CLI::App* app, const CLI::ExtrasError& e);

// For a command that lacks its subcommand (CLI11's "A subcommand is
// required"): "did you mean edgealloc sessions?" for the word typed where
// it goes, else the subcommands there are. `args` as given, first first.
std::string SubcommandHint(const CLI::App* app, const std::vector<std::string>& args);

}  // namespace server

#endif  // EDGEALLOC_SERVER_USAGE_HINTS_H_
