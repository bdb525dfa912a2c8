// Byte-safe keys: strict UTF-8, RFC 4648 base64 and the key/key_b64 choice.
#include "hotkey/key_codec.h"

#include <string>

#include <gtest/gtest.h>

namespace hotkey {
namespace {

std::string bytes(std::initializer_list<int> values) {
  std::string s;
  for (int v : values) s.push_back(static_cast<char>(v));
  return s;
}

TEST(KeyCodec, Utf8AcceptsWellFormedText) {
  EXPECT_TRUE(is_valid_utf8(""));
  EXPECT_TRUE(is_valid_utf8("tenant-42"));
  EXPECT_TRUE(is_valid_utf8(std::string_view("\0", 1)));  // NUL is a valid code point
  EXPECT_TRUE(is_valid_utf8("\xc3\xa9"));                 // U+00E9
  EXPECT_TRUE(is_valid_utf8("\xe2\x82\xac"));             // U+20AC
  EXPECT_TRUE(is_valid_utf8("\xef\xbf\xbf"));             // U+FFFF
  EXPECT_TRUE(is_valid_utf8("\xf0\x9f\x94\xa5"));         // U+1F525
  EXPECT_TRUE(is_valid_utf8("\xf4\x8f\xbf\xbf"));         // U+10FFFF
}

TEST(KeyCodec, Utf8RejectsMalformedSequences) {
  EXPECT_FALSE(is_valid_utf8("\x80"));              // lone continuation
  EXPECT_FALSE(is_valid_utf8("\xc3"));              // truncated
  EXPECT_FALSE(is_valid_utf8("\xe2\x82"));          // truncated
  EXPECT_FALSE(is_valid_utf8("\xc0\x80"));          // overlong NUL
  EXPECT_FALSE(is_valid_utf8("\xc1\xbf"));          // overlong
  EXPECT_FALSE(is_valid_utf8("\xe0\x80\x80"));      // overlong 3-byte
  EXPECT_FALSE(is_valid_utf8("\xf0\x80\x80\x80"));  // overlong 4-byte
  EXPECT_FALSE(is_valid_utf8("\xed\xa0\x80"));      // surrogate U+D800
  EXPECT_FALSE(is_valid_utf8("\xed\xbf\xbf"));      // surrogate U+DFFF
  EXPECT_FALSE(is_valid_utf8("\xf4\x90\x80\x80"));  // above U+10FFFF
  EXPECT_FALSE(is_valid_utf8("\xf5\x80\x80\x80"));  // invalid lead
  EXPECT_FALSE(is_valid_utf8("\xff"));
  EXPECT_FALSE(is_valid_utf8("ok\xc3\x28"));  // bad continuation
}

TEST(KeyCodec, Base64MatchesRfc4648Vectors) {
  const std::pair<const char*, const char*> vectors[] = {
      {"", ""},
      {"f", "Zg=="},
      {"fo", "Zm8="},
      {"foo", "Zm9v"},
      {"foob", "Zm9vYg=="},
      {"fooba", "Zm9vYmE="},
      {"foobar", "Zm9vYmFy"},
  };
  for (const auto& [plain, encoded] : vectors) {
    EXPECT_EQ(base64_encode(plain), encoded);
    EXPECT_EQ(base64_decode(encoded), std::string(plain));
  }
}

TEST(KeyCodec, Base64RoundTripsEveryByteAndLength) {
  std::string all;
  for (int b = 0; b < 256; ++b) all.push_back(static_cast<char>(b));
  for (size_t len = 0; len <= all.size(); ++len) {
    std::string s = all.substr(256 - len);
    auto decoded = base64_decode(base64_encode(s));
    ASSERT_TRUE(decoded.has_value()) << len;
    EXPECT_EQ(*decoded, s) << len;
  }
}

TEST(KeyCodec, Base64DecodeIsStrict) {
  EXPECT_FALSE(base64_decode("Zg"));        // padding required
  EXPECT_FALSE(base64_decode("Zg="));       // wrong length
  EXPECT_FALSE(base64_decode("Zm9v\n"));    // whitespace
  EXPECT_FALSE(base64_decode("Zm 9"));      // whitespace
  EXPECT_FALSE(base64_decode("Zm9-"));      // URL alphabet is not accepted
  EXPECT_FALSE(base64_decode("Zg==Zg=="));  // padding in the middle
  EXPECT_FALSE(base64_decode("Z==="));      // too much padding
  EXPECT_FALSE(base64_decode("Zg=a"));      // data after padding
  EXPECT_FALSE(base64_decode("Zh=="));      // non-canonical: discarded bits set
  EXPECT_FALSE(base64_decode("Zm9="));      // non-canonical
  EXPECT_FALSE(base64_decode("===="));
}

TEST(KeyCodec, EncodeKeyChoosesTextOrBase64) {
  auto text = encode_key("seller-\xc3\xa9");
  EXPECT_EQ(text.field, "key");
  EXPECT_EQ(text.value, "seller-\xc3\xa9");
  auto binary = encode_key(bytes({0x00, 0xff, 0x10}));
  EXPECT_EQ(binary.field, "key_b64");
  EXPECT_EQ(binary.value, "AP8Q");
  auto empty = encode_key("");
  EXPECT_EQ(empty.field, "key");
  EXPECT_EQ(empty.value, "");
}

TEST(KeyCodec, PrintableKeyEscapesWhatTerminalsWouldInterpret) {
  EXPECT_EQ(printable_key("plain key"), "plain key");
  EXPECT_EQ(printable_key("a\\b"), "a\\\\b");
  EXPECT_EQ(printable_key(bytes({'k', 0x00, '\n', 0x1b, 0x7f})), "k\\x00\\x0a\\x1b\\x7f");
  EXPECT_EQ(printable_key(bytes({0xff, 0xc3})), "\\xff\\xc3");
  EXPECT_EQ(printable_key("caf\xc3\xa9"), "caf\xc3\xa9");
  EXPECT_EQ(printable_key("\xc2\x9b"), "\\xc2\\x9b");  // C1 control CSI
  EXPECT_EQ(printable_key("\xf0\x9f\x94\xa5"), "\xf0\x9f\x94\xa5");
}

}  // namespace
}  // namespace hotkey
