// Inflating a gzip body with zlib, for tests and benchmarks that read compressed HTTP answers
// (link ZLIB::ZLIB).
#pragma once

#include <zlib.h>

#include <optional>
#include <string>

namespace hotkey::test_support {

// The data of `in`, or nullopt when it is not one whole gzip stream.
inline std::optional<std::string> gunzip(const std::string& in) {
  z_stream z{};
  if (inflateInit2(&z, 16 + MAX_WBITS) != Z_OK) return std::nullopt;
  std::string out;
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  z.avail_in = static_cast<uInt>(in.size());
  int r = Z_OK;
  while (r == Z_OK) {
    char buf[16384];
    z.next_out = reinterpret_cast<Bytef*>(buf);
    z.avail_out = sizeof(buf);
    r = inflate(&z, Z_NO_FLUSH);
    out.append(buf, sizeof(buf) - z.avail_out);
  }
  const bool whole = r == Z_STREAM_END && z.avail_in == 0;
  inflateEnd(&z);
  if (!whole) return std::nullopt;
  return out;
}

}  // namespace hotkey::test_support
