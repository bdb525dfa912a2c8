// The plugin's librdkafka is the one that loads it. Every rd_kafka_* function the plugin and the
// client library inside it call is defined here as a jump through a pointer, and conf_init binds
// those pointers (bind_librdkafka) to the copy of librdkafka that called it: the system's
// librdkafka.so.1 for kcat or Debian's python3-confluent-kafka, the wheel's bundled
// librdkafka-<hash>.so.1 for the PyPI confluent-kafka. Linking librdkafka.so.1 instead made a
// binding with its own copy hand the plugin objects of one copy and take calls into the other:
// the process crashed in the first call. A librdkafka that exports no rd_kafka_* symbols (linked
// statically into an executable, as confluent-kafka-go's default build is) cannot be reached:
// conf_init refuses it with the reason. The plugin links no librdkafka (checked by
// PluginConf.LinksNoLibrdkafkaOfItsOwn), so nothing resolves to a second copy by accident.
//
// The trampolines are one indirect jump each: the arguments (variadic ones too:
// rd_kafka_producev) pass through untouched.
#include "rdkafka_forward.h"

#include <dlfcn.h>

#include <cstdlib>
#include <mutex>
#include <string>

// Every librdkafka function the plugin's code calls. One missing here would be taken from the
// -lrdkafka hotkey::client brings to the link: the plugin would need librdkafka.so.1 again,
// which PluginConf.LinksNoLibrdkafkaOfItsOwn fails on (`nm -D --undefined-only` of the plugin
// built without this file lists what belongs here).
#define HOTKEY_RDKAFKA_FUNCTIONS(X) \
  X(rd_kafka_assign) \
  X(rd_kafka_conf_destroy) \
  X(rd_kafka_conf_dump) \
  X(rd_kafka_conf_dump_free) \
  X(rd_kafka_conf_get) \
  X(rd_kafka_conf_get_default_topic_conf) \
  X(rd_kafka_conf_interceptor_add_on_conf_destroy) \
  X(rd_kafka_conf_interceptor_add_on_conf_dup) \
  X(rd_kafka_conf_interceptor_add_on_conf_set) \
  X(rd_kafka_conf_interceptor_add_on_new) \
  X(rd_kafka_conf_new) \
  X(rd_kafka_conf_set) \
  X(rd_kafka_conf_set_default_topic_conf) \
  X(rd_kafka_conf_set_dr_msg_cb) \
  X(rd_kafka_conf_set_error_cb) \
  X(rd_kafka_conf_set_opaque) \
  X(rd_kafka_conf_set_stats_cb) \
  X(rd_kafka_consumer_close) \
  X(rd_kafka_consumer_poll) \
  X(rd_kafka_destroy) \
  X(rd_kafka_flush) \
  X(rd_kafka_header_add) \
  X(rd_kafka_header_get_last) \
  X(rd_kafka_headers_destroy) \
  X(rd_kafka_headers_new) \
  X(rd_kafka_interceptor_add_on_destroy) \
  X(rd_kafka_interceptor_add_on_send) \
  X(rd_kafka_message_destroy) \
  X(rd_kafka_message_headers) \
  X(rd_kafka_metadata) \
  X(rd_kafka_metadata_destroy) \
  X(rd_kafka_msg_partitioner_consistent_random) \
  X(rd_kafka_msg_partitioner_random) \
  X(rd_kafka_new) \
  X(rd_kafka_outq_len) \
  X(rd_kafka_poll) \
  X(rd_kafka_poll_set_consumer) \
  X(rd_kafka_producev) \
  X(rd_kafka_topic_conf_get) \
  X(rd_kafka_topic_conf_new) \
  X(rd_kafka_topic_conf_set_opaque) \
  X(rd_kafka_topic_conf_set_partitioner_cb) \
  X(rd_kafka_topic_destroy) \
  X(rd_kafka_topic_name) \
  X(rd_kafka_topic_new) \
  X(rd_kafka_topic_opaque) \
  X(rd_kafka_topic_partition_list_add) \
  X(rd_kafka_topic_partition_list_destroy) \
  X(rd_kafka_topic_partition_list_new) \
  X(rd_kafka_type)

extern "C" {
[[noreturn]] __attribute__((visibility("hidden"))) void hotkey_rdkafka_unbound() {
  // Unreachable: conf_init is the plugin's only entry point and binds first.
  std::abort();
}
#define HOTKEY_SLOT(name) \
  __attribute__((visibility("hidden"))) void* hotkey_fwd_##name = \
      reinterpret_cast<void*>(&hotkey_rdkafka_unbound);
HOTKEY_RDKAFKA_FUNCTIONS(HOTKEY_SLOT)
#undef HOTKEY_SLOT
}

#if defined(__x86_64__)
#if defined(__CET__)
#define HOTKEY_ENDBR "endbr64\n"
#else
#define HOTKEY_ENDBR ""
#endif
#define HOTKEY_TRAMPOLINE(name)                                                           \
  asm(".text\n.globl " #name "\n.hidden " #name "\n.type " #name ", @function\n" #name \
      ":\n" HOTKEY_ENDBR "jmp *hotkey_fwd_" #name "(%rip)\n.size " #name ", .-" #name "\n");
#elif defined(__aarch64__)
#define HOTKEY_TRAMPOLINE(name)                                                             \
  asm(".text\n.globl " #name "\n.hidden " #name "\n.type " #name ", %function\n" #name      \
      ":\nadrp x16, hotkey_fwd_" #name "\nldr x16, [x16, #:lo12:hotkey_fwd_" #name "]\nbr " \
      "x16\n.size " #name ", .-" #name "\n");
#else
#error "rdkafka_forward.cc: trampolines for x86_64 and aarch64 only"
#endif
HOTKEY_RDKAFKA_FUNCTIONS(HOTKEY_TRAMPOLINE)
#undef HOTKEY_TRAMPOLINE

namespace hotkey::client::plugin {
namespace {

struct Slot {
  const char* name;
  void** target;
};

#define HOTKEY_ENTRY(name) Slot{#name, &hotkey_fwd_##name},
const Slot kSlots[] = {HOTKEY_RDKAFKA_FUNCTIONS(HOTKEY_ENTRY)};
#undef HOTKEY_ENTRY

std::mutex g_mu;
const void* g_bound_base = nullptr;  // guarded by g_mu: the load address of the bound copy
std::string g_bound_object;          // guarded by g_mu

std::string base_name(const char* path) {
  std::string p = path != nullptr ? path : "";
  return p.substr(p.rfind('/') + 1);
}

}  // namespace

std::string bind_librdkafka(const void* caller) {
  Dl_info ci{};
  if (dladdr(caller, &ci) == 0 || ci.dli_fbase == nullptr) {
    return "hotkey plugin refused: cannot tell which librdkafka loaded it";
  }
  const std::string object = base_name(ci.dli_fname);
  std::lock_guard lock(g_mu);
  if (g_bound_base == ci.dli_fbase) return "";
  if (g_bound_base != nullptr) {
    return "hotkey plugin refused: loaded by the librdkafka in " + object +
           " while it serves the one in " + g_bound_object +
           " (one librdkafka per process; docs/CLIENT.md, Bindings)";
  }
  // The caller's own handle (a reference that keeps it loaded while its functions are bound);
  // the main program when the path does not reopen.
  void* handle = dlopen(ci.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
  if (handle == nullptr) handle = dlopen(nullptr, RTLD_LAZY);
  void* found[sizeof(kSlots) / sizeof(kSlots[0])] = {};
  for (size_t i = 0; i < sizeof(kSlots) / sizeof(kSlots[0]); ++i) {
    void* fn = handle != nullptr ? dlsym(handle, kSlots[i].name) : nullptr;
    Dl_info fi{};
    // Only the caller's own definition: a global lookup could find another copy.
    if (fn == nullptr || dladdr(fn, &fi) == 0 || fi.dli_fbase != ci.dli_fbase) {
      if (handle != nullptr) dlclose(handle);
      return "hotkey plugin refused: static librdkafka in " + object + " (no " + kSlots[i].name +
             " exported); it needs a shared librdkafka (docs/CLIENT.md, Bindings)";
    }
    found[i] = fn;
  }
  for (size_t i = 0; i < sizeof(kSlots) / sizeof(kSlots[0]); ++i) *kSlots[i].target = found[i];
  g_bound_base = ci.dli_fbase;
  g_bound_object = object;
  return "";
}

}  // namespace hotkey::client::plugin
