"""Admin operations through the proxy; prints one JSON line per operation.

usage: admin.py BOOTSTRAP OPERATION ARGS... [--ssl CA CERT KEY]
       admin.py BOOTSTRAP delete-topic TOPIC
       admin.py BOOTSTRAP create-topic TOPIC PARTITIONS
       admin.py BOOTSTRAP list-topics
       admin.py BOOTSTRAP list-groups
"""
import json
import sys

from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient, NewTopic

args = sys.argv[1:]
conf = {"bootstrap.servers": args[0], "socket.timeout.ms": 10000}
if "--ssl" in args:
    i = args.index("--ssl")
    ca, cert, key = args[i + 1 : i + 4]
    del args[i : i + 4]
    conf.update({"security.protocol": "ssl", "ssl.ca.location": ca, "ssl.endpoint.identification.algorithm": "none"})
    if cert != "-":
        conf.update({"ssl.certificate.location": cert, "ssl.key.location": key})
op = args[1]
sys.argv = [sys.argv[0]] + args
admin = AdminClient(conf)


def outcome(futures):
    out = {}
    for name, future in futures.items():
        try:
            future.result(timeout=30)
            out[name] = {"ok": True}
        except KafkaException as e:
            err = e.args[0]
            out[name] = {"ok": False, "code": err.code(), "name": err.name(), "message": err.str()}
    return out


if op == "delete-topic":
    print(json.dumps(outcome(admin.delete_topics([sys.argv[3]], operation_timeout=10))))
elif op == "create-topic":
    print(json.dumps(outcome(admin.create_topics([NewTopic(sys.argv[3], int(sys.argv[4]), 1)]))))
elif op == "list-topics":
    md = admin.list_topics(timeout=10)
    print(json.dumps({"topics": sorted(md.topics), "brokers": sorted([b.id, b.host, b.port] for b in md.brokers.values())}))
elif op == "list-groups":
    listed = admin.list_consumer_groups(request_timeout=10).result(timeout=30)
    print(json.dumps({"groups": sorted(g.group_id for g in listed.valid)}))
else:
    sys.exit(f"unknown operation {op}")
