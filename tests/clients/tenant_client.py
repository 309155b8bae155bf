"""A tenant's client: a round trip with a consumer group, or a transaction.

usage: tenant_client.py BOOTSTRAP TOPIC GROUP roundtrip COUNT [--library librdkafka|kafka-python]
       tenant_client.py BOOTSTRAP TOPIC GROUP transactions TXN_ID

roundtrip: produces COUNT keyed messages, consumes them with GROUP from the
start and commits; prints {"acked", "unique", "topics", "errors"} (topics:
every topic the client's metadata lists).
transactions (librdkafka): commits a transaction of 5 messages with
transactional id TXN_ID, aborts one of 5 more, then reads TOPIC with
read_committed isolation (up to 10 records: a broker that does not filter
aborted ones gives those too); prints {"committed", "keys", "errors"}.
"""
import json
import sys
import time

from library import take_library

args = sys.argv[1:]
library = take_library(args)
bootstrap, topic, group, action = args[:4]
errors = []


def polled(consumer, want, seconds):
    """The keys of up to `want` records a librdkafka consumer reads within
    `seconds` (errors noted)."""
    keys = []
    deadline = time.time() + seconds
    while len(set(keys)) < want and time.time() < deadline:
        msg = consumer.poll(0.5)
        if msg is None:
            continue
        if msg.error():
            errors.append(str(msg.error()))
            continue
        keys.append(msg.key().decode())
    return keys


def rdkafka_roundtrip(count):
    from confluent_kafka import Consumer, Producer

    producer = Producer({"bootstrap.servers": bootstrap})
    acked = set()
    for i in range(count):
        producer.produce(topic, key=str(i), value=f"v{i}",
                         on_delivery=lambda e, m: acked.add(m.key().decode()) if e is None else errors.append(str(e)))
    producer.flush(30)
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "auto.offset.reset": "earliest",
                         "enable.auto.commit": False, "session.timeout.ms": 10000})
    consumer.subscribe([topic])
    seen = set(polled(consumer, len(acked), 60))
    consumer.commit(asynchronous=False)
    topics = sorted(consumer.list_topics(timeout=10).topics)
    consumer.close()
    return {"acked": len(acked), "unique": len(seen), "topics": topics}


def kafka_python_roundtrip(count):
    from kafka import KafkaConsumer, KafkaProducer

    producer = KafkaProducer(bootstrap_servers=bootstrap, request_timeout_ms=15000)
    futures = [producer.send(topic, key=str(i).encode(), value=f"v{i}".encode()) for i in range(count)]
    acked = 0
    for f in futures:
        try:
            f.get(timeout=30)
            acked += 1
        except Exception as e:  # noqa: BLE001 - reported, not raised
            errors.append(repr(e))
    producer.close()
    consumer = KafkaConsumer(topic, bootstrap_servers=bootstrap, group_id=group, auto_offset_reset="earliest",
                             enable_auto_commit=False, session_timeout_ms=10000, consumer_timeout_ms=20000)
    seen = set()
    for msg in consumer:
        seen.add(msg.key.decode())
        if len(seen) >= acked:
            break
    consumer.commit()
    topics = sorted(consumer.topics())
    consumer.close()
    return {"acked": acked, "unique": len(seen), "topics": topics}


def transactions(txn_id):
    from confluent_kafka import Consumer, Producer

    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": txn_id,
                         "transaction.timeout.ms": 30000})
    producer.init_transactions(30)
    for outcome in ("commit", "abort"):
        producer.begin_transaction()
        for i in range(5):
            producer.produce(topic, key=f"{outcome}-{i}", value=b"v")
        producer.flush(30)
        if outcome == "commit":
            producer.commit_transaction(30)
        else:
            producer.abort_transaction(30)
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "auto.offset.reset": "earliest",
                         "isolation.level": "read_committed", "session.timeout.ms": 10000})
    consumer.subscribe([topic])
    keys = polled(consumer, 10, 30)
    # A little longer: an aborted record read now would be a failure.
    end = time.time() + 2
    while time.time() < end:
        msg = consumer.poll(0.2)
        if msg is not None and not msg.error():
            keys.append(msg.key().decode())
    consumer.close()
    return {"committed": len(keys), "keys": sorted(keys)}


try:
    if action == "roundtrip":
        run = {"librdkafka": rdkafka_roundtrip, "kafka-python": kafka_python_roundtrip}[library]
        out = run(int(args[4]))
    elif action == "transactions":
        out = transactions(args[4])
    else:
        sys.exit(f"unknown action {action}")
except Exception as e:  # noqa: BLE001 - reported as an error
    out = {}
    errors.append(repr(e))
out["errors"] = errors[:10]
print(json.dumps(out), flush=True)
