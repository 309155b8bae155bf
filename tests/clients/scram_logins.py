"""SASL/SCRAM-SHA-512 logins, one connection each, for SECONDS: raw Kafka
frames (SaslHandshake v1, SaslAuthenticate v1 twice) over TLS, each
connection closed once its login succeeded. Prints {"logins", "seconds",
"cpu"} (the client's own CPU seconds: PBKDF2 is the client's work).

usage: scram_logins.py HOST:PORT USER PASSWORD SECONDS [--ca CA_FILE]
"""
import base64
import hashlib
import hmac
import json
import os
import resource
import socket
import ssl
import struct
import sys
import time

args = sys.argv[1:]
ca = None
if "--ca" in args:
    i = args.index("--ca")
    ca = args[i + 1]
    del args[i : i + 2]
address, user, password, seconds = args[0], args[1], args[2].encode(), float(args[3])
host, port = address.rsplit(":", 1)
context = None
if ca:
    context = ssl.create_default_context(cafile=ca)
    context.check_hostname = False


def call(sock, api_key, version, corr, body):
    """Sends one request (header v1) and returns its response body."""
    header = struct.pack(">hhih", api_key, version, corr, 1) + b"c"
    frame = header + body
    sock.sendall(struct.pack(">i", len(frame)) + frame)
    size = struct.unpack(">i", read(sock, 4))[0]
    response = read(sock, size)
    return response[4:]  # after the correlation id


def read(sock, n):
    out = b""
    while len(out) < n:
        chunk = sock.recv(n - len(out))
        if not chunk:
            raise ConnectionError("closed")
        out += chunk
    return out


def authenticate(sock, corr, token):
    body = call(sock, 36, 1, corr, struct.pack(">i", len(token)) + token)
    code, length = struct.unpack(">hh", body[:4])
    at = 4 + max(length, 0)
    size = struct.unpack(">i", body[at : at + 4])[0]
    if code != 0:
        raise RuntimeError(f"SaslAuthenticate error {code}")
    return body[at + 4 : at + 4 + size]


def login():
    raw = socket.create_connection((host, int(port)))
    sock = context.wrap_socket(raw) if context else raw
    mechanism = b"SCRAM-SHA-512"
    body = call(sock, 17, 1, 1, struct.pack(">h", len(mechanism)) + mechanism)
    if struct.unpack(">h", body[:2])[0] != 0:
        raise RuntimeError("SaslHandshake refused")
    nonce = base64.b64encode(os.urandom(18)).decode()
    bare = f"n={user},r={nonce}"
    first = authenticate(sock, 2, b"n,," + bare.encode()).decode()
    fields = dict(part.split("=", 1) for part in first.split(","))
    salted = hashlib.pbkdf2_hmac("sha512", password, base64.b64decode(fields["s"]), int(fields["i"]))
    client_key = hmac.new(salted, b"Client Key", "sha512").digest()
    stored = hashlib.sha512(client_key).digest()
    final_bare = f"c=biws,r={fields['r']}"
    message = f"{bare},{first},{final_bare}".encode()
    signature = hmac.new(stored, message, "sha512").digest()
    proof = bytes(a ^ b for a, b in zip(client_key, signature))
    authenticate(sock, 3, f"{final_bare},p={base64.b64encode(proof).decode()}".encode())
    sock.close()


def cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


count, c0, t0 = 0, cpu(), time.perf_counter()
while time.perf_counter() - t0 < seconds:
    login()
    count += 1
print(json.dumps({"logins": count, "seconds": time.perf_counter() - t0, "cpu": cpu() - c0}))
