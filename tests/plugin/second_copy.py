"""Two librdkafka copies in one process loading the plugin: the PyPI wheel's (a Producer with the
plugin) and then the system's librdkafka.so.1 through ctypes (rd_kafka_conf_set of
plugin.library.paths). Prints the result of that second conf_set and its errstr, then exits 0;
a crash is the failure this rules out."""
import ctypes
import sys

import confluent_kafka


def main():
    plugin = sys.argv[1]
    producer = confluent_kafka.Producer({"plugin.library.paths": plugin,
                                         "bootstrap.servers": "127.0.0.1:1",
                                         "hotkey.coordinator.url": "http://127.0.0.1:1"})
    system = ctypes.CDLL("librdkafka.so.1")
    system.rd_kafka_conf_new.restype = ctypes.c_void_p
    system.rd_kafka_conf_set.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_char_p,
                                         ctypes.c_char_p, ctypes.c_size_t]
    system.rd_kafka_conf_destroy.argtypes = [ctypes.c_void_p]
    conf = system.rd_kafka_conf_new()
    err = ctypes.create_string_buffer(512)
    res = system.rd_kafka_conf_set(conf, b"plugin.library.paths", plugin.encode(), err, len(err))
    print("second conf_set: %d %s" % (res, err.value.decode()))
    system.rd_kafka_conf_destroy(conf)
    producer.flush(0)
    return 0


if __name__ == "__main__":
    sys.exit(main())
