"""Tries to list topics through a TLS listener; prints {"ok", "error"}.

usage: tls_probe.py BOOTSTRAP CA [CERT KEY] [--library librdkafka|kafka-python]
"""
import json
import sys

from library import take_library

args = sys.argv[1:]
library = take_library(args)
bootstrap, ca = args[0], args[1]
cert, key = (args[2], args[3]) if len(args) > 3 else (None, None)

if library == "kafka-python":
    from kafka import KafkaConsumer

    conf = {
        "bootstrap_servers": bootstrap,
        "security_protocol": "SSL",
        "ssl_cafile": ca,
        "ssl_check_hostname": False,
        "request_timeout_ms": 8000,
    }
    if cert:
        conf.update({"ssl_certfile": cert, "ssl_keyfile": key})
    try:
        consumer = KafkaConsumer(**conf)
        topics = consumer.topics()
        consumer.close()
        print(json.dumps({"ok": True, "topics": sorted(topics)}))
    except Exception as e:  # kafka-python raises several kinds here
        print(json.dumps({"ok": False, "error": f"{type(e).__name__}: {e}"}))
    sys.exit(0)

from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient

conf = {
    "bootstrap.servers": bootstrap,
    "security.protocol": "ssl",
    "ssl.ca.location": ca,
    "ssl.endpoint.identification.algorithm": "none",
    "socket.timeout.ms": 5000,
    "log_level": 0,
}
if cert:
    conf.update({"ssl.certificate.location": cert, "ssl.key.location": key})
try:
    md = AdminClient(conf).list_topics(timeout=8)
    print(json.dumps({"ok": True, "topics": sorted(md.topics)}))
except KafkaException as e:
    print(json.dumps({"ok": False, "error": str(e)}))
