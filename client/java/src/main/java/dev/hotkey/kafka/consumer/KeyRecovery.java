package dev.hotkey.kafka.consumer;

/**
 * How {@link LogicalKeys#recover} finds a salted record's logical key (merge contract versions
 * 1 and 2, rule 3; {@code hotkey::client::KeyRecovery}). Either way a valid {@code hotkey.salt}
 * decides first, then {@code hotkey.unsalted} (version 2) keeps the key whole.
 */
public enum KeyRecovery {
  /**
   * The headers first; without them, a key ending in {@code <separator><digits>} is read as
   * salted (version 2's rekeyed records, records sent with {@code hotkey.salt.headers=false},
   * tools that do not set headers). Exact for version-2 producers. The default.
   */
  HEADERS_THEN_SUFFIX,
  /**
   * Only the headers: for topics whose unsalted keys may themselves end in
   * {@code <separator><digits>} while their producers write version 1 (a version-2 producer's
   * rekeyed records carry no header: read them with the default).
   */
  HEADERS_ONLY
}
