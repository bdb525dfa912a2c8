package dev.hotkey.kafka.internals;

import java.util.concurrent.ThreadLocalRandom;

/** Exponential backoff with jitter in [d/2, d] (client/src/backoff.h). One per thread. */
final class Backoff {
  private final long initial;
  private final long max;
  private long cur;

  Backoff(long initialMs, long maxMs) {
    this.initial = initialMs;
    this.max = maxMs;
    this.cur = initialMs;
  }

  long nextMs() {
    long out = ThreadLocalRandom.current().nextLong(cur / 2, cur + 1);
    cur = Math.min(max, cur * 2);
    return out;
  }

  void reset() {
    cur = initial;
  }
}
