package dev.hotkey.kafka.internals;

/** A document the client refuses; the message names the field and says why, as the C++ decoders do. */
public final class DecodeException extends Exception {
  private static final long serialVersionUID = 1L;

  DecodeException(String message) {
    super(message);
  }

  static DecodeException field(String path, String why) {
    return new DecodeException(path + ": " + why);
  }
}
