package dev.hotkey.kafka.consumer;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.kafka.clients.consumer.ConsumerRecord;

/**
 * Buffers consumed records and hands them back grouped per logical key, a salted key's
 * sub-streams merged ({@code hotkey::client::SubstreamMerger}, merge contract version 1 rule
 * 4). The records' keys are logical keys already (a consumer with {@link LogicalKeyDeserializer}).
 *
 * <p>The order promise, as the C++ client states it: within one sub-stream (a logical key on one
 * partition: one salt, or the unsalted key) records keep the partition's order, which salting
 * keeps; across the sub-streams of a key, records come by producer timestamp, then partition,
 * then offset, which is the best a consumer can do: salting trades a hot key's total order for
 * throughput. A key that was never salted has one sub-stream and keeps strict order. Here the
 * sub-stream order holds even where timestamps go back within a partition (the merge takes the
 * earliest of each sub-stream's next record, never a later record of a sub-stream first).
 *
 * <p>{@link #drain} releases records up to a watermark: a record waits until the watermark
 * reaches its timestamp, and the later records of its sub-stream wait with it. Not thread-safe:
 * one per consuming thread.
 *
 * @param <K> the logical key's type (compared with equals)
 * @param <V> the value's type
 */
public final class SubstreamMerger<K, V> {
  private final int maxBuffered;
  private int buffered;
  // Per logical key, per partition: that sub-stream's records in arrival (offset) order.
  private final Map<K, Map<Integer, ArrayDeque<ConsumerRecord<K, V>>>> pending =
      new LinkedHashMap<>();
  private final Map<K, java.util.Set<Integer>> seen = new HashMap<>();

  /** At most {@code maxBuffered} records waiting (>= 1). */
  public SubstreamMerger(int maxBuffered) {
    if (maxBuffered < 1) {
      throw new IllegalArgumentException("maxBuffered must be >= 1");
    }
    this.maxBuffered = maxBuffered;
  }

  /** 100,000 records at most. */
  public SubstreamMerger() {
    this(100_000);
  }

  /**
   * Buffers a record (its key the logical key); false, and the record not taken, when
   * maxBuffered records are waiting (drain first).
   */
  public boolean add(ConsumerRecord<K, V> record) {
    if (buffered >= maxBuffered) {
      return false;
    }
    seen.computeIfAbsent(record.key(), k -> new java.util.HashSet<>()).add(record.partition());
    pending.computeIfAbsent(record.key(), k -> new LinkedHashMap<>())
        .computeIfAbsent(record.partition(), p -> new ArrayDeque<>()).addLast(record);
    buffered++;
    return true;
  }

  private static int order(ConsumerRecord<?, ?> a, ConsumerRecord<?, ?> b) {
    int c = Long.compare(a.timestamp(), b.timestamp());
    if (c != 0) {
      return c;
    }
    c = Integer.compare(a.partition(), b.partition());
    return c != 0 ? c : Long.compare(a.offset(), b.offset());
  }

  /**
   * Removes and returns the buffered records releasable at {@code watermarkMs}, grouped per
   * logical key (keys in the order first seen), each group in merge order: repeatedly the
   * earliest (timestamp, partition, offset) of the sub-streams' next records whose timestamp is
   * at most the watermark.
   */
  public Map<K, List<ConsumerRecord<K, V>>> drain(long watermarkMs) {
    Map<K, List<ConsumerRecord<K, V>>> out = new LinkedHashMap<>();
    for (Iterator<Map.Entry<K, Map<Integer, ArrayDeque<ConsumerRecord<K, V>>>>> it =
        pending.entrySet().iterator(); it.hasNext();) {
      Map.Entry<K, Map<Integer, ArrayDeque<ConsumerRecord<K, V>>>> e = it.next();
      List<ConsumerRecord<K, V>> ready = new ArrayList<>();
      for (;;) {
        ArrayDeque<ConsumerRecord<K, V>> next = null;
        for (ArrayDeque<ConsumerRecord<K, V>> q : e.getValue().values()) {
          ConsumerRecord<K, V> head = q.peekFirst();
          if (head != null && head.timestamp() <= watermarkMs
              && (next == null || order(head, next.peekFirst()) < 0)) {
            next = q;
          }
        }
        if (next == null) {
          break;
        }
        ready.add(next.pollFirst());
      }
      e.getValue().values().removeIf(ArrayDeque::isEmpty);
      if (e.getValue().isEmpty()) {
        it.remove();
      }
      if (!ready.isEmpty()) {
        buffered -= ready.size();
        out.put(e.getKey(), ready);
      }
    }
    return out;
  }

  /** Records waiting. */
  public int buffered() {
    return buffered;
  }

  /** Sub-streams (partitions) seen so far for a logical key; an unsalted key has one. */
  public int substreams(K logicalKey) {
    java.util.Set<Integer> s = seen.get(logicalKey);
    return s == null ? 0 : s.size();
  }
}
