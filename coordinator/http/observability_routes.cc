// How this member is doing (docs/API.md, "Observability" and "Cluster mode"): GET /metrics,
// /healthz, /readyz and /v1/cluster.
#include <chrono>
#include <memory>
#include <mutex>

#include "coordinator_api.h"
#include "metrics.h"
#include "park_watch.h"
#include "responses.h"
#include "routes.h"

namespace hotkey::coordinator {
namespace {

// /readyz's cached store probe.
struct ReadyCache {
  std::mutex mu;
  std::chrono::steady_clock::time_point probed;
  int64_t checked_at_ms = 0;  // wall clock of the last probe; 0: none yet
  StoreStatus status;
};

// Readiness is a synced store write: unauthenticated callers in a loop would make it a write load
// (#17: 16 clients made ~2,300 synced writes/s). One probe per second at most; the answer says when
// it ran.
void get_ready(const RouteContext& ctx, ReadyCache& cache, Call& c) {
  std::unique_lock lock(cache.mu);
  const auto now = std::chrono::steady_clock::now();
  // The cached answer is reused for a second, unless a write has failed since: readiness must turn
  // 503 the moment the store is known to be failing (full disk), not a second later.
  if (cache.checked_at_ms == 0 || now - cache.probed >= std::chrono::seconds(1) ||
      (cache.status.ok && !ctx.reads.store_healthy())) {
    double latency = 0;
    cache.status = ctx.reads.probe_store(&latency);
    if (cache.status.ok) ctx.metrics.store_write_latency(latency);  // a synced write like any
    cache.probed = now;
    cache.checked_at_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                              std::chrono::system_clock::now().time_since_epoch())
                              .count();
    ctx.metrics.set_store_healthy(cache.status.ok);
  }
  const StoreStatus st = cache.status;
  const int64_t checked_at_ms = cache.checked_at_ms;
  lock.unlock();
  send_json(c.res, st.ok ? 200 : 503, api::Readiness{st.ok, st.error, checked_at_ms});
}

void get_cluster(const RouteContext& ctx, Call& c) {
  // Single-node mode: one member that owns every topic it knows.
  send_json(c.res, 200, ctx.reads.cluster_view().value_or(api::ClusterView{}));
}

}  // namespace

void add_observability_routes(Routes& routes, const RouteContext& ctx) {
  Admission metrics;
  metrics.auth = Auth::kMetrics;
  routes.push_back({"GET", "/metrics", metrics, [ctx](Call& c) {
                      ctx.metrics.set_waiters(ctx.board.waiters());
                      ctx.metrics.set_parked(static_cast<double>(ctx.parking.subscriptions()),
                                             static_cast<double>(ctx.parking.connections()));
                      c.res.set_content(ctx.metrics.serialize(),
                                        "text/plain; version=0.0.4; charset=utf-8");
                    }});
  routes.push_back(
      {"GET", "/healthz", Admission{}, [](Call& c) { send_json(c.res, 200, api::Health{}); }});
  auto ready = std::make_shared<ReadyCache>();
  routes.push_back(
      {"GET", "/readyz", Admission{}, [ctx, ready](Call& c) { get_ready(ctx, *ready, c); }});
  Admission producer;
  producer.auth = Auth::kProducer;
  routes.push_back({"GET", "/v1/cluster", producer, [ctx](Call& c) { get_cluster(ctx, c); }});
}

}  // namespace hotkey::coordinator
