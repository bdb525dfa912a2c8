package dev.hotkey.kafka.internals;

import java.nio.ByteBuffer;
import java.nio.CharBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CharsetDecoder;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.Base64;

/** Keys are bytes; in JSON they travel as "key" (UTF-8 text) or "key_b64" (common/src/key_codec.cc). */
final class KeyCodec {
  private KeyCodec() {}

  /** The text of strict UTF-8 bytes (no overlongs, no surrogates, nothing above U+10FFFF), or null. */
  static String utf8(byte[] bytes) {
    CharsetDecoder d = StandardCharsets.UTF_8.newDecoder()
        .onMalformedInput(CodingErrorAction.REPORT)
        .onUnmappableCharacter(CodingErrorAction.REPORT);
    try {
      CharBuffer cb = d.decode(ByteBuffer.wrap(bytes));
      return cb.toString();
    } catch (CharacterCodingException e) {
      return null;
    }
  }

  static boolean isValidUtf8(byte[] bytes) {
    return utf8(bytes) != null;
  }

  static String base64(byte[] bytes) {
    return Base64.getEncoder().encodeToString(bytes);
  }

  /** Strict decode: padded, standard alphabet, canonical (discarded bits zero); null otherwise. */
  static byte[] base64Decode(String text) {
    if (text.length() % 4 != 0) {
      return null;
    }
    byte[] out;
    try {
      out = Base64.getDecoder().decode(text);
    } catch (IllegalArgumentException e) {
      return null;
    }
    return base64(out).equals(text) ? out : null;
  }

  /** Appends the key's JSON member ("key" or "key_b64") to an object being written. */
  static void writeKey(StringBuilder out, byte[] key) {
    String text = utf8(key);
    if (text != null) {
      out.append("\"key\":");
      Json.writeString(out, text);
    } else {
      out.append("\"key_b64\":");
      Json.writeString(out, base64(key));
    }
  }
}
