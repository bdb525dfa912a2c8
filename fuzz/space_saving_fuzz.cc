// Fuzz target: SpaceSaving::deserialize. The format has exactly one encoding per summary, so
// anything accepted must re-serialize to the same bytes; everything else must raise
// std::invalid_argument. Accepted summaries must also stay usable (update, merge).
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string_view>

#include "fuzz_check.h"
#include "hotkey/space_saving.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  try {
    auto sketch = hotkey::SpaceSaving::deserialize(input);
    HOTKEY_FUZZ_CHECK(sketch.serialize() == input);
    HOTKEY_FUZZ_CHECK(sketch.size() <= sketch.capacity());
    // Adding weight must stay exact; totals near 2^64 would overflow by design, so skip them.
    if (sketch.total() < (uint64_t{1} << 62)) {
      auto copy = sketch;
      copy.merge(sketch);
      HOTKEY_FUZZ_CHECK(copy.size() <= copy.capacity());
      HOTKEY_FUZZ_CHECK(copy.total() == 2 * sketch.total());
      sketch.update("fuzz-key", 3);
      HOTKEY_FUZZ_CHECK(sketch.estimate("fuzz-key") >= 3);
    }
  } catch (const std::invalid_argument&) {
  }
  return 0;
}
