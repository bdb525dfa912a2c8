package dev.hotkey.kafka.internals;

import java.math.BigInteger;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A small strict JSON reader and writer for the client's own documents (lists, report bodies,
 * batch answers): no dependency enters the application's classpath. Values: Map (object,
 * member order kept, a repeated name keeps the last), List, String, Num, Boolean, NULL.
 */
final class Json {
  private Json() {}

  /** JSON null (absent for every reader here, as in common/src/json_fields.h). */
  static final Object NULL = new Object() {
    @Override
    public String toString() {
      return "null";
    }
  };

  /** Deepest nesting of objects and arrays accepted (json_fields::kMaxDepth). */
  static final int MAX_DEPTH = 16;

  /** A number as written: integers keep their exact value, others their double. */
  static final class Num {
    final BigInteger integer; // null for a fraction or exponent
    final double value;

    Num(BigInteger integer, double value) {
      this.integer = integer;
      this.value = value;
    }

    /** As nlohmann's is_number_unsigned: an integer in [0, 2^64). */
    boolean isUnsigned() {
      return integer != null && integer.signum() >= 0 && integer.bitLength() <= 64;
    }
  }

  static final class SyntaxError extends Exception {
    private static final long serialVersionUID = 1L;

    SyntaxError(String message) {
      super(message);
    }
  }

  static Object parse(String text) throws SyntaxError {
    Parser p = new Parser(text);
    p.ws();
    Object v = p.value(0);
    p.ws();
    if (p.pos != text.length()) {
      throw p.error("expected end of input");
    }
    return v;
  }

  private static final class Parser {
    final String s;
    int pos;

    Parser(String s) {
      this.s = s;
    }

    SyntaxError error(String what) {
      return new SyntaxError("syntax error at offset " + pos + ": " + what);
    }

    void ws() {
      while (pos < s.length()) {
        char c = s.charAt(pos);
        if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
          pos++;
        } else {
          break;
        }
      }
    }

    Object value(int depth) throws SyntaxError {
      if (pos >= s.length()) {
        throw error("unexpected end of input");
      }
      char c = s.charAt(pos);
      switch (c) {
        case '{':
          return object(depth + 1);
        case '[':
          return array(depth + 1);
        case '"':
          return string();
        case 't':
          literal("true");
          return Boolean.TRUE;
        case 'f':
          literal("false");
          return Boolean.FALSE;
        case 'n':
          literal("null");
          return NULL;
        default:
          if (c == '-' || (c >= '0' && c <= '9')) {
            return number();
          }
          throw error("unexpected character");
      }
    }

    void literal(String word) throws SyntaxError {
      if (!s.startsWith(word, pos)) {
        throw error("invalid literal");
      }
      pos += word.length();
    }

    Map<String, Object> object(int depth) throws SyntaxError {
      if (depth > MAX_DEPTH) {
        throw new SyntaxError("JSON nested deeper than " + MAX_DEPTH + " levels");
      }
      pos++;
      Map<String, Object> out = new LinkedHashMap<>();
      ws();
      if (pos < s.length() && s.charAt(pos) == '}') {
        pos++;
        return out;
      }
      for (;;) {
        ws();
        if (pos >= s.length() || s.charAt(pos) != '"') {
          throw error("expected a member name");
        }
        String name = string();
        ws();
        if (pos >= s.length() || s.charAt(pos) != ':') {
          throw error("expected ':'");
        }
        pos++;
        ws();
        out.put(name, value(depth));
        ws();
        if (pos >= s.length()) {
          throw error("unexpected end of input");
        }
        char c = s.charAt(pos++);
        if (c == '}') {
          return out;
        }
        if (c != ',') {
          throw error("expected ',' or '}'");
        }
      }
    }

    List<Object> array(int depth) throws SyntaxError {
      if (depth > MAX_DEPTH) {
        throw new SyntaxError("JSON nested deeper than " + MAX_DEPTH + " levels");
      }
      pos++;
      List<Object> out = new ArrayList<>();
      ws();
      if (pos < s.length() && s.charAt(pos) == ']') {
        pos++;
        return out;
      }
      for (;;) {
        ws();
        out.add(value(depth));
        ws();
        if (pos >= s.length()) {
          throw error("unexpected end of input");
        }
        char c = s.charAt(pos++);
        if (c == ']') {
          return out;
        }
        if (c != ',') {
          throw error("expected ',' or ']'");
        }
      }
    }

    String string() throws SyntaxError {
      pos++;
      StringBuilder out = null;
      int start = pos;
      for (;;) {
        if (pos >= s.length()) {
          throw error("unterminated string");
        }
        char c = s.charAt(pos);
        if (c == '"') {
          String done = out == null ? s.substring(start, pos) : out.append(s, start, pos).toString();
          pos++;
          return done;
        }
        if (c < 0x20) {
          throw error("control character in string");
        }
        if (Character.isSurrogate(c)) {
          // Text came from strict UTF-8: only well-formed pairs reach here.
          pos++;
          continue;
        }
        if (c != '\\') {
          pos++;
          continue;
        }
        if (out == null) {
          out = new StringBuilder();
        }
        out.append(s, start, pos);
        pos++;
        if (pos >= s.length()) {
          throw error("unterminated escape");
        }
        char e = s.charAt(pos++);
        switch (e) {
          case '"':
          case '\\':
          case '/':
            out.append(e);
            break;
          case 'b':
            out.append('\b');
            break;
          case 'f':
            out.append('\f');
            break;
          case 'n':
            out.append('\n');
            break;
          case 'r':
            out.append('\r');
            break;
          case 't':
            out.append('\t');
            break;
          case 'u': {
            char u = hex4();
            if (Character.isHighSurrogate(u)) {
              if (!s.startsWith("\\u", pos)) {
                throw error("a high surrogate must be followed by a low one");
              }
              pos += 2;
              char low = hex4();
              if (!Character.isLowSurrogate(low)) {
                throw error("a high surrogate must be followed by a low one");
              }
              out.append(u).append(low);
            } else if (Character.isLowSurrogate(u)) {
              throw error("a lone low surrogate");
            } else {
              out.append(u);
            }
            break;
          }
          default:
            throw error("invalid escape");
        }
        start = pos;
      }
    }

    char hex4() throws SyntaxError {
      if (pos + 4 > s.length()) {
        throw error("truncated \\u escape");
      }
      int v = 0;
      for (int i = 0; i < 4; i++) {
        int d = Character.digit(s.charAt(pos + i), 16);
        if (d < 0) {
          throw error("invalid \\u escape");
        }
        v = v * 16 + d;
      }
      pos += 4;
      return (char) v;
    }

    Num number() throws SyntaxError {
      int start = pos;
      if (s.charAt(pos) == '-') {
        pos++;
      }
      if (pos >= s.length()) {
        throw error("truncated number");
      }
      if (s.charAt(pos) == '0') {
        pos++;
      } else if (s.charAt(pos) >= '1' && s.charAt(pos) <= '9') {
        while (pos < s.length() && Character.isDigit(s.charAt(pos)) && s.charAt(pos) < 128) {
          pos++;
        }
      } else {
        throw error("invalid number");
      }
      boolean integer = true;
      if (pos < s.length() && s.charAt(pos) == '.') {
        integer = false;
        pos++;
        int digits = pos;
        while (pos < s.length() && s.charAt(pos) >= '0' && s.charAt(pos) <= '9') {
          pos++;
        }
        if (pos == digits) {
          throw error("invalid number");
        }
      }
      if (pos < s.length() && (s.charAt(pos) == 'e' || s.charAt(pos) == 'E')) {
        integer = false;
        pos++;
        if (pos < s.length() && (s.charAt(pos) == '+' || s.charAt(pos) == '-')) {
          pos++;
        }
        int digits = pos;
        while (pos < s.length() && s.charAt(pos) >= '0' && s.charAt(pos) <= '9') {
          pos++;
        }
        if (pos == digits) {
          throw error("invalid number");
        }
      }
      String text = s.substring(start, pos);
      double d = Double.parseDouble(text);
      if (integer) {
        return new Num(new BigInteger(text), d);
      }
      if (Double.isInfinite(d)) {
        throw error("number out of range");
      }
      return new Num(null, d);
    }
  }

  // ---- writing ----

  static void writeString(StringBuilder out, String s) {
    out.append('"');
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      switch (c) {
        case '"':
          out.append("\\\"");
          break;
        case '\\':
          out.append("\\\\");
          break;
        case '\n':
          out.append("\\n");
          break;
        case '\r':
          out.append("\\r");
          break;
        case '\t':
          out.append("\\t");
          break;
        case '\b':
          out.append("\\b");
          break;
        case '\f':
          out.append("\\f");
          break;
        default:
          if (c < 0x20) {
            out.append(String.format("\\u%04x", (int) c));
          } else {
            out.append(c);
          }
      }
    }
    out.append('"');
  }
}
