"""Produces one message to each topic through a TLS listener with a client
certificate and a chosen client id; prints {"TOPIC": {"ok", "error"}}.

usage: tls_produce.py BOOTSTRAP CA CERT KEY CLIENT_ID TOPIC... [--library librdkafka|kafka-python]
"""
import json
import sys

from library import take_library

args = sys.argv[1:]
library = take_library(args)
bootstrap, ca, cert, key, client_id = args[:5]
topics = args[5:]
delivered = {}

if library == "kafka-python":
    from kafka import KafkaProducer
    from kafka.errors import KafkaError

    producer = KafkaProducer(
        bootstrap_servers=bootstrap,
        client_id=client_id,
        security_protocol="SSL",
        ssl_cafile=ca,
        ssl_certfile=cert,
        ssl_keyfile=key,
        ssl_check_hostname=False,
        retries=0,
        max_block_ms=20000,
        request_timeout_ms=10000,
    )
    for topic in topics:
        try:
            producer.send(topic, b"identity").get(timeout=30)
            delivered[topic] = {"ok": True, "error": None}
        except KafkaError as e:
            delivered[topic] = {"ok": False, "error": type(e).__name__}
    producer.close()
else:
    from confluent_kafka import Producer

    def report(err, msg):
        delivered[msg.topic()] = {"ok": err is None, "error": err.name() if err else None}

    producer = Producer({
        "bootstrap.servers": bootstrap,
        "client.id": client_id,
        "security.protocol": "ssl",
        "ssl.ca.location": ca,
        "ssl.certificate.location": cert,
        "ssl.key.location": key,
        "ssl.endpoint.identification.algorithm": "none",
        "message.timeout.ms": 20000,
        "retries": 0,
        "log_level": 0,
    })
    for topic in topics:
        producer.produce(topic, b"identity", callback=report)
    producer.flush(30)

print(json.dumps(delivered))
