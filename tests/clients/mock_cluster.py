"""A librdkafka mock cluster other processes can reach over TCP.

usage: mock_cluster.py BROKERS [TOPIC:PARTITIONS ...]

Uses the mock-cluster C API of the librdkafka bundled in the confluent-kafka
wheel through ctypes (the Python package has no binding for it). Prints
`BOOTSTRAP host:port,...` once ready, then serves until SIGTERM or until its
parent test goes away (stdin closes). Commands on stdin, one per line:
`down N` / `up N` take broker N down or bring it back (printing `OK down N`).
"""
import ctypes
import glob
import os
import signal
import sys
import threading

import confluent_kafka

libdir = os.path.join(os.path.dirname(os.path.dirname(confluent_kafka.__file__)), "confluent_kafka.libs")
lib = ctypes.CDLL(glob.glob(os.path.join(libdir, "librdkafka-*.so*"))[0])
vp, cp = ctypes.c_void_p, ctypes.c_char_p
lib.rd_kafka_conf_new.restype = vp
lib.rd_kafka_conf_set.argtypes = [vp, cp, cp, cp, ctypes.c_size_t]
lib.rd_kafka_new.restype = vp
lib.rd_kafka_new.argtypes = [ctypes.c_int, vp, cp, ctypes.c_size_t]
lib.rd_kafka_mock_cluster_new.restype = vp
lib.rd_kafka_mock_cluster_new.argtypes = [vp, ctypes.c_int]
lib.rd_kafka_mock_cluster_bootstraps.restype = cp
lib.rd_kafka_mock_cluster_bootstraps.argtypes = [vp]
lib.rd_kafka_mock_topic_create.restype = ctypes.c_int
lib.rd_kafka_mock_topic_create.argtypes = [vp, cp, ctypes.c_int, ctypes.c_int]
lib.rd_kafka_mock_group_initial_rebalance_delay_ms.argtypes = [vp, ctypes.c_int32]
lib.rd_kafka_mock_broker_set_down.argtypes = [vp, ctypes.c_int32]
lib.rd_kafka_mock_broker_set_up.argtypes = [vp, ctypes.c_int32]
lib.rd_kafka_mock_cluster_destroy.argtypes = [vp]
lib.rd_kafka_destroy.argtypes = [vp]

err = ctypes.create_string_buffer(512)
conf = lib.rd_kafka_conf_new()
lib.rd_kafka_conf_set(conf, b"log_level", b"3", err, 512)
rk = lib.rd_kafka_new(0, conf, err, 512)
if not rk:
    sys.exit(f"rd_kafka_new: {err.value.decode()}")
brokers = int(sys.argv[1])
mc = lib.rd_kafka_mock_cluster_new(rk, brokers)
if not mc:
    sys.exit("rd_kafka_mock_cluster_new failed")
lib.rd_kafka_mock_group_initial_rebalance_delay_ms(mc, 0)
for spec in sys.argv[2:]:
    name, partitions = spec.split(":")
    rc = lib.rd_kafka_mock_topic_create(mc, name.encode(), int(partitions), min(brokers, 3))
    if rc != 0:
        sys.exit(f"topic {name}: error {rc}")
print("BOOTSTRAP", lib.rd_kafka_mock_cluster_bootstraps(mc).decode(), flush=True)

done = threading.Event()
signal.signal(signal.SIGTERM, lambda *_: done.set())
signal.signal(signal.SIGINT, lambda *_: done.set())


def commands():
    for line in sys.stdin:
        parts = line.split()
        if len(parts) == 2 and parts[0] in ("down", "up"):
            fn = lib.rd_kafka_mock_broker_set_down if parts[0] == "down" else lib.rd_kafka_mock_broker_set_up
            fn(mc, int(parts[1]))
            print("OK", parts[0], parts[1], flush=True)
    done.set()


threading.Thread(target=commands, daemon=True).start()
done.wait()
lib.rd_kafka_mock_cluster_destroy(mc)
lib.rd_kafka_destroy(rk)
