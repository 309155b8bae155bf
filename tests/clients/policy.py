"""A client of a virtual cluster with a topic policy; prints one JSON line.

usage: policy.py BOOTSTRAP ALLOWED DENIED

Produces one message to each topic in one batch (linger), lists every
topic, subscribes a consumer group to DENIED, then another to ALLOWED: the
per-topic delivery results, the topics listed, the first consumer's first
error and whether the second read the message (librdkafka fetches by topic
id, Fetch v13 on, where the broker supports it).
"""
import json
import sys
import time

from confluent_kafka import Consumer, KafkaError, Producer

bootstrap, allowed, denied = sys.argv[1:4]
base = {"bootstrap.servers": bootstrap, "socket.timeout.ms": 10000}

delivered = {}


def report(err, msg):
    delivered[msg.topic()] = {"ok": err is None, "name": err.name() if err else None}


producer = Producer({**base, "linger.ms": 200, "message.timeout.ms": 20000, "retries": 0})
for topic in (allowed, denied):
    producer.produce(topic, b"policy", callback=report)
producer.flush(30)

listed = sorted(producer.list_topics(timeout=10).topics)

consumer = Consumer({**base, "group.id": "policy-e2e", "auto.offset.reset": "earliest",
                     "enable.partition.eof": False})
consumer.subscribe([denied])
consumer_error = None
deadline = time.monotonic() + 30
while consumer_error is None and time.monotonic() < deadline:
    msg = consumer.poll(1.0)
    if msg is None:
        continue
    if msg.error():
        consumer_error = msg.error().name()
    else:
        consumer_error = "read a record of the denied topic"
consumer.close()

reader = Consumer({**base, "group.id": "policy-e2e-ok", "auto.offset.reset": "earliest",
                   "enable.partition.eof": False})
reader.subscribe([allowed])
allowed_read, allowed_error = False, None
deadline = time.monotonic() + 30
while not allowed_read and time.monotonic() < deadline:
    msg = reader.poll(1.0)
    if msg is None:
        continue
    if msg.error():
        allowed_error = msg.error().name()
    else:
        allowed_read = True
reader.close()

print(json.dumps({"delivered": delivered, "listed": listed, "consumer_error": consumer_error,
                  "allowed_read": allowed_read, "allowed_error": allowed_error}))
