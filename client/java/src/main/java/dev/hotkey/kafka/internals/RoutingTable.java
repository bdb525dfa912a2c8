package dev.hotkey.kafka.internals;

import dev.hotkey.kafka.MergeContract;
import java.nio.charset.StandardCharsets;
import java.security.SecureRandom;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicIntegerArray;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.apache.kafka.common.header.internals.RecordHeaders;

/**
 * The immutable routing table of one topic for one partition count (client/src/routing_table.cc):
 * built off the send path from a validated list; afterwards only the round-robin cursors move.
 */
final class RoutingTable {
  /** One hot key. */
  static final class Entry {
    final byte[] key;
    final String text; // the key as UTF-8 text, or null
    final int hash; // the murmur2 family hash of key
    final int[] salts;
    final int[] partitions;
    final short[] seq;
    final int index;
    // Built once per table so that rekeying a record builds no key text and no header values:
    // the salted key text per salt (null when the key is not UTF-8 text) and each salt's
    // hotkey.salt header. Shared by every record the table rekeys; Kafka only reads them.
    // All three are null for the keys past the table's budget (PRECOMPUTED_BYTES): the
    // interceptor builds theirs per record.
    final String[] saltedText;
    final Header[] saltHeaders;
    // Per salt, the two merge headers of a record that had none. ProducerRecord copies the
    // headers it is given into a list of its own, so one instance serves every such record;
    // nothing writes to it after construction.
    final RecordHeaders[] mergeHeaders;

    Entry(byte[] key, int hash, int[] salts, int[] partitions, short[] seq, int index,
        byte[] separator, Header versionHeader, boolean precompute) {
      this.key = key;
      this.text = KeyCodec.utf8(key);
      this.hash = hash;
      this.salts = salts;
      this.partitions = partitions;
      this.seq = seq;
      this.index = index;
      if (!precompute) {
        this.saltedText = null;
        this.saltHeaders = null;
        this.mergeHeaders = null;
        return;
      }
      String sep = new String(separator, StandardCharsets.UTF_8);
      this.saltedText = new String[salts.length];
      this.saltHeaders = new Header[salts.length];
      this.mergeHeaders = new RecordHeaders[salts.length];
      for (int i = 0; i < salts.length; i++) {
        String digits = Integer.toUnsignedString(salts[i]);
        saltedText[i] = text == null ? null : text + sep + digits;
        saltHeaders[i] = new RecordHeader(MergeContract.SALT_HEADER, digits.getBytes(StandardCharsets.US_ASCII));
        mergeHeaders[i] = new RecordHeaders(new Header[] {saltHeaders[i], versionHeader});
      }
    }

    /** Whether one of this key's salts is on partition p. */
    boolean hasPartition(int p) {
      for (int q : partitions) {
        if (q == p) {
          return true;
        }
      }
      return false;
    }

    /** About the heap that precomputing costs: a salted key and three small objects per salt. */
    static long precomputedBytes(int keyBytes, int salts) {
      return (long) salts * (keyBytes + 200);
    }
  }

  // The most heap a table spends on precomputed salted keys and headers (keys in list order):
  // a typical list (tens of keys, a few dozen salts each) takes well under 1 MB; a list near
  // the format's limits (65,536 keys, 4 KB keys, a salt per partition) would take gigabytes.
  static final long PRECOMPUTED_BYTES = 4L << 20;


  final long version;
  final int partitions; // 0: no list
  final byte[] separator;
  final String separatorText;
  final boolean recomputed;
  private final Entry[] slots; // open addressing by mixed hash; null: empty
  private final int mask;
  private final long[] filter = new long[8]; // 512-bit filter of mixed hashes
  private final Map<String, Entry> byText;
  // A 1024-bit filter over (length, first char, last char) of the hot keys' texts: a cold String
  // key usually misses it with three reads, before its String hash is computed for the map.
  private final long[] textFilter = new long[16];
  // The hotkey.version header of the records this table rekeys.
  final Header versionHeader;
  private final AtomicIntegerArray cursors;
  final List<Entry> entries;
  final boolean empty;
  // Local entries are entries[localBegin..]; their cursors started at cursorStart. The wrr
  // policy moves an entry's cursor on every pick; in a table with local entries (countPicks)
  // value_hash and random move it too, so that local picks are counted from the cursors.
  private final int localBegin;
  private final boolean countPicks;
  private final int[] cursorStart;

  static final RoutingTable EMPTY = new RoutingTable(0);

  /** Empty: every key cold; the version carries on for reports. */
  RoutingTable(long version) {
    this.version = version;
    this.partitions = 0;
    this.separator = Salts.DEFAULT_SEPARATOR;
    this.separatorText = new String(separator, StandardCharsets.UTF_8);
    this.recomputed = false;
    this.slots = new Entry[0];
    this.mask = 0;
    this.byText = Map.of();
    this.versionHeader = versionHeader(version);
    this.cursors = new AtomicIntegerArray(0);
    this.entries = List.of();
    this.empty = true;
    this.localBegin = 0;
    this.countPicks = false;
    this.cursorStart = new int[0];
  }

  /**
   * The table for {@code livePartitions} from {@code list}. When the list was planned for
   * another count or family, each hot key gets first-fit verified salts for this count (as
   * many as the list gave it, capped at the count), as the C++ router does.
   */
  RoutingTable(HotKeyList list, int livePartitions) {
    this(list, null, livePartitions);
  }

  /**
   * The table of {@code list} (null: none) for {@code livePartitions} as above, plus, when
   * {@code local} is given, its keys (planned for {@code livePartitions}, with the list's
   * separator): version 2^63 + local.baseVersion, and the local entries count their picks
   * (localPicks).
   */
  RoutingTable(HotKeyList list, TopicRouter.LocalTables local, int livePartitions) {
    this.version = local == null ? list.version
        : MergeContract.LOCAL_TABLE_VERSION_BIT | local.baseVersion;
    this.partitions = livePartitions;
    boolean validSep = list != null && Salts.validSeparator(list.separator);
    boolean sameSpace = validSep && list.partitions == livePartitions
        && list.hash == HashFamily.MURMUR2;
    this.separator = validSep ? list.separator : Salts.DEFAULT_SEPARATOR;
    this.separatorText = new String(separator, StandardCharsets.UTF_8);
    this.recomputed = list != null && !sameSpace;
    this.versionHeader = versionHeader(version);
    long[] budget = {PRECOMPUTED_BYTES};
    List<Entry> built = new ArrayList<>();
    for (HotKeyList.HotKey hk : list == null ? List.<HotKeyList.HotKey>of() : list.keys) {
      if (hk.salts.isEmpty()) {
        continue;
      }
      List<HotKeyList.Salt> salts;
      if (sameSpace) {
        salts = new ArrayList<>();
        for (HotKeyList.Salt s : hk.salts) {
          if (s.partition >= 0 && s.partition < livePartitions && s.weight != 0) {
            salts.add(s);
          }
        }
      } else {
        salts = Salts.plan(HashFamily.MURMUR2, hk.key, Math.min(hk.salts.size(), livePartitions),
            livePartitions, separator);
      }
      add(built, hk.key, salts, budget);
    }
    this.localBegin = built.size();
    if (local != null) {
      for (HotKeyList.HotKey hk : local.keys) {
        add(built, hk.key, hk.salts, budget);
      }
    }
    this.countPicks = local != null;
    this.entries = List.copyOf(built);
    this.empty = built.isEmpty();
    int cap = 4;
    while (cap < built.size() * 2) {
      cap <<= 1;
    }
    this.slots = new Entry[cap];
    this.mask = cap - 1;
    Map<String, Entry> texts = new HashMap<>();
    for (Entry e : built) {
      int mixed = mix(e.hash);
      int bit = mixed >>> (32 - 9);
      filter[bit >>> 6] |= 1L << (bit & 63);
      int slot = mixed & mask;
      while (slots[slot] != null) {
        slot = (slot + 1) & mask;
      }
      slots[slot] = e;
      if (e.text != null) {
        texts.put(e.text, e);
        int tb = textBit(e.text);
        textFilter[tb >>> 6] |= 1L << (tb & 63);
      }
    }
    this.byText = texts;
    this.cursors = new AtomicIntegerArray(built.size());
    this.cursorStart = new int[built.size() - localBegin];
    for (Entry e : built) {
      if (e.seq.length > 0) {
        cursors.set(e.index, (int) Long.remainderUnsigned(nextCursorSeed(), e.seq.length));
      }
      if (e.index >= localBegin) {
        cursorStart[e.index - localBegin] = cursors.get(e.index);
      }
    }
  }

  // One entry for `key` over `salts` (at most 65,535; those given, in order), its salted keys
  // and headers precomputed while `budget` lasts.
  private void add(List<Entry> built, byte[] key, List<HotKeyList.Salt> salts, long[] budget) {
    if (salts.isEmpty()) {
      return;
    }
    int n = Math.min(salts.size(), 65535);
    int[] saltIds = new int[n];
    int[] parts = new int[n];
    int[] weights = new int[n];
    for (int i = 0; i < n; i++) {
      saltIds[i] = salts.get(i).salt;
      parts[i] = salts.get(i).partition;
      weights[i] = salts.get(i).weight == 0 ? 1 : salts.get(i).weight;
    }
    int hash = Hashes.murmur2(key) & 0x7fffffff;
    long cost = Entry.precomputedBytes(key.length, n);
    boolean precompute = cost <= budget[0];
    if (precompute) {
      budget[0] -= cost;
    }
    built.add(new Entry(key, hash, saltIds, parts, Wrr.sequence(weights, Wrr.MAX_LEN),
        built.size(), separator, versionHeader, precompute));
  }

  /** Whether this table salts keys of a local table (its version is 2^63 + the list's). */
  boolean hasLocal() {
    return localBegin < entries.size();
  }

  /**
   * Records routed to a salt of a local entry so far (0 without local entries): each local
   * cursor's steps since its random start, modulo 2^32 (read far more often than that wraps).
   */
  long localPicks() {
    long n = 0;
    for (int i = localBegin; i < entries.size(); i++) {
      n += Integer.toUnsignedLong(cursors.get(i) - cursorStart[i - localBegin]);
    }
    return n;
  }

  boolean isEmpty() {
    return empty;
  }

  private static int mix(int h) {
    return (h ^ (h >>> 16)) * 0x45d9f3b;
  }

  /**
   * False when no hot key has murmur2 family hash {@code hash} (one bit test; always false for an
   * empty table); true when one may.
   */
  boolean mayContain(int hash) {
    return filterHas(mix(hash));
  }

  private boolean filterHas(int mixed) {
    int bit = mixed >>> (32 - 9);
    return ((filter[bit >>> 6] >>> (bit & 63)) & 1L) != 0;
  }

  /** The hot entry for key bytes whose murmur2 family hash is {@code hash}, or null. */
  Entry find(byte[] key, int hash) {
    int mixed = mix(hash);
    if (!filterHas(mixed)) {
      return null;
    }
    int slot = mixed & mask;
    for (;;) {
      Entry e = slots[slot];
      if (e == null) {
        return null;
      }
      if (e.hash == hash && Arrays.equals(e.key, key)) {
        return e;
      }
      slot = (slot + 1) & mask;
    }
  }

  private static Header versionHeader(long version) {
    return new RecordHeader(MergeContract.VERSION_HEADER,
        Long.toUnsignedString(version).getBytes(StandardCharsets.US_ASCII));
  }

  private static int textBit(String s) {
    int n = s.length();
    int h = n == 0 ? 0 : n * 0x9e3779b1 ^ s.charAt(0) * 0x85ebca6b ^ s.charAt(n - 1) * 0xc2b2ae35;
    return (h ^ (h >>> 15)) >>> (32 - 10);
  }

  /** The hot entry for a key given as text (encoded as UTF-8 by the producer), or null. */
  Entry find(String key) {
    if (empty) {
      return null;
    }
    int tb = textBit(key);
    if (((textFilter[tb >>> 6] >>> (tb & 63)) & 1L) == 0) {
      return null;
    }
    return byText.get(key);
  }

  /** The next step of e's round robin: an index into e.salts. */
  int pickWrr(Entry e) {
    int pos = Integer.remainderUnsigned(cursors.getAndIncrement(e.index), e.seq.length);
    return e.seq[pos];
  }

  /** The index into e.salts for a pick of {@code value} (value_hash, random). */
  int pickBy(Entry e, int value) {
    if (countPicks) {
      cursors.getAndIncrement(e.index);
    }
    return e.seq[Integer.remainderUnsigned(value, e.seq.length)];
  }

  // Where a new table's cursors start: a different place in every process, table and key (see
  // next_cursor_seed in client/src/routing_table.cc: started at the head, a whole fleet sent each
  // version's first records to the heaviest salts in step).
  private static final AtomicLong SEED = new AtomicLong(new SecureRandom().nextLong());

  static long nextCursorSeed() {
    return splitmix64(SEED.getAndIncrement());
  }

  static long splitmix64(long x) {
    x += 0x9e3779b97f4a7c15L;
    x = (x ^ (x >>> 30)) * 0xbf58476d1ce4e5b9L;
    x = (x ^ (x >>> 27)) * 0x94d049bb133111ebL;
    return x ^ (x >>> 31);
  }
}
