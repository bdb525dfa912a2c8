// Builds against the installed headers and library only; exits 0 when routing works.
#include <hotkey/client/client.h>
#include <hotkey/client/merge.h>
#include <hotkey/client/producer.h>
#include <hotkey/client/rdkafka.h>

#include <cstdio>

int main() {
  hotkey::client::Client client(hotkey::client::Properties{{"hotkey.hash", "murmur2"}});
  auto topic = client.topic("orders");
  auto d = client.route(topic, "key", 3, {}, 8);
  if (d.partition != hotkey::partition_for(hotkey::HashFamily::kMurmur2, "key", 8)) return 1;
  auto r = hotkey::client::recover_logical_key("key#2", "2", "5");
  if (r.logical_key != "key" || r.version != 5) return 2;
  hotkey::client::RdkafkaPartitioner partitioner(hotkey::client::Properties{});
  hotkey::Producer producer(hotkey::client::Properties{{"bootstrap.servers", "127.0.0.1:1"}});
  std::puts("ok");
  return 0;
}
