"""Reads roundtrip.py's JSON report on stdin and prints it for people;
exits 1 unless every acknowledged message was consumed without error."""
import json
import sys

report = json.load(sys.stdin)
acked, unique, errors = report["acked"], report["unique"], report["errors"]
print("    produced {}, consumed {} with a consumer group, errors: {}".format(acked, unique, len(errors)))
brokers = ", ".join("{} at {}:{}".format(*b) for b in report["brokers"])
print("    brokers the client was told about: " + brokers)
sys.exit(0 if acked == unique and not errors else 1)
