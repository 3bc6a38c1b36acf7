#ifndef EDGEALLOC_SERVER_CLI_FLAGS_H_
#define EDGEALLOC_SERVER_CLI_FLAGS_H_

#include <CLI/CLI.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace server {

// The largest number a millisecond or count flag takes: past any real use,
// far from overflow when added to a clock.
constexpr int64_t kBigFlagValue = int64_t{1} << 50;
// The most shard files --shards takes.
constexpr int kMaxShards = 256;

struct RegisterConfig;
// The `register` subcommand and its flags, into *r.
CLI::App* AddRegisterCommand(CLI::App* app, RegisterConfig* r);

// A validator for an integer flag in [lo, hi]; the message says what the flag
// is for, so that a newcomer sees why the value was refused.
CLI::Validator InRange(int64_t lo, int64_t hi, const std::string& what);

// The environment variable of a flag: EDGEALLOC_ and its long name in
// capitals, '-' as '_' (--max-lease-ms: EDGEALLOC_MAX_LEASE_MS).
std::string EnvNameOf(const std::string& flag);

// A flag, its variable and its environment variable.
template <typename T>
CLI::Option* AddFlag(CLI::App* app, const std::string& flag, T* value, const std::string& help) {
  return app->add_option(flag, *value, help)->envname(EnvNameOf(flag));
}

// A whole-number flag in [lo, hi] (`what` says what it is for, in a refusal),
// its default shown in --help.
template <typename T>
CLI::Option* AddNumber(CLI::App* app, const std::string& flag, T* value, const std::string& help,
                       int64_t lo, int64_t hi, const std::string& what) {
  return AddFlag(app, flag, value, help)->check(InRange(lo, hi, what))->capture_default_str();
}

// A flag of a few words, one of `words`, its default shown in --help.
CLI::Option* AddWord(CLI::App* app, const std::string& flag, std::string* value,
                     const std::string& help, std::vector<std::string> words);

}  // namespace server

#endif  // EDGEALLOC_SERVER_CLI_FLAGS_H_
