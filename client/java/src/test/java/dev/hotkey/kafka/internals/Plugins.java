package dev.hotkey.kafka.internals;

import dev.hotkey.kafka.HotkeyInterceptor;
import dev.hotkey.kafka.HotkeyPartitioner;
import java.util.HashMap;
import java.util.Map;
import org.apache.kafka.common.serialization.StringSerializer;

/** A producer's two hotkey plugins, configured as KafkaProducer does: they share one client. */
final class Plugins implements AutoCloseable {
  final HotkeyInterceptor interceptor = new HotkeyInterceptor();
  final HotkeyPartitioner partitioner = new HotkeyPartitioner();

  /** client.id, String keys, partitioner.class, then the name/value pairs given. */
  static Map<String, Object> configs(String clientId, String... kv) {
    Map<String, Object> configs = new HashMap<>();
    configs.put("client.id", clientId);
    configs.put("key.serializer", StringSerializer.class.getName());
    configs.put("partitioner.class", HotkeyPartitioner.class.getName());
    // The plugin tests were written for merge contract 1 (both headers on every rekeyed
    // record); the ones about version 2 pass "hotkey.merge.contract", "2".
    configs.put("hotkey.merge.contract", "1");
    for (int i = 0; i < kv.length; i += 2) {
      configs.put(kv[i], kv[i + 1]);
    }
    return configs;
  }

  /** Both configured with {@code configs}, the interceptor first (KafkaProducer's order). */
  static Plugins open(Map<String, Object> configs) {
    Plugins p = new Plugins();
    p.interceptor.configure(configs);
    p.partitioner.configure(configs);
    return p;
  }

  @Override
  public void close() {
    partitioner.close();
    interceptor.close();
  }
}
