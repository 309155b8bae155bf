"""Fills a topic, or reads it from the start like a consumer catching up.

usage: catch_up.py fill BOOTSTRAP TOPIC MB
       catch_up.py read BOOTSTRAP TOPIC MB

fill  produces MB mebibytes of 256 KiB messages to partition 0 (acks=all),
      then prints one JSON line {"acked", "bytes", "errors"}.
read  reads partition 0 from its start (no consumer group) with
      fetch.max.bytes and max.partition.fetch.bytes of 50 MiB until MB
      mebibytes have arrived, prints one JSON line {"bytes", "messages",
      "errors"}, then keeps its connections open, idle, until stdin closes.
"""
import json
import sys
import time

from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition

mode, bootstrap, topic, mb = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
wanted = mb * 1024 * 1024
errors = []

if mode == "fill":
    producer = Producer({
        "bootstrap.servers": bootstrap,
        "acks": "all",
        "linger.ms": 5,
        "message.max.bytes": 8 * 1024 * 1024,
        "error_cb": lambda e: errors.append(str(e)),
    })
    value = bytes(i % 251 for i in range(256 * 1024))
    acked = [0]

    def delivered(err, msg):
        if err is None:
            acked[0] += 1
        else:
            errors.append(str(err))

    for i in range(wanted // len(value)):
        producer.produce(topic, key=str(i), value=value, partition=0, on_delivery=delivered)
        producer.poll(0)
    producer.flush(60)
    print(json.dumps({"acked": acked[0], "bytes": acked[0] * len(value), "errors": errors[:10]}), flush=True)
    sys.exit(0)

fifty_mib = 50 * 1024 * 1024
consumer = Consumer({
    "bootstrap.servers": bootstrap,
    "group.id": "catch-up",
    "enable.auto.commit": False,
    "fetch.max.bytes": fifty_mib,
    "max.partition.fetch.bytes": fifty_mib,
    "receive.message.max.bytes": fifty_mib + 1024 * 1024,
    "error_cb": lambda e: errors.append(str(e)),
})
consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
got, messages = 0, 0
deadline = time.time() + 120
while got < wanted and time.time() < deadline:
    msg = consumer.poll(0.5)
    if msg is None:
        continue
    if msg.error():
        errors.append(str(msg.error()))
        continue
    got += len(msg.value() or b"")
    messages += 1
# Stop fetching ahead: the connections stay open and idle.
consumer.pause([TopicPartition(topic, 0)])
print(json.dumps({"bytes": got, "messages": messages, "errors": errors[:10]}), flush=True)
sys.stdin.read()
consumer.close()
