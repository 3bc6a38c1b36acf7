#pragma once

// The command line's tests (config_test.cc, warm_buffer_flag_test.cc) parse
// through this one helper: it puts the program's name first, as main()
// gets it, and keeps what the parser wrote to each stream.

#include <sstream>
#include <string>
#include <vector>

#include "server/config.h"

namespace testing {

struct Parsed {
  server::Command cmd;
  std::string out, err;
};

inline Parsed ParseArgs(std::vector<const char*> args) {
  args.insert(args.begin(), "edgealloc");
  std::ostringstream out, err;
  Parsed p;
  p.cmd = server::ParseCommandLine(static_cast<int>(args.size()), args.data(), out, err);
  p.out = out.str();
  p.err = err.str();
  return p;
}

}  // namespace testing
