// skew_producer (Go): one producer process of the plugin's Go test. confluent-kafka-go's
// Producer (its bundled, statically linked librdkafka) with the hotkey librdkafka plugin named
// by configuration alone, sending the skewed workload of tests/plugin/skew_producer.py.
//
// Record i carries key "hot-user" when i is even, else "user-<(i * 7919) % 500>". Records go out
// in batches of 200 with a 20 ms pause between batches. Exit status 0 when every record was
// delivered, 3 when the producer could not be created (the error is printed on stderr).
package main

import (
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
)

func keyOf(i int) string {
	if i%2 == 0 {
		return "hot-user"
	}
	return fmt.Sprintf("user-%d", (i*7919)%500)
}

func main() {
	bootstrap := flag.String("bootstrap", "", "bootstrap.servers")
	topic := flag.String("topic", "", "topic")
	plugin := flag.String("plugin", "", "path of libhotkey-rdkafka.so")
	url := flag.String("url", "", "hotkey.coordinator.url")
	records := flag.Int("records", 0, "records to send")
	producerID := flag.String("producer-id", "", "hotkey.producer.id")
	startupWait := flag.Int("startup-wait-ms", 0, "hotkey.startup.wait.ms (with hotkey.topics)")
	flag.Parse()

	_, version := kafka.LibraryVersion()
	fmt.Fprintf(os.Stderr, "skew_producer (go): librdkafka %s\n", version)
	conf := kafka.ConfigMap{
		"bootstrap.servers":         *bootstrap,
		"plugin.library.paths":      *plugin,
		"hotkey.coordinator.url":    *url,
		"hotkey.producer.id":        *producerID,
		"hotkey.report.interval.ms": "200",
		"linger.ms":                 "5",
	}
	if *startupWait > 0 {
		conf["hotkey.topics"] = *topic
		conf["hotkey.startup.wait.ms"] = fmt.Sprint(*startupWait)
	}
	p, err := kafka.NewProducer(&conf)
	if err != nil {
		fmt.Fprintf(os.Stderr, "skew_producer (go): %v\n", err)
		os.Exit(3)
	}
	failed := 0
	done := make(chan struct{})
	go func() {
		for e := range p.Events() {
			if m, ok := e.(*kafka.Message); ok && m.TopicPartition.Error != nil {
				failed++
			}
		}
		close(done)
	}()
	for i := 0; i < *records; i++ {
		msg := &kafka.Message{
			TopicPartition: kafka.TopicPartition{Topic: topic, Partition: kafka.PartitionAny},
			Key:            []byte(keyOf(i)),
			Value:          []byte("x"),
		}
		for {
			err := p.Produce(msg, nil)
			if err == nil {
				break
			}
			if kerr, ok := err.(kafka.Error); ok && kerr.Code() == kafka.ErrQueueFull {
				time.Sleep(50 * time.Millisecond)
				continue
			}
			fmt.Fprintf(os.Stderr, "skew_producer (go): produce: %v\n", err)
			os.Exit(1)
		}
		if i%200 == 199 {
			time.Sleep(20 * time.Millisecond)
		}
	}
	left := p.Flush(60000)
	p.Close()
	<-done
	if left > 0 || failed > 0 {
		fmt.Fprintf(os.Stderr, "skew_producer (go): %d undelivered, %d failed\n", left, failed)
		os.Exit(1)
	}
}
