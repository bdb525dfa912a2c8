package dev.hotkey.kafka.internals;

import dev.hotkey.kafka.HotkeyConfig;
import dev.hotkey.kafka.HotkeyInterceptor;
import dev.hotkey.kafka.HotkeyPartitioner;
import dev.hotkey.kafka.MergeContract;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import org.apache.kafka.common.Cluster;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.PartitionInfo;

/** Builders for tests: verified list documents and hand-made cluster metadata. */
final class Lists {
  private Lists() {}

  /** A list JSON for topic with one hot key on the first-fit salts, weighted as given. */
  static String listJson(String topic, long version, int partitions, String key, int... weights) {
    List<HotKeyList.Salt> salts = Salts.plan(HashFamily.MURMUR2,
        key.getBytes(StandardCharsets.UTF_8), weights.length, partitions, Salts.DEFAULT_SEPARATOR);
    StringBuilder sb = new StringBuilder();
    sb.append("{\"topic\":\"").append(topic).append("\",\"version\":")
        .append(Long.toUnsignedString(version))
        .append(",\"partitions\":").append(partitions)
        .append(",\"hash\":\"murmur2\",\"separator\":\"#\",\"keys\":[{\"key\":");
    Json.writeString(sb, key);
    sb.append(",\"salts\":[");
    for (int i = 0; i < salts.size(); i++) {
      if (i > 0) {
        sb.append(',');
      }
      sb.append("{\"salt\":").append(salts.get(i).salt).append(",\"partition\":")
          .append(salts.get(i).partition).append(",\"weight\":").append(weights[i]).append('}');
    }
    sb.append("]}],\"denied\":[],\"updated_at_ms\":1}");
    return sb.toString();
  }

  static HotKeyList list(String topic, long version, int partitions, String key, int... weights)
      throws DecodeException {
    return HotKeyList.parse(listJson(topic, version, partitions, key, weights));
  }

  static Cluster cluster(String topic, int partitions) {
    Node node = new Node(0, "127.0.0.1", 9092);
    List<PartitionInfo> parts = new ArrayList<>();
    for (int p = 0; p < partitions; p++) {
      parts.add(new PartitionInfo(topic, p, node, new Node[] {node}, new Node[] {node}));
    }
    return new Cluster("test", List.of(node), parts, java.util.Set.of(), java.util.Set.of());
  }
}
