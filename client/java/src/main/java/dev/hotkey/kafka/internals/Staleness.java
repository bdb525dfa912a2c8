package dev.hotkey.kafka.internals;

/**
 * Whether one topic's list is stale (docs/CLIENT.md, "Local tables"; client/src/staleness.h):
 * its list source (the coordinator over HTTP, or the topic's lists partition) has been out of
 * contact for longer than hotkey.list.stale.ms, or the source says the topic's owner is gone.
 * Written by the source's thread (the list subscriber or the kafka transport), read by the
 * reporter, which plans local tables for stale topics, and by stats(). Lock-free.
 */
final class Staleness {
  // nowMs() when contact was lost; 0: in contact.
  private volatile long lostSinceMs;
  private volatile boolean unreachable;
  private volatile boolean ownerGone;
  private volatile boolean known;
  // What the source said last: the log line's words.
  private volatile String cause = "";

  static long nowMs() {
    return System.nanoTime() / 1_000_000;
  }

  /**
   * The source lost contact at {@code sinceMs} (nowMs clock), unless it already had: the topic
   * is stale once the bound has passed since then; contact() ends it.
   */
  synchronized void lost(long sinceMs, String why) {
    if (lostSinceMs == 0) {
      lostSinceMs = sinceMs != 0 ? sinceMs : 1;
      cause = why;
    }
  }

  /** In contact with the source again (an answer, a record, a live leader). */
  void contact() {
    lostSinceMs = 0;
  }

  /**
   * Stale by the source's own judgement, at once: the kafka transport's (no contact with the
   * lists partition for the bound).
   */
  void setUnreachable(boolean yes, String why) {
    if (yes && !unreachable) {
      cause = why;
    }
    unreachable = yes;
  }

  /** The owner is gone (the subscription's `stale` member, or the heartbeats stopped). */
  void setOwnerGone(boolean yes, String why) {
    if (yes && !ownerGone) {
      cause = why;
    }
    ownerGone = yes;
  }

  /**
   * The source told the topic's list state: it holds the topic's list, or confirmed that there
   * is none. Without that nothing is known of the keys it denies: no local tables.
   */
  void setKnown() {
    known = true;
  }

  boolean known() {
    return known;
  }

  boolean ownerGone() {
    return ownerGone;
  }

  /** Contact lost (whether or not the bound has passed). */
  boolean outOfContact() {
    return lostSinceMs != 0;
  }

  boolean stale(long boundMs, long nowMs) {
    if (boundMs == 0) {
      return false;
    }
    if (unreachable || ownerGone) {
      return true;
    }
    long lost = lostSinceMs;
    return lost != 0 && nowMs - lost > boundMs;
  }

  /** Why the topic is stale (meaningful while stale()). */
  String cause() {
    return cause;
  }
}
