"""A SASL client: lists topics (authenticating), then produces one message
to each topic; prints {"ok", "error", "delivered": {"TOPIC": {"ok", "error"}}}.

usage: sasl_client.py BOOTSTRAP MECHANISM USER PASSWORD TOPIC... [--library librdkafka|kafka-python]

With MECHANISM OAUTHBEARER, PASSWORD is the bearer token (USER unused).
With --ca CA_FILE, SASL goes over TLS, verifying the server against CA_FILE.
"""
import json
import os
import sys

from library import take_library

args = sys.argv[1:]
library = take_library(args)
ca = None
if "--ca" in args:
    i = args.index("--ca")
    ca = args[i + 1]
    del args[i : i + 2]
bootstrap, mechanism, user, password = args[:4]
topics = args[4:]
out = {"ok": False, "error": None, "delivered": {}}

if library == "kafka-python":
    from kafka import KafkaConsumer, KafkaProducer
    from kafka.errors import KafkaError

    conf = {
        "bootstrap_servers": bootstrap,
        "security_protocol": "SASL_SSL" if ca else "SASL_PLAINTEXT",
        "sasl_mechanism": mechanism,
        "request_timeout_ms": 10000,
    }
    if ca:
        conf.update(ssl_cafile=ca, ssl_check_hostname=False)
    if mechanism == "OAUTHBEARER":
        from kafka.net.sasl.oauth import AbstractTokenProvider

        class Fixed(AbstractTokenProvider):
            def token(self):
                return password

        conf["sasl_oauth_token_provider"] = Fixed()
    else:
        conf.update(sasl_plain_username=user, sasl_plain_password=password)
    # kafka-python logs an authentication failure and goes on trying until
    # its bootstrap times out: the first such line is the error.
    import logging

    class Seen(logging.Handler):
        def __init__(self):
            super().__init__()
            self.auth = []

        def emit(self, record):
            text = record.getMessage()
            if "uthentication" in text and "ailed" in text:
                self.auth.append(text)

    seen = Seen()
    logging.getLogger("kafka").addHandler(seen)
    logging.getLogger("kafka").setLevel(logging.INFO)
    import threading
    import time

    def connect():
        try:
            consumer = KafkaConsumer(**conf)
            consumer.topics()
            consumer.close()
            out["ok"] = True
        except Exception as e:  # kafka-python raises several kinds here
            out["error"] = f"{type(e).__name__}: {e}"

    attempt = threading.Thread(target=connect, daemon=True)
    attempt.start()
    # Done, or refused: no need to wait out kafka-python's own retries.
    deadline = time.monotonic() + 60
    while attempt.is_alive() and not seen.auth and time.monotonic() < deadline:
        attempt.join(0.1)
    if seen.auth:
        out["ok"], out["error"] = False, seen.auth[0]
        print(json.dumps(out), flush=True)
        os._exit(0)
    if out["ok"]:
        producer = KafkaProducer(retries=0, max_block_ms=20000, **conf)
        for topic in topics:
            try:
                producer.send(topic, b"sasl").get(timeout=30)
                out["delivered"][topic] = {"ok": True, "error": None}
            except KafkaError as e:
                out["delivered"][topic] = {"ok": False, "error": type(e).__name__}
        producer.close()
else:
    from confluent_kafka import KafkaException, Producer
    from confluent_kafka.admin import AdminClient

    conf = {
        "bootstrap.servers": bootstrap,
        "security.protocol": "sasl_ssl" if ca else "sasl_plaintext",
        "sasl.mechanism": mechanism,
        "socket.timeout.ms": 10000,
        "log_level": 0,
    }
    if ca:
        conf.update({"ssl.ca.location": ca, "ssl.endpoint.identification.algorithm": "none"})
    if mechanism == "OAUTHBEARER":
        import time

        # The token as the application got it; librdkafka asks for it again
        # when 80 % of its lifetime has passed.
        conf["oauth_cb"] = lambda _: (password, time.time() + 3600, user)
    else:
        conf.update({"sasl.username": user, "sasl.password": password})
    # librdkafka names an authentication failure in its error callback;
    # list_topics only says the metadata did not come.
    errors = []
    admin = AdminClient({**conf, "error_cb": lambda e: errors.append(e.str())})
    # Asked a second at a time: a refusal is reported by then, and waiting
    # out librdkafka's own retries would tell nothing more.
    for _ in range(10):
        try:
            admin.list_topics(timeout=1)
            out["ok"], out["error"] = True, None
            break
        except KafkaException as e:
            admin.poll(0.1)
            auth = [e for e in errors if "uthentication" in e]
            out["error"] = auth[0] if auth else str(e)
            if auth:
                break
    if out["ok"]:
        def report(err, msg):
            out["delivered"][msg.topic()] = {"ok": err is None, "error": err.name() if err else None}

        producer = Producer({**conf, "message.timeout.ms": 20000, "retries": 0})
        for topic in topics:
            producer.produce(topic, b"sasl", callback=report)
        producer.flush(30)

print(json.dumps(out))
