package dev.hotkey.kafka.internals;

import dev.hotkey.kafka.MergeContract;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.ReentrantLock;

/**
 * One topic's routing state (client/src/router.cc TopicState): the current immutable table in a
 * volatile field, the validated list it came from, the version floor and the live partition
 * count. Writers (the list subscriber, the TTL policy) serialize on a lock; the send path only
 * reads the volatile table, except for the one rebuild after a partition count change, which it
 * tries without waiting (records racing with it route cold). While the list is stale the
 * reporter may add local tables (docs/CLIENT.md, "Local tables"): their keys join the one
 * routing table next to the list's, version 2^63 + the list's, until a fresh list, a tombstone
 * or contact back drops them.
 */
final class TopicRouter {
  /** A producer's own salt tables for keys its list leaves unsalted (router.h LocalTables). */
  static final class LocalTables {
    final long baseVersion; // the version of the list they extend (0: none)
    final int partitions; // the live partition count they were planned for
    final List<HotKeyList.HotKey> keys; // each with a table verified for `partitions`

    LocalTables(long baseVersion, int partitions, List<HotKeyList.HotKey> keys) {
      this.baseVersion = baseVersion;
      this.partitions = partitions;
      this.keys = List.copyOf(keys);
    }
  }

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
  // Local tables, routed with while they fit the live count; the generation is bumped (under
  // writeLock) by every change of the list or the local tables.
  private volatile LocalTables local;
  private volatile long localGen;
  private final AtomicLong localSets = new AtomicLong();
  // Picks of local entries: tables no longer installed are read again for a while (a thread
  // that loaded one just before the swap may still pick from it), then folded into the sum.
  private static final long RETIRED_READ_NANOS = 2_000_000_000L;
  private long localFolded; // guarded by writeLock
  private final List<RoutingTable> retired = new ArrayList<>(); // guarded by writeLock
  private final List<Long> retiredAt = new ArrayList<>(); // guarded by writeLock
  /** Whether the list is stale (the list source writes it, the reporter reads it). */
  final Staleness staleness = new Staleness();
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
    LocalTables lt = local;
    if (!asPlain && lt != null && (partitions < 1 || partitions == lt.partitions)) {
      return new RoutingTable(l, lt, lt.partitions);
    }
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
      forgetLocal(); // the fresh list wins
      // The table first: whoever sees the new version already routes with its list.
      RoutingTable next = build(l, livePartitions, plain);
      list = l;
      install(next);
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
      forgetLocal();
      install(new RoutingTable(version));
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
      install(build(list, livePartitions, p));
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
        install(t);
      }
      return t.partitions == partitions || t.isEmpty() ? t : null;
    } finally {
      writeLock.unlock();
    }
  }

  // Caller holds writeLock: the topic's table becomes {@code next}; a table with local entries
  // that goes is kept for a while so that its last picks are counted.
  private void install(RoutingTable next) {
    RoutingTable old = table;
    table = next;
    if (old != next && old.hasLocal()) {
      long now = System.nanoTime();
      foldRetired(now);
      retired.add(old);
      retiredAt.add(now);
    }
  }

  // Caller holds writeLock: tables retired a while ago are read one last time.
  private void foldRetired(long now) {
    for (int i = retired.size() - 1; i >= 0; i--) {
      if (now - retiredAt.get(i) >= RETIRED_READ_NANOS) {
        localFolded += retired.get(i).localPicks();
        retired.remove(i);
        retiredAt.remove(i);
      }
    }
  }

  // Caller holds writeLock: drops the local tables (the list or the contact wins).
  private void forgetLocal() {
    local = null;
    localGen++;
  }

  /** The local tables now, or null. */
  LocalTables localTables() {
    return local;
  }

  /** Bumped by every change of the list or the local tables. */
  long localGeneration() {
    return localGen;
  }

  /** Local tables set so far (each setLocalTables that succeeded). */
  long localTablesSet() {
    return localSets.get();
  }

  /** Records routed to a salt of a local key so far (counted from the tables' cursors). */
  long localSalted() {
    writeLock.lock();
    try {
      foldRetired(System.nanoTime());
      long n = localFolded;
      for (RoutingTable t : retired) {
        n += t.localPicks();
      }
      return n + table.localPicks();
    } finally {
      writeLock.unlock();
    }
  }

  /**
   * Makes {@code tables} part of the routing table next to the list's keys (version 2^63 + the
   * list's). Refused (false, nothing changed) when the generation is no longer
   * {@code expectedGeneration} (a list, a drop or other local tables came in between), when the
   * tables extend another list version than the topic's, were planned for another partition
   * count than the live one, hold a key the list also salts, or a salt that does not recompute
   * to its partition (every table verified for murmur2, the list's separator and
   * {@code tables.partitions}).
   */
  boolean setLocalTables(LocalTables tables, long expectedGeneration) {
    HotKeyList l = list;
    byte[] sep = l != null && Salts.validSeparator(l.separator) ? l.separator
        : Salts.DEFAULT_SEPARATOR;
    if (tables.partitions < 1) {
      return false;
    }
    for (HotKeyList.HotKey k : tables.keys) {
      if (!SaltPlanner.verify(HashFamily.MURMUR2, k.key, k.salts, tables.partitions, sep)) {
        return false;
      }
      if (l != null) {
        for (HotKeyList.HotKey listed : l.keys) {
          if (Arrays.equals(listed.key, k.key)) {
            return false;
          }
        }
      }
    }
    writeLock.lock();
    try {
      if (localGen != expectedGeneration || list != l
          || tables.baseVersion != (l != null ? l.version : 0)
          || (tables.baseVersion & MergeContract.LOCAL_TABLE_VERSION_BIT) != 0) {
        return false;
      }
      int live = livePartitions;
      if (live > 0 && live != tables.partitions) {
        return false;
      }
      local = tables;
      localGen++;
      localSets.incrementAndGet();
      install(build(l, tables.partitions, plain));
      return true;
    } finally {
      writeLock.unlock();
    }
  }

  /** Drops the local tables; false when there were none. */
  boolean dropLocalTables() {
    writeLock.lock();
    try {
      if (local == null) {
        return false;
      }
      forgetLocal();
      install(build(list, livePartitions, plain));
      return true;
    } finally {
      writeLock.unlock();
    }
  }
}
