"""Produce N keyed messages, consume them with a consumer group, report JSON.

usage: roundtrip.py BOOTSTRAP TOPIC COUNT GROUP [--old] [--hold] [--ssl CA CERT KEY] [--verify-names] [--idempotent]
                    [--sasl MECHANISM USERNAME PASSWORD]

--old      speak old, non-flexible protocol versions (no ApiVersions request)
--hold     after reporting, keep the connections open until stdin closes
--ssl      TLS to the proxy: CA file, then client cert and key ('-' for none)
--verify-names  with --ssl: check every broker's name against its certificate
--sasl     authenticate with SASL (SASL_PLAINTEXT, or SASL_SSL with --ssl)
Output: one JSON line {"acked", "consumed", "unique", "missing", "errors", "brokers", "topics"}.
"""
import json
import sys
import time

from confluent_kafka import Consumer, KafkaException, Producer

args = sys.argv[1:]
bootstrap, topic, count, group = args[0], args[1], int(args[2]), args[3]
conf = {"bootstrap.servers": bootstrap, "socket.timeout.ms": 10000}
if "--old" in args:
    conf.update({"api.version.request": False, "broker.version.fallback": "0.10.2.1", "log_level": 3})
if "--ssl" in args:
    i = args.index("--ssl")
    ca, cert, key = args[i + 1 : i + 4]
    verify = "https" if "--verify-names" in args else "none"
    conf.update({"security.protocol": "ssl", "ssl.ca.location": ca, "ssl.endpoint.identification.algorithm": verify})
    if cert != "-":
        conf.update({"ssl.certificate.location": cert, "ssl.key.location": key})
if "--sasl" in args:
    i = args.index("--sasl")
    mechanism, username, password = args[i + 1 : i + 4]
    protocol = "sasl_ssl" if "--ssl" in args else "sasl_plaintext"
    conf.update({"security.protocol": protocol, "sasl.mechanism": mechanism,
                 "sasl.username": username, "sasl.password": password})
errors = []
pconf = dict(conf, **({"enable.idempotence": True, "acks": "all"} if "--idempotent" in args else {}))
producer = Producer(pconf)
acked = set()


def delivered(err, msg):
    if err is None:
        acked.add(msg.key().decode())
    else:
        errors.append(str(err))


for i in range(count):
    producer.produce(topic, key=str(i), value=f"value-{i}", on_delivery=delivered)
    producer.poll(0)
producer.flush(30)

# tansu answers a JoinGroup after half the session timeout: 22.5 s at
# librdkafka's default of 45 s, 5 s at 10 s.
consumer = Consumer(dict(conf, **{"group.id": group, "auto.offset.reset": "earliest", "enable.auto.commit": False,
                                  "session.timeout.ms": 10000}))
consumer.subscribe([topic])
seen = []
deadline = time.time() + 60
while len(set(seen)) < len(acked) and time.time() < deadline:
    msg = consumer.poll(0.5)
    if msg is None:
        continue
    if msg.error():
        errors.append(str(msg.error()))
        continue
    seen.append(msg.key().decode())
try:
    consumer.commit(asynchronous=False)
except KafkaException as e:
    errors.append(str(e))
metadata = consumer.list_topics(timeout=10)
report = {
    "acked": len(acked),
    "consumed": len(seen),
    "unique": len(set(seen)),
    "missing": sorted(acked - set(seen), key=int)[:10],
    "errors": errors[:10],
    "brokers": sorted([b.id, b.host, b.port] for b in metadata.brokers.values()),
    "topics": sorted(metadata.topics),
}
print(json.dumps(report), flush=True)
if "--hold" in args:
    sys.stdin.read()
consumer.close()
