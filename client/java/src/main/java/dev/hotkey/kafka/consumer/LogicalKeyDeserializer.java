package dev.hotkey.kafka.consumer;

import dev.hotkey.kafka.MergeContract;
import java.util.Locale;
import java.util.Map;
import org.apache.kafka.common.config.ConfigException;
import org.apache.kafka.common.header.Headers;
import org.apache.kafka.common.serialization.Deserializer;

/**
 * A key {@link Deserializer} that hands the inner deserializer the record's logical key (merge
 * contract version 1, {@link LogicalKeys}): a consumer of a salted topic sees {@code order-7}
 * where the producer sent {@code order-7#3}, and every record of a key under that one key. By
 * configuration:
 *
 * <pre>{@code
 * key.deserializer=dev.hotkey.kafka.consumer.LogicalKeyDeserializer
 * hotkey.logical.key.deserializer=org.apache.kafka.common.serialization.StringDeserializer
 * hotkey.logical.key.separator=#              (the topic's separator; default #)
 * hotkey.logical.key.recovery=headers_then_suffix   (or headers_only)
 * }</pre>
 *
 * <p>or in code: {@code new LogicalKeyDeserializer<>(new StringDeserializer())}. Records
 * without headers (and Kafka's two-argument {@code deserialize}) are read by the key's suffix
 * under {@code headers_then_suffix} and left as they are under {@code headers_only}.
 *
 * @param <T> the key type of the inner deserializer
 */
public class LogicalKeyDeserializer<T> implements Deserializer<T> {
  /** The inner key deserializer's class, when this one is created by configuration. */
  public static final String INNER_CONFIG = "hotkey.logical.key.deserializer";
  /** The topic's separator ({@code #} unless the coordinator's topic setting says another). */
  public static final String SEPARATOR_CONFIG = "hotkey.logical.key.separator";
  /** {@code headers_then_suffix} (default) or {@code headers_only} ({@link KeyRecovery}). */
  public static final String RECOVERY_CONFIG = "hotkey.logical.key.recovery";

  private Deserializer<T> inner;
  private String separator = MergeContract.DEFAULT_SEPARATOR;
  private KeyRecovery recovery = KeyRecovery.HEADERS_THEN_SUFFIX;

  /** Created by configuration: the inner deserializer comes from {@link #INNER_CONFIG}. */
  public LogicalKeyDeserializer() {}

  /** Around {@code inner}, with the default separator and recovery (configure may change them). */
  public LogicalKeyDeserializer(Deserializer<T> inner) {
    this.inner = inner;
  }

  /** Around {@code inner}, with the topic's separator and a recovery mode. */
  public LogicalKeyDeserializer(Deserializer<T> inner, String separator, KeyRecovery recovery) {
    this.inner = inner;
    this.separator = separator;
    this.recovery = recovery;
  }

  @Override
  @SuppressWarnings("unchecked")
  public void configure(Map<String, ?> configs, boolean isKey) {
    Object sep = configs.get(SEPARATOR_CONFIG);
    if (sep != null) {
      String s = sep.toString();
      if (s.isEmpty() || s.getBytes(java.nio.charset.StandardCharsets.UTF_8).length > 8
          || s.chars().anyMatch(c -> c >= '0' && c <= '9')) {
        throw new ConfigException(SEPARATOR_CONFIG, s, "a separator is 1-8 bytes without"
            + " decimal digits");
      }
      separator = s;
    }
    Object mode = configs.get(RECOVERY_CONFIG);
    if (mode != null) {
      switch (mode.toString().trim().toLowerCase(Locale.ROOT)) {
        case "headers_then_suffix":
          recovery = KeyRecovery.HEADERS_THEN_SUFFIX;
          break;
        case "headers_only":
          recovery = KeyRecovery.HEADERS_ONLY;
          break;
        default:
          throw new ConfigException(RECOVERY_CONFIG, mode, "expected headers_then_suffix or"
              + " headers_only");
      }
    }
    if (inner == null) {
      Object cls = configs.get(INNER_CONFIG);
      if (cls == null) {
        throw new ConfigException(INNER_CONFIG, null, "LogicalKeyDeserializer needs the key"
            + " deserializer it wraps, e.g. " + INNER_CONFIG
            + "=org.apache.kafka.common.serialization.StringDeserializer");
      }
      try {
        Class<?> c = cls instanceof Class ? (Class<?>) cls
            : Class.forName(cls.toString().trim(), true, loader());
        inner = (Deserializer<T>) c.getDeclaredConstructor().newInstance();
      } catch (ReflectiveOperationException | ClassCastException e) {
        throw new ConfigException(INNER_CONFIG, cls, "not a Deserializer with a public no-argument"
            + " constructor: " + e);
      }
    }
    inner.configure(configs, isKey);
  }

  private static ClassLoader loader() {
    ClassLoader l = Thread.currentThread().getContextClassLoader();
    return l != null ? l : LogicalKeyDeserializer.class.getClassLoader();
  }

  @Override
  public T deserialize(String topic, byte[] data) {
    return deserialize(topic, null, data);
  }

  @Override
  public T deserialize(String topic, Headers headers, byte[] data) {
    if (data == null) {
      return inner.deserialize(topic, headers, (byte[]) null);
    }
    byte[] logical = LogicalKeys.recover(data, headers, separator, recovery).logicalKey();
    return inner.deserialize(topic, headers, logical);
  }

  @Override
  public void close() {
    if (inner != null) {
      inner.close();
    }
  }
}
