package dev.hotkey.kafka.examples;

import dev.hotkey.kafka.consumer.LogicalKeyDeserializer;
import java.util.Properties;
import org.apache.kafka.common.serialization.Serde;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;

/**
 * Kafka Streams over a salted topic (docs/CLIENT-JAVA.md "Consumers"): records per logical key,
 * whatever partitions the hot keys were salted over. The source reads keys through
 * {@link LogicalKeyDeserializer} (Streams hands deserializers the record's headers, so the
 * merge headers decide), {@code selectKey} to that logical key marks the stream for
 * repartitioning, and {@code groupByKey} then makes Streams repartition by it: every record of
 * a key reaches one task, one count. Without the selectKey Streams would count a salted key
 * per source partition (it takes the source topic as partitioned by the key it reads).
 *
 * <pre>
 * java -cp ... dev.hotkey.kafka.examples.LogicalKeyCounts BOOTSTRAP INPUT OUTPUT
 * </pre>
 */
public final class LogicalKeyCounts {
  private LogicalKeyCounts() {}

  /** The topology: INPUT (String keys, salted or not) to OUTPUT (logical key, count so far). */
  public static Topology topology(String input, String output) {
    Serde<String> logicalKeys = Serdes.serdeFrom(new StringSerializer(),
        new LogicalKeyDeserializer<>(new StringDeserializer()));
    StreamsBuilder builder = new StreamsBuilder();
    builder.stream(input, Consumed.with(logicalKeys, Serdes.String()))
        .selectKey((logicalKey, value) -> logicalKey)
        .groupByKey(Grouped.with("by-logical-key", Serdes.String(), Serdes.String()))
        .count(Materialized.as("counts-by-logical-key"))
        .toStream()
        .to(output, Produced.with(Serdes.String(), Serdes.Long()));
    return builder.build();
  }

  public static void main(String[] args) {
    if (args.length != 3) {
      System.err.println("usage: LogicalKeyCounts BOOTSTRAP INPUT OUTPUT");
      System.exit(2);
    }
    Properties p = new Properties();
    p.put(StreamsConfig.APPLICATION_ID_CONFIG, "logical-key-counts");
    p.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
    KafkaStreams streams = new KafkaStreams(topology(args[1], args[2]), p);
    Runtime.getRuntime().addShutdownHook(new Thread(streams::close));
    streams.start();
  }
}
