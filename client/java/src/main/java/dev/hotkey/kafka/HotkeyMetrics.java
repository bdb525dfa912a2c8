package dev.hotkey.kafka;

import dev.hotkey.kafka.internals.HotkeyClient;
import java.lang.reflect.Proxy;
import java.util.Collections;
import java.util.Map;
import java.util.Optional;
import org.apache.kafka.clients.producer.Producer;
import org.apache.kafka.common.Metric;
import org.apache.kafka.common.MetricName;

/**
 * A producer's hot-key client statistics and metrics, found from the producer itself (by its
 * {@code client-id}): for applications that hold the {@code KafkaProducer}, not the plugins.
 * The metrics are those of JMX {@code kafka.producer:type=hotkey-metrics,client-id=...} (and
 * {@code hotkey-topic-metrics}, {@code hotkey-rejected-metrics}); docs/CLIENT-JAVA.md
 * "Statistics and metrics" lists them.
 */
public final class HotkeyMetrics {
  private HotkeyMetrics() {}

  private static Optional<HotkeyClient> clientOf(Producer<?, ?> producer) {
    for (MetricName name : producer.metrics().keySet()) {
      String id = name.tags().get("client-id");
      if (id != null && name.group().equals("producer-metrics")) {
        return Optional.ofNullable(HotkeyClient.forClientId(id));
      }
    }
    return Optional.empty();
  }

  /** The statistics of the producer's hot-key client; empty when it has none. */
  public static Optional<HotkeyStats> stats(Producer<?, ?> producer) {
    return clientOf(producer).map(HotkeyClient::stats);
  }

  /** The metrics of the producer's hot-key client (a live view); empty when it has none. */
  public static Map<MetricName, ? extends Metric> metrics(Producer<?, ?> producer) {
    return clientOf(producer).<Map<MetricName, ? extends Metric>>map(c -> c.metrics().metrics())
        .orElse(Collections.emptyMap());
  }

  /**
   * A {@link Producer} whose {@code metrics()} are the hot-key client's metrics of
   * {@code producer} and nothing else; every other method throws. For metric binders that read
   * a producer's {@code metrics()}, as Micrometer's
   * {@code new KafkaClientMetrics(HotkeyMetrics.asProducer(producer)).bindTo(registry)} does,
   * beside the binder of the producer itself.
   */
  public static Producer<?, ?> asProducer(Producer<?, ?> producer) {
    return (Producer<?, ?>) Proxy.newProxyInstance(Producer.class.getClassLoader(),
        new Class<?>[] {Producer.class}, (proxy, method, args) -> {
          switch (method.getName()) {
            case "metrics":
              return metrics(producer);
            case "close":
              return null;
            case "toString":
              return "hotkey metrics of " + producer;
            case "hashCode":
              return System.identityHashCode(proxy);
            case "equals":
              return proxy == args[0];
            default:
              throw new UnsupportedOperationException(method.getName()
                  + ": this producer only shows the hot-key metrics of " + producer);
          }
        });
  }
}
