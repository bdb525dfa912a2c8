// Percent-encoding of a query parameter or path segment (RFC 3986: everything but the
// unreserved characters A-Z a-z 0-9 - _ . ~ becomes %XX, upper-case hex).
#pragma once

#include <string>
#include <string_view>

namespace hotkey::test_support {

std::string url_encode(std::string_view s);

}  // namespace hotkey::test_support
