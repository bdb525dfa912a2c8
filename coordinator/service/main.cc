// hotkey-coordinator: the service executable. All behaviour lives in hotkey::coordinator;
// this file wires config, store, core and HTTP together and handles signals.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <csignal>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string_view>
#include <thread>

#include <malloc.h>
#include <pthread.h>

#include "clock.h"
#include "command_line.h"
#include "config.h"
#include "config_docs.h"
#include "coordinator.h"
#include "http_server.h"
#include "kafka_cluster.h"
#include "metrics.h"
#include "stderr_log.h"
#include "store.h"

namespace {

// Exit status when the Kafka drain outlived kafka.drain_timeout_ms plus this margin (docs/
// CONFIGURATION.md): the partitions then move after session.timeout.ms, as after a kill.
constexpr auto kDrainWatchdogMargin = std::chrono::seconds(5);
constexpr int kExitDrainDeadline = 6;

}  // namespace

int main(int argc, char** argv) {
  using namespace hotkey::coordinator;
  // Two malloc arenas instead of glibc's 8 per core: the server runs http_threads +
  // max_waiters worker threads, and with 16 arenas the short-lived report buffers fragment
  // across all of them, so RSS kept creeping up under steady load (docs/RELIABILITY.md,
  // "Load"). MALLOC_ARENA_MAX in the environment still wins.
  if (std::getenv("MALLOC_ARENA_MAX") == nullptr) mallopt(M_ARENA_MAX, 2);
  for (int i = 1; i < argc; ++i) {
    if (std::string_view(argv[i]) == "--help-config") {
      std::cout << config_help_text();
      return 0;
    }
    if (std::string_view(argv[i]) == "--print-config-docs") {
      std::cout << config_docs_markdown();
      return 0;
    }
  }
  std::optional<CoordinatorConfig> config;
  try {
    config = parse_command_line(argc, argv);
  } catch (const std::invalid_argument& e) {
    std::cerr << "hotkey-coordinator: " << e.what() << "\n\n" << usage_text();
    return 2;
  }
  if (!config) {
    std::cout << usage_text();
    return 0;
  }

  // Signals are taken by one thread with sigwait; every other thread inherits the mask.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  std::signal(SIGPIPE, SIG_IGN);

  StderrLog log;
  const auto log_line = [&log](hotkey::api::Json event) { log_now(log, std::move(event)); };
  std::string error;
  std::unique_ptr<Store> store = Store::open(config->data_dir, &error);
  if (!store) {
    log_line({{"level", "fatal"}, {"event", "store_open_failed"}, {"error", error}});
    std::cerr << "hotkey-coordinator: " << error << "\n";
    return 3;
  }
  SystemClock clock;
  Metrics metrics;
  std::unique_ptr<Coordinator> coordinator;
  try {
    coordinator = std::make_unique<Coordinator>(*config, *store, metrics, clock, log);
  } catch (const std::exception& e) {
    log_line({{"level", "fatal"}, {"event", "store_load_failed"}, {"error", e.what()}});
    std::cerr << "hotkey-coordinator: " << e.what() << "\n";
    return 3;
  }
  std::unique_ptr<HttpServer> server_owner;
  try {
    server_owner = std::make_unique<HttpServer>(
        HttpCore{*coordinator, *coordinator, *coordinator, coordinator->board(), *config}, metrics);
  } catch (const std::invalid_argument& e) {
    log_line({{"level", "fatal"}, {"event", "tls_setup_failed"}, {"error", e.what()}});
    std::cerr << "hotkey-coordinator: " << e.what() << "\n";
    return 2;
  }
  HttpServer& server = *server_owner;
  if (!server.bind(config->listen_host, config->listen_port, &error)) {
    log_line({{"level", "fatal"}, {"event", "bind_failed"}, {"error", error}});
    std::cerr << "hotkey-coordinator: " << error << "\n";
    return 4;
  }
  // Cluster mode: join the group before planning starts, so that no list is planned for a
  // topic this member does not own.
  std::unique_ptr<KafkaCluster> cluster;
  if (config->cluster.enabled()) {
    std::string url = config->cluster.advertised_url;
    if (url.empty()) {
      url = std::string(config->tls() ? "https://" : "http://") + config->listen_host + ":" +
            std::to_string(server.port());
    }
    cluster = std::make_unique<KafkaCluster>(*config, *coordinator, *coordinator, *coordinator,
                                             *store, log, url);
    coordinator->set_placement(cluster->placement());
    if (!cluster->start(&error)) {
      log_line({{"level", "fatal"}, {"event", "cluster_start_failed"}, {"error", error}});
      std::cerr << "hotkey-coordinator: " << error << "\n";
      return 5;
    }
  }
  coordinator->start_background();
  log_line({{"level", "info"},
            {"event", "listening"},
            {"host", config->listen_host},
            {"port", server.port()},
            {"tls", config->tls()},
            {"mutual_tls", !config->tls_client_ca_file.empty()},
            {"data_dir", config->data_dir},
            {"topics", coordinator->topics().size()}});

  std::atomic<bool> run_returned{false};
  std::thread signal_thread([&] {
    int sig = 0;
    sigwait(&signals, &sig);
    if (run_returned.load()) return;
    log_line({{"level", "info"}, {"event", "shutdown"}, {"signal", sig}});
    // httplib's stop() is a no-op until the listener loop has started, and a signal can come
    // between bind() and that moment (right after "listening" is logged): repeat until run()
    // has returned.
    while (!run_returned.load()) {
      server.stop();
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  });
  server.run();
  run_returned.store(true);
  // run() also returns when the listener fails; make the signal thread exit either way.
  pthread_kill(signal_thread.native_handle(), SIGTERM);
  signal_thread.join();
  server.stop();
  // The Kafka part of the shutdown waits on brokers: it has its bound (kafka.drain_timeout_ms,
  // Membership::run), and this watchdog ends the process should any librdkafka call outlast it
  // anyway. Every write that was acknowledged is already synced to RocksDB, so nothing
  // acknowledged is lost by not closing it.
  std::mutex drained_mu;
  std::condition_variable drained_cv;
  bool drained = false;
  std::thread watchdog;
  if (cluster) {
    const auto bound =
        std::chrono::milliseconds(config->cluster.drain_timeout_ms) + kDrainWatchdogMargin;
    watchdog = std::thread([&, bound] {
      std::unique_lock lock(drained_mu);
      if (drained_cv.wait_for(lock, bound, [&] { return drained; })) return;
      log_line({{"level", "error"},
                {"event", "shutdown_deadline"},
                {"after_ms", std::chrono::duration_cast<std::chrono::milliseconds>(bound).count()},
                {"exit_status", kExitDrainDeadline}});
      std::_Exit(kExitDrainDeadline);
    });
    cluster->stop();
  }
  coordinator->stop_background();
  // The server refers to the coordinator: destroy it first.
  server_owner.reset();
  cluster.reset();
  if (watchdog.joinable()) {
    {
      std::lock_guard lock(drained_mu);
      drained = true;
    }
    drained_cv.notify_all();
    watchdog.join();
  }
  coordinator.reset();
  store.reset();
  log_line({{"level", "info"}, {"event", "stopped"}});
  return 0;
}
