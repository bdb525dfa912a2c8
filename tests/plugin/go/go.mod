module hotkey/tests/plugin/skewproducer

go 1.21

require github.com/confluentinc/confluent-kafka-go/v2 v2.11.1
