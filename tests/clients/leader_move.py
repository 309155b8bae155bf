"""A consumer that learns a moved leader from a Fetch response (KIP-951).

usage: leader_move.py BOOTSTRAP TOPIC [--ssl CA]

Produces 10 messages to partition 0 of TOPIC through BOOTSTRAP and reads
them with a consumer assigned that partition (no group); prints `READY`.
On the line `moved` on stdin (the test has moved the partition's leader),
produces 10 more and reads them. Prints a JSON report: `consumed`;
`updates`, librdkafka's log lines where it took a partition's new leader
from a Fetch or Produce response (KIP-951), each with whether a Metadata
response had arrived since the move before it; `brokers`, every
`host:port/id` the consumer's log names after the move. `--ssl CA`: TLS to
the proxy, every broker's name checked against its certificate.
"""
import json
import logging
import re
import sys
import time

import confluent_kafka as ck

bootstrap, topic = sys.argv[1], sys.argv[2]
common = {"bootstrap.servers": bootstrap}
if "--ssl" in sys.argv:
    ca = sys.argv[sys.argv.index("--ssl") + 1]
    common.update({"security.protocol": "ssl", "ssl.ca.location": ca, "ssl.endpoint.identification.algorithm": "https"})
producer = ck.Producer(common)
logs = []


class Keep(logging.Handler):
    def emit(self, record):
        logs.append(record.getMessage())


log = logging.getLogger("consumer")
log.addHandler(Keep())
log.setLevel(logging.DEBUG)
consumer = ck.Consumer(
    {
        **common,
        "group.id": "leader-move",
        "debug": "fetch,metadata,topic,protocol,broker",
        # Metadata only when asked: the new leader must come from elsewhere.
        "topic.metadata.refresh.interval.ms": 600000,
    },
    logger=log,
)
consumer.assign([ck.TopicPartition(topic, 0, 0)])
errors = []


def produce_and_read(prefix, want, consumed):
    for i in range(10):
        producer.produce(topic, b"%s%d" % (prefix, i), partition=0)
    producer.flush(30)
    deadline = time.time() + 30
    while consumed < want and time.time() < deadline:
        m = consumer.poll(0.2)
        if m is None:
            continue
        if m.error():
            errors.append(str(m.error()))
        else:
            consumed += 1
    return consumed


consumed = produce_and_read(b"before", 10, 0)
print("READY", consumed, flush=True)
sys.stdin.readline()
mark = len(logs)
consumed = produce_and_read(b"after", 20, consumed)
after = logs[mark:]
updates, metadata_seen = [], False
for line in after:
    if "Received MetadataResponse" in line:
        metadata_seen = True
    if "updated with leader" in line:
        updates.append({"line": line, "after_metadata": metadata_seen})
brokers = sorted({m.group(0) for line in after for m in re.finditer(r"[A-Za-z0-9.-]+:\d+/\d+", line)})
consumer.close()
print(json.dumps({"consumed": consumed, "updates": updates, "brokers": brokers, "errors": errors}), flush=True)
