package dev.hotkey.kafka.internals;

import dev.hotkey.kafka.HotkeyPartitioner;

import java.nio.charset.StandardCharsets;
import java.util.List;

/** For the benchmarks: publishes a verified list with one hot key (6 equal salts). */
public final class BenchLists {
  private BenchLists() {}

  public static void publish(HotkeyPartitioner p, String topic, int partitions, String key)
      throws DecodeException {
    List<HotKeyList.Salt> salts = Salts.plan(HashFamily.MURMUR2,
        key.getBytes(StandardCharsets.UTF_8), 6, partitions, Salts.DEFAULT_SEPARATOR);
    StringBuilder sb = new StringBuilder("{\"topic\":\"" + topic + "\",\"version\":1,"
        + "\"partitions\":" + partitions + ",\"hash\":\"murmur2\",\"keys\":[{\"key\":\"" + key
        + "\",\"salts\":[");
    for (int i = 0; i < salts.size(); i++) {
      sb.append(i > 0 ? "," : "").append("{\"salt\":").append(salts.get(i).salt)
          .append(",\"partition\":").append(salts.get(i).partition)
          .append(",\"weight\":").append(salts.get(i).weight).append('}');
    }
    sb.append("]}]}");
    if (!p.client().topic(topic).publish(HotKeyList.parse(sb.toString()))) {
      throw new IllegalStateException("list not published");
    }
  }
}
