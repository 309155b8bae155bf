"""A librdkafka mock cluster other processes can reach over TCP.

usage: mock_cluster.py BROKERS [TOPIC:PARTITIONS ...]

Uses the mock-cluster C API of the librdkafka bundled in the confluent-kafka
wheel through ctypes (the Python package has no binding for it). Prints
`BOOTSTRAP host:port,...` once ready, then serves until SIGTERM or until its
parent test goes away (stdin closes). Commands on stdin, one per line, each
after an id of the caller's choosing that the answer repeats:
`down N` / `up N` take broker N down or bring it back (printing `OK down N`);
`errors API CODE COUNT` makes the next COUNT requests of API key API (on any
broker) fail with error CODE (librdkafka's request-error injection); `leader
TOPIC PARTITION N` moves a partition's leadership to broker N. Each prints
`OK ID COMMAND` (or `FAILED ID COMMAND REASON`).
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
lib.rd_kafka_mock_push_request_errors_array.argtypes = [vp, ctypes.c_int16, ctypes.c_size_t, ctypes.POINTER(ctypes.c_int)]
lib.rd_kafka_mock_partition_set_leader.restype = ctypes.c_int
lib.rd_kafka_mock_partition_set_leader.argtypes = [vp, cp, ctypes.c_int32, ctypes.c_int32]
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


def command(parts):
    """Runs one command; returns an error text, or None."""
    if len(parts) == 2 and parts[0] in ("down", "up"):
        fn = lib.rd_kafka_mock_broker_set_down if parts[0] == "down" else lib.rd_kafka_mock_broker_set_up
        fn(mc, int(parts[1]))
    elif len(parts) == 4 and parts[0] == "errors":
        api, code, count = (int(p) for p in parts[1:])
        codes = (ctypes.c_int * count)(*([code] * count))
        lib.rd_kafka_mock_push_request_errors_array(mc, api, count, codes)
    elif len(parts) == 4 and parts[0] == "leader":
        rc = lib.rd_kafka_mock_partition_set_leader(mc, parts[1].encode(), int(parts[2]), int(parts[3]))
        if rc != 0:
            return f"error {rc}"
    else:
        return "unknown command"
    return None


def commands():
    for line in sys.stdin:
        parts = line.split()
        if not parts:
            continue
        failed = command(parts[1:])
        print("FAILED" if failed else "OK", *parts, failed or "", flush=True)
    done.set()


threading.Thread(target=commands, daemon=True).start()
done.wait()
lib.rd_kafka_mock_cluster_destroy(mc)
lib.rd_kafka_destroy(rk)
