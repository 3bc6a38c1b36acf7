#include "server/service_options.h"

#include <catch2/catch.hpp>
#include <limits>

namespace server {
namespace {

TEST_CASE("service options: each part is told the flags that are its own") {
  ServeConfig config;
  config.db = "/var/lib/edgealloc/e.db";
  config.shards = 3;
  config.candidates = 7;
  config.dead_after_ms = 12000;
  config.max_sessions_per_tenant = 40;
  config.batch_max = 250;
  config.batch_wait_ms = std::numeric_limits<int64_t>::max();
  config.mass_silence_percent = 30;
  config.max_claim_waiters = 12;
  config.default_lease_ms = 45000;
  config.webhook_lease_ms = 4000;
  config.webhook_timeout_ms = 700;
  config.webhook_backoff_cap_ms = 9000;

  const store::StorageOptions storage = StorageOptionsOf(config);
  CHECK(storage.db == "/var/lib/edgealloc/e.db");
  CHECK(storage.shards == 3);
  CHECK(storage.policy.candidates == 7);
  CHECK(storage.policy.dead_after_ms == 12000);
  CHECK(storage.policy.max_sessions_per_tenant == 40);

  const batcher::BatcherOptions batcher = BatcherOptionsOf(config);
  CHECK(batcher.batch_max == 250);
  CHECK(batcher.batch_wait_ms == std::numeric_limits<int>::max());  // clamped, never wrapped
  CHECK(batcher.dead_after_ms == 12000);
  CHECK(batcher.mass_silence_fraction == Approx(0.3));
  CHECK(batcher.on_deaf);
  CHECK(batcher.on_deaths);

  const allocator::AllocatorOptions allocator = AllocatorOptionsOf(config);
  CHECK(allocator.max_waiters_per_pool == 12);
  CHECK(allocator.default_lease_ms == 45000);
  CHECK_FALSE(allocator.node_id.empty());

  const WebhookDelivererOptions webhooks = WebhookOptionsOf(config);
  CHECK(webhooks.lease_ms == 4000);
  CHECK(webhooks.post.response_timeout_ms == 700);
  CHECK(webhooks.backoff_cap_ms == 9000);
}

TEST_CASE("service options: every node id is new, the host and random bits") {
  REQUIRE(RequireKernelRandom().ok());
  const std::string a = NewNodeId();
  const std::string b = NewNodeId();
  CHECK(a != b);
  CHECK(a.substr(0, a.rfind('/')) == b.substr(0, b.rfind('/')));  // the same host
  CHECK(a.size() - a.rfind('/') == 9);                            // "/" and 8 hex digits
}

TEST_CASE("service options: a span of deafness is one line with its cause and the wait") {
  const batcher::Hearing::Span span{batcher::Hearing::Cause::kWriteFailing,
                                    "heartbeat writes of partition 1", 5200};
  CHECK(DescribeDeafness(span, 3000) ==
        "edgealloc: hearing: could not hear for 5.2 s (" +
            std::string(batcher::Hearing::CauseName(span.cause)) +
            ", heartbeats could not be written: heartbeat writes of partition 1); no container "
            "is judged silent before 3.0 s of hearing again");
}

}  // namespace
}  // namespace server
