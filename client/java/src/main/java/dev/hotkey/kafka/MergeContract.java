package dev.hotkey.kafka;

/**
 * The merge contract, version 1 (docs/CLIENT.md "Merge contract", docs/CONTRACTS.md section 3):
 * the record headers a salted record carries and the separator its rekeyed key uses unless the
 * topic's list names another. Producers write them ({@link HotkeyInterceptor}); consumers read
 * them ({@code dev.hotkey.kafka.consumer}). The one place these literals are written.
 */
public final class MergeContract {
  private MergeContract() {}

  /** The contract's version ({@code hotkey::client::kMergeContractVersion}). */
  public static final int VERSION = 1;
  /** Header: the salt, ASCII decimal (unsigned 32-bit, no sign). */
  public static final String SALT_HEADER = "hotkey.salt";
  /** Header: the list version the record was routed with, ASCII decimal (unsigned 64-bit). */
  public static final String VERSION_HEADER = "hotkey.version";
  /** The separator of {@code <key><separator><salt>} when the topic's list names none. */
  public static final String DEFAULT_SEPARATOR = "#";
}
