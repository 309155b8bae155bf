"""Producers against a quota: one JSON line per run.

usage: quota_load.py BOOTSTRAP TOPIC SECONDS SETTLE CLIENT_ID:BYTES_PER_SECOND ...

Each CLIENT_ID:RATE is a producer (its own librdkafka client with that
client.id, acks=1) offering RATE bytes per second of 10 KiB records for
SECONDS: it offers a record every 10 KiB / RATE seconds, and when its local
queue is full (16 MiB: the client's own backpressure, not an error) it
waits. Reports, per client id: "rate" (bytes per second acknowledged from
SETTLE seconds to the end), "acked" (bytes in all), "errors" (delivery and
client errors, the first ten), "error_count", and "throttle_max_ms" (the
largest throttle time librdkafka's statistics saw from any broker).
"""
import json
import sys
import threading
import time

from confluent_kafka import Producer

RECORD = 10 * 1024

bootstrap, topic = sys.argv[1:3]
seconds, settle = float(sys.argv[3]), float(sys.argv[4])
clients = [(c.split(":")[0], float(c.split(":")[1])) for c in sys.argv[5:]]


def run(client_id, rate, out):
    errors, throttle = [], [0]
    acked = {"all": 0, "settled": 0}
    lock = threading.Lock()
    started = time.monotonic()

    def stats(text):
        for broker in json.loads(text).get("brokers", {}).values():
            throttle[0] = max(throttle[0], broker.get("throttle", {}).get("max", 0))

    def delivered(err, msg):
        if err is not None:
            errors.append(str(err))
            return
        with lock:
            acked["all"] += len(msg.value())
            if time.monotonic() - started >= settle:
                acked["settled"] += len(msg.value())

    producer = Producer({
        "bootstrap.servers": bootstrap,
        "client.id": client_id,
        "acks": 1,
        "linger.ms": 5,
        "queue.buffering.max.kbytes": 16 * 1024,
        "statistics.interval.ms": 500,
        "stats_cb": stats,
        "error_cb": lambda e: errors.append(str(e)),
    })
    value = b"q" * RECORD
    every = RECORD / rate
    next_at = started
    while time.monotonic() - started < seconds:
        now = time.monotonic()
        if now < next_at:
            producer.poll(min(next_at - now, 0.05))
            continue
        try:
            producer.produce(topic, value, on_delivery=delivered)
            next_at += every
        except BufferError:
            # The local queue is full: the quota holds the client back.
            producer.poll(0.05)
            next_at = time.monotonic()
    producer.poll(0)
    settled_for = time.monotonic() - started - settle
    # What was acknowledged by the end of the run counts; the rest drains.
    with lock:
        rate_seen = acked["settled"] / settled_for
    producer.flush(30)
    out[client_id] = {
        "rate": rate_seen,
        "acked": acked["all"],
        "errors": errors[:10],
        "error_count": len(errors),
        "throttle_max_ms": throttle[0],
    }


results = {}
threads = [threading.Thread(target=run, args=(c, r, results)) for c, r in clients]
for t in threads:
    t.start()
for t in threads:
    t.join()
print(json.dumps(results))
