#include "server/ops/tenant_metrics.h"

#include <atomic>
#include <cstdint>
#include <utility>
#include <vector>

namespace server {

namespace {

void HeartbeatKeyFamilies(const MetricsSources::HeartbeatKeyCounters& b, Exposition* out) {
  out->Family("edgealloc_heartbeat_key_refusals_total", "counter",
              "Heartbeat requests refused for their key, by reason: budget (429 on the headers, "
              "the key past --heartbeat-items-per-key-per-s) or scope (400, more reports than "
              "the key's scope names containers).");
  for (const auto& [reason, n] :
       {std::pair{"budget", b.refused_budget}, std::pair{"scope", b.refused_items}}) {
    out->Sample("edgealloc_heartbeat_key_refusals_total", {{"reason", reason}},
                n->load(std::memory_order_relaxed));
  }
  out->Family("edgealloc_heartbeats_folded_at_parse_total", "counter",
              "Heartbeats folded into a later one of the same container of the same request "
              "before they were queued.");
  out->Sample("edgealloc_heartbeats_folded_at_parse_total",
              b.folded->load(std::memory_order_relaxed));
}

void ReadRefusalFamily(const MetricsSources::ReadRefusals& r, Exposition* out) {
  out->Family("edgealloc_reads_refused_total", "counter",
              "API reads (a session, a list page, limits, a container) refused 503 overloaded "
              "before they reached a reader thread, by reason: full (the reader queue, "
              "--reader-threads times 64) or share (one tenant's reads, or one key's "
              "heartbeats, filled their quarter of it).");
  for (const auto& [reason, n] : {std::pair{"full", r.full}, std::pair{"share", r.owner_share}}) {
    out->Sample("edgealloc_reads_refused_total", {{"reason", reason}},
                n->load(std::memory_order_relaxed));
  }
}

void WebhookFamilies(const WebhookStats& w, Exposition* out) {
  out->Family("edgealloc_webhook_deliveries_total", "counter",
              "Batches of events POSTed to tenants' webhooks by this node, by result: "
              "delivered (answered 2xx), rejected (answered otherwise) or unanswered (no "
              "connection, TLS refused, or no answer in time); the last two are retried.");
  for (const auto& [result, n] : {std::pair{"delivered", &w.delivered},
                                  std::pair{"rejected", &w.rejected},
                                  std::pair{"unanswered", &w.unanswered}}) {
    out->Sample("edgealloc_webhook_deliveries_total", {{"result", result}},
                n->load(std::memory_order_relaxed));
  }
  out->Family("edgealloc_webhook_gaps_total", "counter",
              "Times a tenant's events were pruned (--event-retention-ms) before this node "
              "delivered them: its delivery went on from the oldest event kept.");
  out->Sample("edgealloc_webhook_gaps_total", w.gaps.load(std::memory_order_relaxed));
  out->Family("edgealloc_webhook_delivery_lag_seconds", "gauge",
              "Age of the oldest event not yet delivered of the tenants whose webhook this "
              "node delivers (0: all delivered).");
  out->Sample("edgealloc_webhook_delivery_lag_seconds",
              w.lag_ms ? static_cast<double>(w.lag_ms()) / 1000.0 : 0.0);
}

}  // namespace

void KeysFileFamilies(const MetricsSources& src, Exposition* out) {
  if (src.heartbeat_keys.refused_budget != nullptr) HeartbeatKeyFamilies(src.heartbeat_keys, out);
  if (src.reads_refused.full != nullptr) ReadRefusalFamily(src.reads_refused, out);
  if (src.keys_reloads != nullptr) {
    out->Family("edgealloc_keys_reloads_total", "counter",
                "Reloads of the keys file (SIGHUP), by result: ok (its keys serve from then on) "
                "or failed (unreadable, invalid or others may read or write it: the keys in use "
                "stay).");
    for (const auto& [result, n] : {std::pair{"ok", &src.keys_reloads->ok},
                                    std::pair{"failed", &src.keys_reloads->failed}}) {
      out->Sample("edgealloc_keys_reloads_total", {{"result", result}},
                  n->load(std::memory_order_relaxed));
    }
  }
  if (src.webhooks != nullptr) WebhookFamilies(*src.webhooks, out);
  if (!src.tenants) return;
  const std::vector<MetricsSources::TenantSample> tenants = src.tenants();
  if (tenants.empty()) return;
  out->Family("edgealloc_tenant_claims_rate_limited_total", "counter",
              "Claims refused 429 rate_limited on this node (past the tenant's claims_per_s), "
              "by tenant of the keys file.");
  for (const auto& t : tenants) {
    out->Sample("edgealloc_tenant_claims_rate_limited_total", {{"tenant", t.tenant}},
                t.claims_rate_limited);
  }
  out->Family("edgealloc_tenant_claim_waiters", "gauge",
              "Claims waiting (wait_ms) on this node now, by tenant of the keys file.");
  for (const auto& t : tenants) {
    out->Sample("edgealloc_tenant_claim_waiters", {{"tenant", t.tenant}},
                static_cast<double>(t.claims_waiting));
  }
  out->Family("edgealloc_tenant_limits_mismatch", "gauge",
              "1 while another live node on the database applies other limits to the tenant "
              "(its keys file's line differs): its quota is not shared as one.");
  for (const auto& t : tenants) {
    out->Sample("edgealloc_tenant_limits_mismatch", {{"tenant", t.tenant}},
                t.limits_mismatch ? 1.0 : 0.0);
  }
}

}  // namespace server
