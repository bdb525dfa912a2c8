package dev.hotkey.kafka.consumer;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;

/**
 * A record's logical key as the merge contract recovers it ({@code hotkey::client::RecoveredKey}):
 * the key without its salt suffix, whether the record was salted and with which salt, and the
 * list version it was routed with.
 */
public final class RecoveredKey {
  private final byte[] logicalKey;
  private final boolean salted;
  private final long salt;
  private final long version;
  private final boolean fromHeaders;

  RecoveredKey(byte[] logicalKey, boolean salted, long salt, long version, boolean fromHeaders) {
    this.logicalKey = logicalKey;
    this.salted = salted;
    this.salt = salt;
    this.version = version;
    this.fromHeaders = fromHeaders;
  }

  /** The logical key's bytes (null for a record without a key). Not a copy: do not change it. */
  public byte[] logicalKey() {
    return logicalKey;
  }

  /** The logical key as UTF-8 text (null for a record without a key). */
  public String logicalKeyText() {
    return logicalKey == null ? null : new String(logicalKey, StandardCharsets.UTF_8);
  }

  /** Whether the record was salted (it belongs to one of its key's sub-streams). */
  public boolean salted() {
    return salted;
  }

  /** The salt (an unsigned 32-bit value); 0 when not salted. */
  public long salt() {
    return salt;
  }

  /** The {@code hotkey.version} header: the list version it was routed with (unsigned); 0: none. */
  public long version() {
    return version;
  }

  /** Whether the salt came from the {@code hotkey.salt} header (not the key's suffix). */
  public boolean fromHeaders() {
    return fromHeaders;
  }

  @Override
  public boolean equals(Object o) {
    if (!(o instanceof RecoveredKey)) {
      return false;
    }
    RecoveredKey r = (RecoveredKey) o;
    return Arrays.equals(logicalKey, r.logicalKey) && salted == r.salted && salt == r.salt
        && version == r.version && fromHeaders == r.fromHeaders;
  }

  @Override
  public int hashCode() {
    return Arrays.hashCode(logicalKey) * 31 + Long.hashCode(salt);
  }

  @Override
  public String toString() {
    return "RecoveredKey{" + logicalKeyText() + (salted ? ", salt " + salt : ", unsalted")
        + (version != 0 ? ", version " + Long.toUnsignedString(version) : "")
        + (fromHeaders ? ", from headers" : "") + "}";
  }
}
