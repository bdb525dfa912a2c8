package dev.hotkey.kafka;

/**
 * The merge contract, versions 1 and 2 (docs/CLIENT.md "Merge contract", docs/CONTRACTS.md
 * section 3): the record headers and the separator a rekeyed key uses unless the topic's list
 * names another. Producers write them ({@link HotkeyInterceptor}); consumers read
 * them ({@code dev.hotkey.kafka.consumer}). The one place these literals are written.
 */
public final class MergeContract {
  private MergeContract() {}

  /**
   * The version written by default ({@code hotkey::client::kMergeContractVersion},
   * {@code hotkey.merge.contract}); readers read 1 and 2.
   */
  public static final int VERSION = 2;
  /** Header: the salt, ASCII decimal (unsigned 32-bit, no sign). */
  public static final String SALT_HEADER = "hotkey.salt";
  /** Header: the list version the record was routed with, ASCII decimal (unsigned 64-bit). */
  public static final String VERSION_HEADER = "hotkey.version";
  /**
   * Header (version 2, empty value): the record went out with its logical key although that key
   * ends in {@code <separator><digits>}; readers of both versions keep such a key whole.
   */
  public static final String UNSALTED_HEADER = "hotkey.unsalted";
  /** The separator of {@code <key><separator><salt>} when the topic's list names none. */
  public static final String DEFAULT_SEPARATOR = "#";

  /**
   * {@code hotkey.version} values at or above 2^63 (this bit, as an unsigned 64-bit value) mark
   * a record its producer salted with a local table while the topic's list was stale
   * (docs/CLIENT.md, "Local tables"): {@code 2^63 + V}, V the version of the last list it had
   * (0: none). No coordinator issues such a version.
   */
  public static final long LOCAL_TABLE_VERSION_BIT = Long.MIN_VALUE;

  /** Whether a {@code hotkey.version} value marks a producer's local table. */
  public static boolean isLocalTableVersion(long version) {
    return version < 0;
  }

  /** The list version a local table was built on (0: none); {@code version} itself otherwise. */
  public static long listVersionOf(long version) {
    return version & ~LOCAL_TABLE_VERSION_BIT;
  }
}
