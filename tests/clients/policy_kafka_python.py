"""policy.py with kafka-python (a second client library); prints one JSON line.

usage: policy_kafka_python.py BOOTSTRAP ALLOWED DENIED

Sends one message to each topic, lists every topic, and subscribes a
consumer group to DENIED: the per-topic send results, the topics listed
and the consumer's first error.
"""
import json
import sys
import time

from kafka import KafkaConsumer, KafkaProducer
from kafka.errors import KafkaError

bootstrap, allowed, denied = sys.argv[1:4]

producer = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=200, retries=0, max_block_ms=20000)
delivered = {}
for topic in (allowed, denied):
    try:
        producer.send(topic, b"policy").get(timeout=30)
        delivered[topic] = {"ok": True, "name": None}
    except KafkaError as e:
        delivered[topic] = {"ok": False, "name": type(e).__name__}
producer.close()

consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id="policy-e2e-kp",
                         auto_offset_reset="earliest", consumer_timeout_ms=1000)
listed = sorted(consumer.topics())
consumer_error = None
try:
    consumer.subscribe([denied])
    deadline = time.monotonic() + 30
    while consumer_error is None and time.monotonic() < deadline:
        for _ in consumer.poll(timeout_ms=1000).values():
            consumer_error = "read a record of the denied topic"
except KafkaError as e:
    consumer_error = type(e).__name__
consumer.close()

print(json.dumps({"delivered": delivered, "listed": listed, "consumer_error": consumer_error}))
