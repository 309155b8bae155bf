"""Load for the data-plane benchmark (scripts/bench): one run, one JSON line.

usage:
  bench_load.py produce BOOTSTRAP TOPIC MEGABYTES ACKS   as fast as possible (1 KiB records by default)
  bench_load.py consume BOOTSTRAP TOPIC RECORDS          from the beginning of partition 0
  bench_load.py latency BOOTSTRAP TOPIC RATE SECONDS ACKS [--hold]
  any of them followed by --ssl CA: TLS to the bootstrap servers, trusting CA,
  --cert CERT KEY: with --ssl, presenting that client certificate (mTLS),
  --sasl MECHANISM USER PASSWORD: SASL over the transport (SASL_SSL with --ssl),
  and/or --size BYTES: records of BYTES (default 1024) instead of 1 KiB

produce: MEGABYTES MiB of records (MEGABYTES * 1 MiB / size of them); times
  the first produce() to the end of flush(); reports the acknowledged
  payload rate.
consume: times the first fetched batch to the last record; reports the rate of
  the records after the first batch (fetch.wait.max.ms=1, see below), and in
  "moved" the bytes of every record it took, the first batch's included (what
  a proxy's CPU over the whole run is divided by).
latency: one record every 1/RATE s (linger.ms=0, so each is its own
  request), after a 1 s warm-up; reports the produce-to-acknowledgement
  latency of every record. With --hold it prints READY after the warm-up and
  measures until stdin closes (at most SECONDS).
Every report has the client's own CPU seconds ("cpu"), to tell whether the
client was the bottleneck.
"""
import json
import resource
import sys
import threading
import time

from confluent_kafka import Consumer, Producer, TopicPartition

# The records' payload; --size changes it.
RECORD = b"x" * 1024


def cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


# Connection settings every client takes (TLS with --ssl CA).
TRANSPORT = {}


def report(**fields):
    print(json.dumps(fields), flush=True)


def produce(bootstrap, topic, megabytes, acks):
    count = int(megabytes) * 1024 * 1024 // len(RECORD)
    p = Producer({"bootstrap.servers": bootstrap, "acks": acks, "linger.ms": 5, "compression.type": "none",
                  **TRANSPORT})
    p.list_topics(topic, timeout=10)
    failed = []
    cb = lambda err, _msg: err is not None and failed.append(str(err))
    c0, t0 = cpu(), time.perf_counter()
    for i in range(count):
        while True:
            try:
                p.produce(topic, RECORD, on_delivery=cb)
                break
            except BufferError:
                p.poll(0.001)
        if i % 1000 == 0:
            p.poll(0)
    left = p.flush(120)
    seconds = time.perf_counter() - t0
    report(records=count, bytes=count * len(RECORD), seconds=seconds, cpu=cpu() - c0,
           mbps=count * len(RECORD) / seconds / 1e6, errors=failed[:5] + (["unflushed"] if left else []))


def consume(bootstrap, topic, records):
    total = int(records)
    # tansu holds every Fetch for fetch.wait.max.ms even when it has data (at
    # the default 500 ms it paces every path alike at ~20 MB/s): ask for 1 ms.
    # When its local queue passes queued.min.messages (100,000 records: 10 MB
    # of 100 B ones, which this loop takes slower than librdkafka fetches),
    # librdkafka stops fetching for fetch.queue.backoff.ms, 1 s by default: a
    # 100 B run then took 1-6 s by how many such pauses fell in it, whatever
    # the path (20-200 MB/s, bimodal). 1 ms makes it fetch on as the queue drains.
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"bench-{time.time()}",
                  "enable.auto.commit": False, "fetch.wait.max.ms": 1, "fetch.queue.backoff.ms": 1,
                  **TRANSPORT})
    c.assign([TopicPartition(topic, 0, 0)])
    # About 10 MB per call, at most 10,000 records (1 KiB: 10,000 as always):
    # the first call's records are not timed, so it must not take them all.
    per_call = min(10000, max(50, 10 * 1024 * 1024 // len(RECORD)))
    seen, counted, t0, c0, errors = 0, 0, None, None, []
    deadline = time.time() + 120
    while seen < total and time.time() < deadline:
        # consume() waits for all it asks for (or the timeout): never ask
        # for more than is left, or the last call waits out its timeout.
        batch = c.consume(min(per_call, total - seen), 1.0)
        for m in batch:
            if m.error():
                errors.append(str(m.error()))
        if not batch:
            continue
        if t0 is None:
            t0, c0 = time.perf_counter(), cpu()
        else:
            counted += len(batch)
        seen += len(batch)
    seconds = time.perf_counter() - t0
    c.close()
    report(records=counted, bytes=counted * len(RECORD), moved=seen * len(RECORD), seconds=seconds,
           cpu=cpu() - c0, mbps=counted * len(RECORD) / seconds / 1e6,
           errors=errors[:5] + ([] if seen >= total else ["short"]))


def latency(bootstrap, topic, rate, seconds, acks, hold):
    rate, seconds = float(rate), float(seconds)
    p = Producer({"bootstrap.servers": bootstrap, "acks": acks, "linger.ms": 0, **TRANSPORT})
    p.list_topics(topic, timeout=10)
    samples, errors, measuring, done = [], [], [False], threading.Event()

    def sent(t0):
        def cb(err, _msg):
            if err is not None:
                errors.append(str(err))
            elif measuring[0]:
                samples.append(time.perf_counter() - t0)
        return cb

    # Reports are served by a thread blocked in poll(), which wakes as soon as
    # one arrives; the main thread sleeps between records (no busy loop
    # competing with the proxy and the broker for the CPUs).
    def serve():
        while not done.is_set():
            p.poll(0.1)

    server = threading.Thread(target=serve, daemon=True)
    server.start()
    closed = threading.Event()
    start = time.perf_counter()
    warm_until, i, c0 = start + 1.0, 0, None
    end = warm_until + seconds
    while True:
        now = time.perf_counter()
        if not measuring[0] and now >= warm_until:
            measuring[0], c0 = True, cpu()
            if hold:
                threading.Thread(target=lambda: (sys.stdin.read(), closed.set()), daemon=True).start()
                print("READY", flush=True)
        if now >= end or closed.is_set():
            break
        p.produce(topic, RECORD, on_delivery=sent(time.perf_counter()))
        i += 1
        wait = start + i / rate - time.perf_counter()
        if wait > 0:
            time.sleep(wait)
    measured = time.perf_counter() - warm_until
    p.flush(30)
    done.set()
    server.join()
    samples.sort()
    pick = lambda q: samples[min(len(samples) - 1, int(q * len(samples)))] * 1e3 if samples else None
    report(records=len(samples), seconds=measured, cpu=cpu() - c0, p50_ms=pick(0.50), p99_ms=pick(0.99),
           max_ms=samples[-1] * 1e3 if samples else None, errors=errors[:5])


argv = sys.argv[2:]
if "--size" in argv:
    i = argv.index("--size")
    RECORD = b"x" * int(argv[i + 1])
    del argv[i:i + 2]
if "--ssl" in argv:
    i = argv.index("--ssl")
    TRANSPORT.update({"security.protocol": "ssl", "ssl.ca.location": argv[i + 1],
                      "ssl.endpoint.identification.algorithm": "none"})
    del argv[i:i + 2]
if "--cert" in argv:
    i = argv.index("--cert")
    TRANSPORT.update({"ssl.certificate.location": argv[i + 1], "ssl.key.location": argv[i + 2]})
    del argv[i:i + 3]
if "--sasl" in argv:
    i = argv.index("--sasl")
    secure = TRANSPORT.get("security.protocol") == "ssl"
    TRANSPORT.update({"security.protocol": "sasl_ssl" if secure else "sasl_plaintext",
                      "sasl.mechanism": argv[i + 1], "sasl.username": argv[i + 2],
                      "sasl.password": argv[i + 3]})
    del argv[i:i + 4]
mode, args = sys.argv[1], [a for a in argv if not a.startswith("--")]
if mode == "produce":
    produce(*args)
elif mode == "consume":
    consume(*args)
elif mode == "latency":
    latency(*args, hold="--hold" in sys.argv)
else:
    sys.exit(__doc__)
