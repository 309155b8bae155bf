"""A consumer group's member, or its deleter, as a SASL/SCRAM user.

usage: groups.py BOOTSTRAP USER PASSWORD TOPIC GROUP join|delete [--library librdkafka|kafka-python]

join: subscribes to TOPIC in GROUP and waits for an assignment (the group
joined) or an error; prints {"joined", "error"}; leaves the group on exit.
delete: deletes GROUP; prints {"deleted", "error"}.
The error is the Kafka error's name (GROUP_AUTHORIZATION_FAILED, ...).
"""
import json
import sys
import time

from library import take_library

args = sys.argv[1:]
library = take_library(args)
bootstrap, user, password, topic, group, action = args[:6]
MECHANISM = "SCRAM-SHA-512"
out = {}


def rdkafka():
    from confluent_kafka import Consumer, KafkaException
    from confluent_kafka.admin import AdminClient

    conf = {
        "bootstrap.servers": bootstrap,
        "security.protocol": "sasl_plaintext",
        "sasl.mechanism": MECHANISM,
        "sasl.username": user,
        "sasl.password": password,
        "log_level": 0,
    }
    if action == "delete":
        admin = AdminClient(conf)
        future = admin.delete_consumer_groups([group], request_timeout=15)[group]
        try:
            future.result(timeout=20)
            out.update(deleted=True, error=None)
        except KafkaException as e:
            out.update(deleted=False, error=e.args[0].name())
        return
    assigned = []
    consumer = Consumer(
        {
            **conf,
            "group.id": group,
            "auto.offset.reset": "earliest",
            "session.timeout.ms": 6000,
        }
    )
    consumer.subscribe([topic], on_assign=lambda c, parts: assigned.append(len(parts)))
    out.update(joined=False, error=None)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not assigned:
        msg = consumer.poll(0.2)
        if msg is not None and msg.error() and not msg.error().name().startswith("_"):
            out["error"] = msg.error().name()
            break
    out["joined"] = bool(assigned)
    consumer.close()


def kafka_python():
    from kafka import KafkaAdminClient, KafkaConsumer
    from kafka.errors import KafkaError

    conf = {
        "bootstrap_servers": bootstrap,
        "security_protocol": "SASL_PLAINTEXT",
        "sasl_mechanism": MECHANISM,
        "sasl_plain_username": user,
        "sasl_plain_password": password,
        "request_timeout_ms": 15000,
    }
    if action == "delete":
        admin = KafkaAdminClient(**conf)
        try:
            results = admin.delete_groups([group])
            (_, error), = results.items() if isinstance(results, dict) else results
            ok = error is None or getattr(error, "errno", 0) == 0
            out.update(deleted=ok, error=None if ok else kafka_name(error))
        except KafkaError as e:
            out.update(deleted=False, error=kafka_name(e))
        admin.close()
        return
    consumer = KafkaConsumer(
        topic,
        group_id=group,
        auto_offset_reset="earliest",
        session_timeout_ms=6000,
        **conf,
    )
    out.update(joined=False, error=None)
    deadline = time.monotonic() + 30
    try:
        while time.monotonic() < deadline and not consumer.assignment():
            consumer.poll(timeout_ms=200)
        out["joined"] = bool(consumer.assignment())
    except KafkaError as e:
        out["error"] = kafka_name(e)
    consumer.close()


def kafka_name(error):
    """Kafka's name of a kafka-python error (class or instance)."""
    return getattr(error, "message", None) or type(error).__name__


if library == "kafka-python":
    kafka_python()
else:
    rdkafka()
print(json.dumps(out))
