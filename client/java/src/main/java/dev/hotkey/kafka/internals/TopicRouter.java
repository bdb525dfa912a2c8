package dev.hotkey.kafka.internals;

import java.util.concurrent.locks.ReentrantLock;

/**
 * One topic's routing state (client/src/router.cc TopicState): the current immutable table in a
 * volatile field, the validated list it came from, the version floor and the live partition
 * count. Writers (the list subscriber, the TTL policy) serialize on a lock; the send path only
 * reads the volatile table, except for the one rebuild after a partition count change, which it
 * tries without waiting (records racing with it route cold).
 */
final class TopicRouter {
  final String topic;
  final Sampler sampler;
  private volatile RoutingTable table = RoutingTable.EMPTY;
  private volatile HotKeyList list; // guarded by writeLock for writes
  private volatile long version; // unsigned; never goes back
  private volatile boolean plain;
  private volatile int livePartitions;
  // System.nanoTime() of the last answer that gave or confirmed this topic's list; 0: none.
  private volatile long contactNanos;
  private final ReentrantLock writeLock = new ReentrantLock();
  // Records without a key: the sticky partition and the bytes sent to it (HotkeyPartitioner).
  volatile int stickyPartition = -1;
  final java.util.concurrent.atomic.AtomicLong stickyBytes =
      new java.util.concurrent.atomic.AtomicLong();
  final Object stickyLock = new Object();
  /** This topic's reports dropped (hotkey.report.queue.max waiting); the reporter counts. */
  final java.util.concurrent.atomic.AtomicLong reportsDropped =
      new java.util.concurrent.atomic.AtomicLong();

  TopicRouter(String topic, Sampler sampler) {
    this.topic = topic;
    this.sampler = sampler;
  }

  RoutingTable table() {
    return table;
  }

  long version() {
    return version;
  }

  HotKeyList list() {
    return list;
  }

  boolean plain() {
    return plain;
  }

  int livePartitions() {
    return livePartitions;
  }

  /** The coordinator gave or confirmed this topic's list at {@code nanos} (System.nanoTime). */
  void contact(long nanos) {
    contactNanos = nanos == 0 ? 1 : nanos;
  }

  /** Milliseconds since the coordinator last gave or confirmed the list; -1: never. */
  long listAgeMs() {
    long c = contactNanos;
    return c == 0 ? -1 : (System.nanoTime() - c) / 1_000_000;
  }

  /**
   * Records the live partition count (the send path: volatile writes only when it changes).
   * The sampler needs it to tell a surge (a key above its share of a partition).
   */
  void observePartitions(int n) {
    if (n > 0 && livePartitions != n) {
      livePartitions = n;
      sampler.setPartitions(n);
    }
  }

  private RoutingTable build(HotKeyList l, int partitions, boolean asPlain) {
    if (l == null || asPlain) {
      return new RoutingTable(l == null ? version : l.version);
    }
    return new RoutingTable(l, partitions > 0 ? partitions : l.partitions);
  }

  /**
   * Publishes a validated list for this topic; false when it is not newer than the current one,
   * or at or above 2^63 (MergeContract.LOCAL_TABLE_VERSION_BIT: no coordinator issues it).
   */
  boolean publish(HotKeyList l) {
    writeLock.lock();
    try {
      if (Long.compareUnsigned(l.version, version) <= 0 || l.version < 0) {
        return false;
      }
      // The table first: whoever sees the new version already routes with its list.
      RoutingTable next = build(l, livePartitions, plain);
      list = l;
      table = next;
      version = l.version;
      return true;
    } finally {
      writeLock.unlock();
    }
  }

  /** Drops the list (a lists-topic tombstone) but keeps the version floor. */
  boolean removeList() {
    writeLock.lock();
    try {
      if (list == null) {
        return false;
      }
      list = null;
      table = new RoutingTable(version);
      return true;
    } finally {
      writeLock.unlock();
    }
  }

  /** The expired policy `plain`: every key cold while true; the list is kept. */
  void setPlain(boolean p) {
    writeLock.lock();
    try {
      if (plain == p) {
        return;
      }
      table = build(list, livePartitions, p);
      plain = p;
    } finally {
      writeLock.unlock();
    }
  }

  /** The table for {@code partitions}, rebuilding it once when the count changed; null: route cold. */
  RoutingTable tableFor(int partitions) {
    RoutingTable t = table;
    if (t.isEmpty() || t.partitions == partitions) {
      return t;
    }
    if (!writeLock.tryLock()) {
      return null;
    }
    try {
      t = table;
      if (!t.isEmpty() && t.partitions != partitions) {
        t = build(list, partitions, plain);
        table = t;
      }
      return t.partitions == partitions || t.isEmpty() ? t : null;
    } finally {
      writeLock.unlock();
    }
  }
}
