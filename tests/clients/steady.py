"""Produces and consumes continuously until stdin closes, then reports JSON.

usage: steady.py BOOTSTRAP TOPIC GROUP [--idempotent] [--ca CA_FILE] [--verify BROKER] [--progress]
                 [--sasl MECHANISM USER PASSWORD] [--cert CERT_FILE KEY_FILE]

With --progress, it prints "PROGRESS <acked> <error_count>" every 200 ms once
started, so that a test sees the client producing again after an outage.

With --ca, both clients speak TLS and verify the server against CA_FILE.
With --sasl, both authenticate with SASL (over TLS with --ca).
With --cert (and --ca), both present that client certificate (mTLS).

Prints "STARTED" once the first message has made the round trip, then keeps
producing (one message every 2 ms, acks=all) and consuming with a consumer
group. When stdin closes it flushes, reads until every acknowledged message is
seen (at most 30 s) and prints one JSON line:
{"acked", "consumed", "lost", "duplicates", "errors" (the first ten),
"error_count", "disconnects", "skipped_by_group", "missing_from_log"}.
"disconnects" counts librdkafka's own reports of a broken or refused connection.
When acknowledged messages were never consumed ("lost"), a fresh reader with no
group reads the whole topic, from BROKER when --verify names one (the broker
itself, not the proxy), else through BOOTSTRAP: "missing_from_log" counts those
it does not find either (the broker did not keep them), "skipped_by_group"
those it finds (the log has them, the group never got them).
"""
import json
import logging
import sys
import threading
import time

from confluent_kafka import Consumer, Producer, TopicPartition, OFFSET_BEGINNING

bootstrap, topic, group = sys.argv[1:4]
idempotent = "--idempotent" in sys.argv
progress = "--progress" in sys.argv
ca = sys.argv[sys.argv.index("--ca") + 1] if "--ca" in sys.argv else None
verify = sys.argv[sys.argv.index("--verify") + 1] if "--verify" in sys.argv else bootstrap
sasl = sys.argv[sys.argv.index("--sasl") + 1:sys.argv.index("--sasl") + 4] if "--sasl" in sys.argv else None
cert = sys.argv[sys.argv.index("--cert") + 1:sys.argv.index("--cert") + 3] if "--cert" in sys.argv else None


class Counter(logging.Handler):
    def __init__(self):
        super().__init__()
        self.disconnects = []

    def emit(self, record):
        text = record.getMessage()
        if "Disconnected" in text or "Connection refused" in text or "Connect to" in text:
            self.disconnects.append(text[:200])


counter = Counter()
log = logging.getLogger("rdkafka")
log.addHandler(counter)
log.setLevel(logging.DEBUG)
errors = []
common = {"bootstrap.servers": bootstrap, "logger": log, "error_cb": lambda e: errors.append(str(e))}
if ca:
    common.update({"security.protocol": "SSL", "ssl.ca.location": ca})
if cert:
    common.update({"ssl.certificate.location": cert[0], "ssl.key.location": cert[1]})
if sasl:
    common.update({"security.protocol": "SASL_SSL" if ca else "SASL_PLAINTEXT", "sasl.mechanism": sasl[0],
                   "sasl.username": sasl[1], "sasl.password": sasl[2]})
producer = Producer(dict(common, **{"acks": "all", "linger.ms": 1, "enable.idempotence": idempotent}))
# tansu answers a JoinGroup after half the session timeout: 22.5 s at
# librdkafka's default of 45 s, 5 s at 10 s.
consumer = Consumer(dict(common, **{"group.id": group, "auto.offset.reset": "earliest", "enable.auto.commit": True,
                                    "session.timeout.ms": 10000}))
consumer.subscribe([topic])
acked, seen, dupes = set(), set(), [0]
lock = threading.Lock()
stop = threading.Event()
started = threading.Event()


def delivered(err, msg):
    if err is None:
        with lock:
            acked.add(msg.key().decode())
    else:
        errors.append(str(err))


def consume():
    while not stop.is_set():
        msg = consumer.poll(0.2)
        if msg is None:
            continue
        if msg.error():
            errors.append(str(msg.error()))
            continue
        key = msg.key().decode()
        with lock:
            if key in seen:
                dupes[0] += 1
            seen.add(key)
        started.set()


reader = threading.Thread(target=consume, daemon=True)
reader.start()
printing = threading.Lock()


def say(line):
    with printing:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()


def report_progress():
    while not stop.is_set():
        if started.is_set():
            with lock:
                n = len(acked)
            say(f"PROGRESS {n} {len(errors)}")
        time.sleep(0.2)


if progress:
    threading.Thread(target=report_progress, daemon=True).start()
closed = threading.Event()
threading.Thread(target=lambda: (sys.stdin.read(), closed.set()), daemon=True).start()
i = 0
announced = False
while not closed.is_set():
    producer.produce(topic, key=str(i), value=f"v{i}", on_delivery=delivered)
    i += 1
    producer.poll(0.002)
    if started.is_set() and not announced:
        say("STARTED")
        announced = True
producer.flush(30)
deadline = time.time() + 30
while time.time() < deadline:
    with lock:
        if acked <= seen:
            break
    time.sleep(0.05)
stop.set()
reader.join()
consumer.close()
with lock:
    lost = sorted(acked - seen, key=int)


def in_the_log(keys):
    """Which of `keys` a fresh reader (no group, every partition from the
    start to its high watermark) finds in the topic."""
    settings = dict(common, **{"bootstrap.servers": verify, "group.id": group + "-verify", "enable.auto.commit": False})
    if verify != bootstrap:
        settings.pop("security.protocol", None)
        settings.pop("ssl.ca.location", None)
    reader = Consumer(settings)
    partitions = reader.list_topics(topic, timeout=10).topics[topic].partitions
    ends = {p: reader.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1] for p in partitions}
    reader.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in partitions])
    found, done, until = set(), set(p for p, end in ends.items() if end == 0), time.time() + 30
    while len(done) < len(ends) and time.time() < until:
        msg = reader.poll(0.2)
        if msg is None or msg.error():
            continue
        if msg.key().decode() in keys:
            found.add(msg.key().decode())
        if msg.offset() + 1 >= ends[msg.partition()]:
            done.add(msg.partition())
    reader.close()
    return found


# An acknowledged message the group never saw: is it in the log at all
# (lost), or did the group's consumer skip it?
found = in_the_log(set(lost)) if lost else set()
skipped = sorted(found, key=int)
missing = [k for k in lost if k not in found]
say(json.dumps({
    "acked": len(acked),
    "consumed": len(seen),
    "lost": len(lost),
    "lost_sample": lost[:10],
    "skipped_by_group": len(skipped),
    "skipped_sample": skipped[:10],
    "missing_from_log": len(missing),
    "duplicates": dupes[0],
    "errors": errors[:10],
    "error_count": len(errors),
    "disconnects": len(counter.disconnects),
    "disconnect_sample": counter.disconnects[:5],
}))
