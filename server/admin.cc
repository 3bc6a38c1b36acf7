#include "server/admin.h"

#include <fstream>
#include <future>
#include <iostream>
#include <sstream>

#include "allocator/registry.h"
#include "server/api/request_bodies.h"
#include "store/shard.h"

namespace server {

int RunRegister(const RegisterConfig& cfg, std::istream& in, std::ostream& out,
                std::ostream& err) {
  std::stringstream text;
  if (cfg.file == "-") {
    text << in.rdbuf();
  } else {
    std::ifstream file(cfg.file, std::ios::binary);
    if (!file) {
      err << "edgealloc register: cannot read " << cfg.file << "\n";
      return 2;
    }
    text << file.rdbuf();
  }
  std::vector<allocator::ContainerSpec> specs;
  BodyError error;
  if (!ParseRegistration(text.str(), &specs, &error)) {
    err << "edgealloc register: " << cfg.file << ": " << error.message << "\n";
    return 2;
  }

  store::ShardMap map(cfg.db, cfg.shards);
  store::DbOptions options;
  options.program = "edgealloc register";
  std::vector<std::unique_ptr<store::Shard>> shards;
  store::Status s = store::OpenShards(map, options, store::WriterOptions{}, &shards);
  if (!s.ok()) {
    err << "edgealloc register: " << s.ToString() << "\n";
    return s.IsInvalidArgument() ? 2 : 1;
  }
  std::vector<store::Shard*> raw;
  for (auto& shard : shards) raw.push_back(shard.get());
  allocator::Registry registry(raw, map);
  allocator::ContainerResult result;
  if (specs.empty()) {
    result.outcome = allocator::Outcome::kOk;
  } else {
    std::promise<allocator::ContainerResult> done;
    std::future<allocator::ContainerResult> future = done.get_future();
    registry.Register(std::move(specs),
                      [&done](allocator::ContainerResult r) { done.set_value(std::move(r)); });
    result = future.get();
  }
  for (auto& shard : shards) shard->writer->Stop();
  if (result.outcome != allocator::Outcome::kOk) {
    err << "edgealloc register: " << allocator::OutcomeName(result.outcome) << ": "
        << result.message << "\n";
    return result.outcome == allocator::Outcome::kConflict ? 2 : 1;
  }
  out << "registered " << result.count << "\n";
  return 0;
}

}  // namespace server
