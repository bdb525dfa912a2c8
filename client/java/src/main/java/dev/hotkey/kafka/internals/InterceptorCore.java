package dev.hotkey.kafka.internals;

import dev.hotkey.kafka.HotkeyStats;
import dev.hotkey.kafka.MergeContract;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Map;
import java.util.concurrent.ThreadLocalRandom;
import org.apache.kafka.clients.producer.ProducerInterceptor;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.config.ConfigException;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.serialization.BytesSerializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.common.utils.Bytes;

/**
 * What {@code dev.hotkey.kafka.HotkeyInterceptor} does (it is this class under its public
 * name: a subclass, not a delegate, so the send path has no extra call): in rekey mode (the default) a record whose key is on the topic's
 * hot-key list leaves {@code onSend} as a new record with the salted key
 * {@code <key><separator><salt>} and the merge contract's headers (docs/CONTRACTS.md section 3:
 * version 2, the default, none unless a local table salted it; version 1 {@code hotkey.salt}
 * and {@code hotkey.version}), so Kafka's murmur2 of the salted key puts it on the salt's
 * partition and any tool can recompute it. Under version 2 a record left unsalted whose key
 * ends in {@code <separator><digits>} gets {@code hotkey.unsalted}. Keys of type String (with
 * StringSerializer, UTF-8), byte[] and Bytes are rekeyed; the partitioner routes any other
 * listed key in route mode. In route mode this interceptor changes nothing.
 */
public abstract class InterceptorCore implements ProducerInterceptor<Object, Object> {
  private HotkeyClient client;
  private boolean rekey;
  private boolean headers;
  // Merge contract version 2 (hotkey.merge.contract, with hotkey.salt.headers): no header on a
  // record rekeyed by the coordinator's list, hotkey.unsalted on a cold key that looks salted.
  private boolean v2;
  private static final Header UNSALTED = new RecordHeader(MergeContract.UNSALTED_HEADER, new byte[0]);
  private static final byte[] DEFAULT_SEPARATOR =
      MergeContract.DEFAULT_SEPARATOR.getBytes(StandardCharsets.UTF_8);
  private Settings.SaltPolicy policy;

  /** The salted key object of the record this thread just rekeyed, and its logical key bytes. */
  private static final class Rekeyed {
    Object saltedKey;
    byte[] logical;
  }

  private static final ThreadLocal<Rekeyed> REKEYED = ThreadLocal.withInitial(Rekeyed::new);

  /**
   * The logical key when {@code key} is the salted key this thread's interceptor just produced
   * (the partitioner runs on the sending thread right after onSend), else null.
   */
  static byte[] takeRekeyed(Object key) {
    if (key == null) {
      return null;
    }
    Rekeyed r = REKEYED.get();
    if (r.saltedKey != key) {
      return null;
    }
    r.saltedKey = null;
    byte[] out = r.logical;
    r.logical = null;
    return out;
  }

  /**
   * Whether {@code key} ends in {@code separator} and 1-10 decimal digits, as every key this
   * interceptor salts does: the partitioner looks for this thread's mark (a ThreadLocal) only
   * then, so a cold key pays a few byte compares instead. A list with a new separator racing
   * with a record leaves it counted under its salted key (the next rekey replaces the mark).
   */
  static boolean maybeSalted(byte[] key, byte[] separator) {
    int end = key.length;
    int i = end - 1;
    while (i >= 0 && end - i <= 11 && key[i] >= '0' && key[i] <= '9') {
      i--;
    }
    int digits = end - 1 - i;
    int start = i + 1 - separator.length;
    if (digits == 0 || digits > 10 || start < 0) {
      return false;
    }
    for (int j = 0; j < separator.length; j++) {
      if (key[start + j] != separator[j]) {
        return false;
      }
    }
    return true;
  }

  /**
   * Reads every hotkey.* entry through the map Kafka hands to plugins, which records the
   * names read: so none of them shows up in the producer's "supplied but not used" warning.
   */
  static void markHotkeyPropertiesUsed(Map<String, ?> configs) {
    for (String name : new ArrayList<>(configs.keySet())) {
      if (name.startsWith(dev.hotkey.kafka.HotkeyConfig.PREFIX)) {
        configs.get(name);
      }
    }
  }

  /**
   * The interceptor without the partitioner would do nothing useful: the partitioner routes the
   * listed keys and counts every record for the reports, so without it the coordinator hears
   * nothing from this producer and never lists its keys. (Made to work instead, the
   * interceptor would have to count records itself: without the partition or the serialized
   * key there, that costs a key encoding per record on the send path.) Refused at
   * configuration, naming what is missing.
   */
  static void requirePartitioner(Object partitionerClass) {
    if (PluginClasses.is(partitionerClass, PartitionerCore.class)) {
      return;
    }
    String name = className(partitionerClass);
    throw new ConfigException("partitioner.class",
        name == null || name.isEmpty() ? "(not set)" : name,
        "the hotkey interceptor (interceptor.classes=dev.hotkey.kafka.HotkeyInterceptor) needs"
            + " partitioner.class=dev.hotkey.kafka.HotkeyPartitioner: the partitioner routes"
            + " the hot keys and counts every record for the coordinator's reports, so without"
            + " it no report is sent and no key is ever listed (docs/CLIENT-JAVA.md)");
  }

  private static String className(Object v) {
    if (v instanceof Class) {
      return ((Class<?>) v).getName();
    }
    return v == null ? null : v.toString().trim();
  }

  @Override
  public void configure(Map<String, ?> configs) {
    markHotkeyPropertiesUsed(configs);
    requirePartitioner(configs.get("partitioner.class"));
    client = HotkeyClient.acquire(configs);
    rekey = client.config.routingMode == Settings.RoutingMode.REKEY;
    headers = client.config.saltHeaders;
    v2 = headers && client.config.mergeContract >= 2;
    policy = client.config.saltPolicy;
    if (rekey) {
      String ser = className(configs.get("key.serializer"));
      boolean known = ser == null || ser.equals(StringSerializer.class.getName())
          || ser.equals(ByteArraySerializer.class.getName())
          || ser.equals(BytesSerializer.class.getName());
      Object enc = configs.get("key.serializer.encoding");
      if (enc == null) {
        enc = configs.get("serializer.encoding");
      }
      if (!known || (enc != null && !enc.toString().trim().equalsIgnoreCase("UTF-8")
          && !enc.toString().trim().equalsIgnoreCase("UTF8"))) {
        client.release();
        client = null;
        throw new ConfigException("hotkey.routing.mode", "rekey", "rekey mode rewrites keys of"
            + " type String (StringSerializer, UTF-8), byte[] or Bytes; with key.serializer="
            + ser + " set hotkey.routing.mode=route");
      }
    }
  }

  /**
   * The statistics of the client this interceptor shares with the producer's other plugin
   * (docs/CLIENT-JAVA.md "Statistics"); all zero before configure() and after close().
   */
  public HotkeyStats stats() {
    HotkeyClient c = client;
    return c != null ? c.stats()
        : new HotkeyStats("", 0, 0, 0, java.util.Map.of(), 0, 0, 0, 0, false, java.util.List.of());
  }

  /** The client this interceptor shares with the producer's partitioner. */
  public HotkeyClient client() {
    return client;
  }

  @Override
  public ProducerRecord<Object, Object> onSend(ProducerRecord<Object, Object> record) {
    if (!rekey || client == null) {
      return record;
    }
    Object key = record.key();
    if (key == null || record.partition() != null) {
      return record;
    }
    TopicRouter r = client.topic(record.topic());
    int live = r.livePartitions();
    RoutingTable t = live > 0 ? r.tableFor(live) : r.table();
    if (t == null || t.isEmpty()) {
      return v2 ? markUnsalted(record, key, t) : record;
    }
    RoutingTable.Entry e;
    if (key instanceof String) {
      e = t.find((String) key);
    } else if (key instanceof byte[]) {
      byte[] b = (byte[]) key;
      e = t.find(b, Hashes.murmur2(b) & 0x7fffffff);
    } else if (key instanceof Bytes) {
      byte[] b = ((Bytes) key).get();
      e = t.find(b, Hashes.murmur2(b) & 0x7fffffff);
    } else {
      return record;
    }
    if (e == null) {
      return v2 ? markUnsalted(record, key, t) : record;
    }
    return rekeyed(record, key, t, e);
  }

  /**
   * Merge contract version 2: a record that keeps its key, when that key ends in
   * {@code <separator><digits>} as a salted key does, leaves as a copy with the
   * {@code hotkey.unsalted} header after its own (the application's record is not changed).
   */
  private static ProducerRecord<Object, Object> markUnsalted(ProducerRecord<Object, Object> record,
      Object key, RoutingTable t) {
    byte[] sep = t == null ? DEFAULT_SEPARATOR : t.separator;
    boolean looks;
    if (key instanceof String) {
      looks = endsLikeSalted((String) key,
          t == null ? MergeContract.DEFAULT_SEPARATOR : t.separatorText);
    } else if (key instanceof byte[]) {
      looks = endsLikeSalted((byte[]) key, sep);
    } else if (key instanceof Bytes) {
      looks = endsLikeSalted(((Bytes) key).get(), sep);
    } else {
      return record;
    }
    if (!looks) {
      return record;
    }
    Header[] given = record.headers().toArray();
    Header[] all = Arrays.copyOf(given, given.length + 1);
    all[given.length] = UNSALTED;
    return new ProducerRecord<>(record.topic(), null, record.timestamp(), record.key(),
        record.value(), new RecordHeaders(all));
  }

  /**
   * {@code ends_like_salted} (merge.h): the key ends in the separator and 1-10 digits, canonical
   * ("0" or no leading zero), at most 2^32-1; as {@code split_salted_key} and
   * {@link dev.hotkey.kafka.consumer.LogicalKeys} read a salted key.
   */
  /** {@link #endsLikeSalted(byte[], byte[])} on a String key's text (digits are ASCII). */
  static boolean endsLikeSalted(String key, String separator) {
    int n = key.length();
    int lo = Math.max(0, n - 11);
    int i = n;
    while (i > lo && (char) (key.charAt(i - 1) - '0') < 10) {
      i--;
    }
    int digits = n - i;
    // The separator's last character first: it rules out nearly every cold key at once.
    int sl = separator.length();
    if (digits == 0 || sl == 0 || i < sl || key.charAt(i - 1) != separator.charAt(sl - 1)) {
      return false;
    }
    if (digits > 10 || (digits > 1 && key.charAt(i) == '0')) {
      return false;
    }
    if (digits == 10 && Long.parseLong(key, i, n, 10) > 0xffffffffL) {
      return false;
    }
    int start = i - separator.length();
    return !separator.isEmpty() && start >= 0
        && key.regionMatches(start, separator, 0, separator.length());
  }

  static boolean endsLikeSalted(byte[] key, byte[] separator) {
    int n = key.length;
    int lo = Math.max(0, n - 11);
    int i = n;
    while (i > lo && key[i - 1] >= '0' && key[i - 1] <= '9') {
      i--;
    }
    int digits = n - i;
    if (digits == 0 || digits > 10 || (digits > 1 && key[i] == '0')) {
      return false;
    }
    if (digits == 10) {
      long v = 0;
      for (int j = i; j < n; j++) {
        v = v * 10 + (key[j] - '0');
      }
      if (v > 0xffffffffL) {
        return false;
      }
    }
    int start = i - separator.length;
    if (separator.length == 0 || start < 0) {
      return false;
    }
    for (int j = 0; j < separator.length; j++) {
      if (key[start + j] != separator[j]) {
        return false;
      }
    }
    return true;
  }

  // Out of line: the cold path above stays small enough to inline into the producer's send().
  private ProducerRecord<Object, Object> rekeyed(ProducerRecord<Object, Object> record,
      Object key, RoutingTable t, RoutingTable.Entry e) {
    int idx;
    switch (policy) {
      case VALUE_HASH:
        idx = t.pickBy(e, valueHash(record.value()));
        break;
      case RANDOM:
        idx = t.pickBy(e, ThreadLocalRandom.current().nextInt());
        break;
      default:
        idx = t.pickWrr(e);
    }
    int salt = e.salts[idx];
    boolean precomputed = e.saltedText != null;
    Object salted;
    if (key instanceof String) {
      // The key equals the entry's text, so the table's salted text is this key salted.
      salted = precomputed ? e.saltedText[idx]
          : (String) key + t.separatorText + Integer.toUnsignedString(salt);
    } else if (key instanceof byte[]) {
      salted = Salts.saltedKey((byte[]) key, t.separator, salt);
    } else {
      salted = new Bytes(Salts.saltedKey(((Bytes) key).get(), t.separator, salt));
    }
    Iterable<Header> h;
    if (!headers || (v2 && !MergeContract.isLocalTableVersion(t.version))) {
      // No merge header: version 2 marks a record rekeyed by the list with its key's suffix.
      h = record.headers();
    } else {
      Header[] given = record.headers().toArray();
      if (given.length == 0 && precomputed) {
        h = e.mergeHeaders[idx];
      } else {
        Header[] all = Arrays.copyOf(given, given.length + 2);
        all[given.length] = precomputed ? e.saltHeaders[idx]
            : new RecordHeader(MergeContract.SALT_HEADER,
                Integer.toUnsignedString(salt).getBytes(StandardCharsets.US_ASCII));
        all[given.length + 1] = t.versionHeader;
        h = new RecordHeaders(all);
      }
    }
    Rekeyed mark = REKEYED.get();
    mark.saltedKey = salted;
    mark.logical = e.key;
    return new ProducerRecord<>(record.topic(), null, record.timestamp(), salted, record.value(), h);
  }

  private static int valueHash(Object value) {
    if (value instanceof byte[]) {
      return Hashes.murmur2((byte[]) value);
    }
    if (value instanceof Bytes) {
      return Hashes.murmur2(((Bytes) value).get());
    }
    if (value instanceof String) {
      return Hashes.murmur2(((String) value).getBytes(StandardCharsets.UTF_8));
    }
    return value == null ? 0 : value.hashCode();
  }

  @Override
  public void onAcknowledgement(RecordMetadata metadata, Exception exception) {}

  @Override
  public void close() {
    if (client != null) {
      client.release();
      client = null;
    }
  }
}
