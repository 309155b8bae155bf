"""One cell of the compatibility matrix: with one client library, produce
COUNT small keyed messages and one large one, consume them all with a
consumer group, commit, and read the committed offsets back.

usage: matrix.py CLIENT BOOTSTRAP TOPIC GROUP COUNT LARGE_BYTES
       matrix.py committed BOOTSTRAP TOPIC GROUP

CLIENT: librdkafka (confluent-kafka), kafka-python, or aiokafka.
Output: one JSON line {"client", "acked", "consumed", "unique", "large",
"committed", "errors"}; "large" is whether the large message came back whole,
"committed" the sum of the committed offsets over the topic's partitions.
`committed` prints only {"committed"}, read with librdkafka (for kcat, which
cannot read a group's offsets itself).
"""
import asyncio
import json
import sys
import time

client, bootstrap, topic, group = sys.argv[1:5]
count, large = (int(sys.argv[5]), int(sys.argv[6])) if len(sys.argv) > 6 else (0, 0)
big = bytes(i % 251 for i in range(large))
DEADLINE = 60


def messages():
    """The keys and values to send: COUNT small ones, then the large one."""
    return [(str(i).encode(), f"value-{i}".encode()) for i in range(count)] + [(b"large", big)]


def tally(errors):
    """An empty report to fill."""
    return {"client": client, "acked": 0, "consumed": 0, "unique": 0, "large": False,
            "committed": 0, "errors": errors}


def librdkafka():
    from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition

    errors, acked, seen = [], [], {}
    conf = {"bootstrap.servers": bootstrap, "socket.timeout.ms": 10000}
    producer = Producer(dict(conf, **{"message.max.bytes": large + 4096}))

    def delivered(err, msg):
        (errors.append(str(err)) if err else acked.append(msg.key()))

    for key, value in messages():
        producer.produce(topic, key=key, value=value, on_delivery=delivered)
        producer.poll(0)
    producer.flush(30)
    consumer = Consumer(dict(conf, **{"group.id": group, "auto.offset.reset": "earliest",
                                      "enable.auto.commit": False, "session.timeout.ms": 10000,
                                      "fetch.max.bytes": large * 2 + 4096}))
    consumer.subscribe([topic])
    deadline = time.time() + DEADLINE
    while len(seen) < len(acked) and time.time() < deadline:
        msg = consumer.poll(0.5)
        if msg is None:
            continue
        if msg.error():
            errors.append(str(msg.error()))
            continue
        seen[msg.key()] = msg.value()
    committed = 0
    try:
        consumer.commit(asynchronous=False)
        parts = consumer.list_topics(topic, timeout=10).topics[topic].partitions
        tps = consumer.committed([TopicPartition(topic, p) for p in parts], timeout=10)
        committed = sum(max(tp.offset, 0) for tp in tps)
    except KafkaException as e:
        errors.append(str(e))
    consumer.close()
    return acked, seen, committed, errors


def kafka_python():
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition

    errors, acked, seen = [], [], {}
    producer = KafkaProducer(bootstrap_servers=bootstrap, max_request_size=large + 4096,
                             request_timeout_ms=10000)
    futures = [(key, producer.send(topic, key=key, value=value)) for key, value in messages()]
    producer.flush(30)
    for key, future in futures:
        try:
            future.get(timeout=10)
            acked.append(key)
        except Exception as e:  # the library's errors have no common base worth naming
            errors.append(repr(e))
    producer.close()
    consumer = KafkaConsumer(topic, bootstrap_servers=bootstrap, group_id=group,
                             auto_offset_reset="earliest", enable_auto_commit=False,
                             session_timeout_ms=10000, fetch_max_bytes=large * 2 + 4096,
                             max_partition_fetch_bytes=large * 2 + 4096)
    deadline = time.time() + DEADLINE
    while len(seen) < len(acked) and time.time() < deadline:
        for records in consumer.poll(timeout_ms=500).values():
            for r in records:
                seen[r.key] = r.value
    committed = 0
    try:
        consumer.commit()
        parts = consumer.partitions_for_topic(topic) or set()
        committed = sum(consumer.committed(TopicPartition(topic, p)) or 0 for p in parts)
    except Exception as e:
        errors.append(repr(e))
    consumer.close()
    return acked, seen, committed, errors


async def aiokafka_cell():
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
    from aiokafka.structs import TopicPartition

    errors, acked, seen = [], [], {}
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, max_request_size=large + 4096,
                                request_timeout_ms=10000)
    await producer.start()
    try:
        for key, value in messages():
            try:
                await producer.send_and_wait(topic, key=key, value=value)
                acked.append(key)
            except Exception as e:
                errors.append(repr(e))
    finally:
        await producer.stop()
    consumer = AIOKafkaConsumer(topic, bootstrap_servers=bootstrap, group_id=group,
                                auto_offset_reset="earliest", enable_auto_commit=False,
                                session_timeout_ms=10000, fetch_max_bytes=large * 2 + 4096,
                                max_partition_fetch_bytes=large * 2 + 4096)
    await consumer.start()
    committed = 0
    try:
        deadline = time.time() + DEADLINE
        while len(seen) < len(acked) and time.time() < deadline:
            for records in (await consumer.getmany(timeout_ms=500)).values():
                for r in records:
                    seen[r.key] = r.value
        await consumer.commit()
        parts = consumer.partitions_for_topic(topic) or set()
        for p in parts:
            committed += (await consumer.committed(TopicPartition(topic, p))) or 0
    except Exception as e:
        errors.append(repr(e))
    finally:
        await consumer.stop()
    return acked, seen, committed, errors


def committed_only():
    """The group's committed offsets, read with librdkafka (for a client
    that cannot read them itself: kcat)."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    parts = consumer.list_topics(topic, timeout=10).topics[topic].partitions
    tps = consumer.committed([TopicPartition(topic, p) for p in parts], timeout=10)
    consumer.close()
    return sum(max(tp.offset, 0) for tp in tps)


def main():
    if client == "committed":
        print(json.dumps({"committed": committed_only()}), flush=True)
        return
    try:
        if client == "librdkafka":
            acked, seen, committed, errors = librdkafka()
        elif client == "kafka-python":
            acked, seen, committed, errors = kafka_python()
        elif client == "aiokafka":
            acked, seen, committed, errors = asyncio.run(aiokafka_cell())
        else:
            raise SystemExit(f"unknown client {client}")
    except Exception as e:  # a client that cannot even start is a result too
        print(json.dumps(tally([repr(e)])), flush=True)
        return
    report = tally(errors[:5])
    report.update({"acked": len(acked), "consumed": len(seen), "unique": len(seen),
                   "large": seen.get(b"large") == big, "committed": committed})
    print(json.dumps(report), flush=True)


main()
