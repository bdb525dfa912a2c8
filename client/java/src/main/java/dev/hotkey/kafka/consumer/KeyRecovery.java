package dev.hotkey.kafka.consumer;

/**
 * How {@link LogicalKeys#recover} finds a salted record's logical key (merge contract version 1,
 * rule 3; {@code hotkey::client::KeyRecovery}).
 */
public enum KeyRecovery {
  /**
   * The {@code hotkey.salt} header first; without a valid one, a key ending in
   * {@code <separator><digits>} is read as salted (records sent without the headers:
   * {@code hotkey.salt.headers=false}, tools that do not set them). The default.
   */
  HEADERS_THEN_SUFFIX,
  /**
   * Only the header: for topics whose unsalted keys may themselves end in
   * {@code <separator><digits>}, which the suffix rule would cut.
   */
  HEADERS_ONLY
}
