"""Tries to list topics through a TLS listener; prints {"ok", "error"}.

usage: tls_probe.py BOOTSTRAP CA [CERT KEY]
"""
import json
import sys

from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient

conf = {
    "bootstrap.servers": sys.argv[1],
    "security.protocol": "ssl",
    "ssl.ca.location": sys.argv[2],
    "ssl.endpoint.identification.algorithm": "none",
    "socket.timeout.ms": 5000,
    "log_level": 0,
}
if len(sys.argv) > 4:
    conf.update({"ssl.certificate.location": sys.argv[3], "ssl.key.location": sys.argv[4]})
try:
    md = AdminClient(conf).list_topics(timeout=8)
    print(json.dumps({"ok": True, "topics": sorted(md.topics)}))
except KafkaException as e:
    print(json.dumps({"ok": False, "error": str(e)}))
