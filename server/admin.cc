#include "server/admin.h"

#include <future>
#include <iostream>
#include <sstream>

#include "base/read_file.h"
#include "server/api/request_bodies.h"
#include "store/storage.h"

namespace server {

int RunRegister(const RegisterConfig& cfg, std::istream& in, std::ostream& out,
                std::ostream& err) {
  std::string text;
  if (cfg.file == "-") {
    std::stringstream stdin_text;
    stdin_text << in.rdbuf();
    text = stdin_text.str();
  } else if (!base::ReadFile(cfg.file, &text)) {
    err << "edgealloc register: cannot read " << cfg.file << "\n";
    return 2;
  }
  std::vector<store::ContainerSpec> specs;
  BodyError error;
  if (!ParseRegistration(text, &specs, &error)) {
    err << "edgealloc register: " << cfg.file << ": " << error.message << "\n";
    return 2;
  }

  store::StorageOptions options;
  options.db = cfg.db;
  options.shards = cfg.shards;
  options.program = "edgealloc register";
  std::unique_ptr<store::Storage> storage;
  store::Status s = store::OpenStorage(options, &storage);
  if (!s.ok()) {
    err << "edgealloc register: " << s.ToString() << "\n";
    return s.IsInvalidArgument() ? 2 : 1;
  }
  store::ContainerResult result;
  if (specs.empty()) {
    result.outcome = store::Outcome::kOk;
  } else {
    std::promise<store::ContainerResult> done;
    std::future<store::ContainerResult> future = done.get_future();
    storage->Register(std::move(specs),
                      [&done](store::ContainerResult r) { done.set_value(std::move(r)); });
    result = future.get();
  }
  storage->StopWriters();
  if (result.outcome != store::Outcome::kOk) {
    err << "edgealloc register: " << store::OutcomeName(result.outcome) << ": "
        << result.message << "\n";
    return result.outcome == store::Outcome::kConflict ? 2 : 1;
  }
  out << "registered " << result.count << "\n";
  return 0;
}

}  // namespace server
