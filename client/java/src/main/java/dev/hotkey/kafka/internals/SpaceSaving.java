package dev.hotkey.kafka.internals;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * Space-Saving top-k summary (Metwally et al.) with the mergeable-summaries merge rule, the
 * guarantees of common/include/hotkey/space_saving.h: for total weight N and capacity k, every
 * monitored key has count - error <= true <= count, every key with true > N/k is monitored, and
 * min <= N/k. An indexed min-heap keeps updates at O(log k). Not thread-safe.
 */
final class SpaceSaving {
  static final class Item {
    final byte[] key;
    long count;
    long error;
    int heapPos;

    Item(byte[] key, long count, long error) {
      this.key = key;
      this.count = count;
      this.error = error;
    }
  }

  private final int capacity;
  private final Item[] heap;
  private int size;
  private final Map<HotKeyList.ByteKey, Item> index = new HashMap<>();
  private long total;

  SpaceSaving(int capacity) {
    if (capacity < 1) {
      throw new IllegalArgumentException("capacity must be >= 1");
    }
    this.capacity = capacity;
    this.heap = new Item[capacity];
  }

  int capacity() {
    return capacity;
  }

  int size() {
    return size;
  }

  long total() {
    return total;
  }

  /** The smallest count when full, 0 otherwise: the most any unmonitored key can have. */
  long minCount() {
    return size == capacity ? heap[0].count : 0;
  }

  void clear() {
    Arrays.fill(heap, 0, size, null);
    size = 0;
    index.clear();
    total = 0;
  }

  /** Adds weight to key and returns its entry afterwards. */
  Item update(byte[] key, long weight) {
    total += weight;
    HotKeyList.ByteKey k = new HotKeyList.ByteKey(key);
    Item it = index.get(k);
    if (it != null) {
      it.count += weight;
      siftDown(it.heapPos);
      return it;
    }
    if (size < capacity) {
      it = new Item(key, weight, 0);
      it.heapPos = size;
      heap[size++] = it;
      index.put(k, it);
      siftUp(it.heapPos);
      return it;
    }
    Item min = heap[0];
    index.remove(new HotKeyList.ByteKey(min.key));
    it = new Item(key, min.count + weight, min.count);
    it.heapPos = 0;
    heap[0] = it;
    index.put(k, it);
    siftDown(0);
    return it;
  }

  private void siftUp(int i) {
    Item x = heap[i];
    while (i > 0) {
      int parent = (i - 1) >>> 1;
      if (heap[parent].count <= x.count) {
        break;
      }
      heap[i] = heap[parent];
      heap[i].heapPos = i;
      i = parent;
    }
    heap[i] = x;
    x.heapPos = i;
  }

  private void siftDown(int i) {
    Item x = heap[i];
    for (;;) {
      int l = 2 * i + 1;
      if (l >= size) {
        break;
      }
      int c = l + 1 < size && heap[l + 1].count < heap[l].count ? l + 1 : l;
      if (heap[c].count >= x.count) {
        break;
      }
      heap[i] = heap[c];
      heap[i].heapPos = i;
      i = c;
    }
    heap[i] = x;
    x.heapPos = i;
  }

  /** Monitored items, count descending then key bytes ascending (unsigned). */
  List<Item> items() {
    List<Item> out = new ArrayList<>(size);
    for (int i = 0; i < size; i++) {
      out.add(new Item(heap[i].key, heap[i].count, heap[i].error));
    }
    out.sort(SpaceSaving::order);
    return out;
  }

  private static int order(Item a, Item b) {
    int c = Long.compare(b.count, a.count);
    return c != 0 ? c : Arrays.compareUnsigned(a.key, b.key);
  }

  /**
   * The n-way merge into a summary of {@code capacity}: each part contributes its count, or its
   * minimum for keys it does not monitor (errors likewise); the k largest counts are kept.
   */
  static SpaceSaving mergeAll(List<SpaceSaving> parts, int capacity) {
    Map<HotKeyList.ByteKey, long[]> acc = new HashMap<>();
    long total = 0;
    long mins = 0;
    for (SpaceSaving p : parts) {
      total += p.total;
      mins += p.minCount();
    }
    final long minSum = mins;
    for (SpaceSaving p : parts) {
      long pmin = p.minCount();
      for (int i = 0; i < p.size; i++) {
        Item it = p.heap[i];
        long[] a = acc.computeIfAbsent(new HotKeyList.ByteKey(it.key),
            k -> new long[] {minSum, minSum});
        a[0] += it.count - pmin;
        a[1] += it.error - pmin;
      }
    }
    List<Item> all = new ArrayList<>(acc.size());
    for (Map.Entry<HotKeyList.ByteKey, long[]> e : acc.entrySet()) {
      all.add(new Item(e.getKey().bytes, e.getValue()[0], e.getValue()[1]));
    }
    all.sort(SpaceSaving::order);
    SpaceSaving out = new SpaceSaving(capacity);
    for (int i = 0; i < all.size() && i < capacity; i++) {
      Item it = all.get(i);
      it.heapPos = out.size;
      out.heap[out.size++] = it;
      out.index.put(new HotKeyList.ByteKey(it.key), it);
      out.siftUp(it.heapPos);
    }
    out.total = total;
    return out;
  }
}
