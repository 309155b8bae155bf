"""Authenticate twice on one connection (KIP-368 re-authentication), raw.

usage: reauth.py ADDRESS USERNAME PASSWORD [--idle SECONDS]

On one plain connection: ApiVersions v0, SaslHandshake v1 + SaslAuthenticate
v1 with SCRAM-SHA-512 (RFC 5802, written here with the standard library so
the test does not lean on the proxy's own client), Metadata v1 for no topic,
then SaslHandshake + SaslAuthenticate again. librdkafka decides by itself
when to re-authenticate; this script does it on demand.
With --idle, it then waits SECONDS and sends Metadata once more (a session
that ended meanwhile closes the connection).
Output: one JSON line {"steps": [[name, error code or broker count], ...]},
ending with ["closed", 0] if the peer hung up.
"""
import base64
import hashlib
import hmac
import json
import os
import socket
import struct
import sys
import time

address, username, password = sys.argv[1:4]
idle = float(sys.argv[sys.argv.index("--idle") + 1]) if "--idle" in sys.argv else None
host, port = address.rsplit(":", 1)
sock = socket.create_connection((host, int(port)), timeout=10)
correlation = 0


def string(s):
    b = s.encode()
    return struct.pack(">h", len(b)) + b


def call(api, version, body):
    global correlation
    correlation += 1
    header = struct.pack(">hhi", api, version, correlation) + string("reauth-test")
    frame = header + body
    sock.sendall(struct.pack(">i", len(frame)) + frame)
    size = recv_exact(4)
    if size is None:
        return None
    data = recv_exact(struct.unpack(">i", size)[0])
    if data is None or struct.unpack(">i", data[:4])[0] != correlation:
        return None
    return data[4:]


def recv_exact(n):
    out = b""
    while len(out) < n:
        chunk = sock.recv(n - len(out))
        if not chunk:
            return None
        out += chunk
    return out


def authenticate(data):
    """One SaslAuthenticate v1: (error code, server bytes) or None if closed."""
    r = call(36, 1, struct.pack(">i", len(data)) + data)
    if r is None:
        return None
    code, msg_len = struct.unpack(">hh", r[:4])
    rest = r[4 + max(msg_len, 0):]
    n = struct.unpack(">i", rest[:4])[0]
    return code, rest[4:4 + max(n, 0)]


def attribute(message, name):
    for part in message.split(","):
        if part.startswith(name + "="):
            return part[2:]
    return None


def scram(steps):
    """SaslHandshake, then SCRAM-SHA-512; appends each answer to steps."""
    r = call(17, 1, string("SCRAM-SHA-512"))
    if r is None:
        return False
    steps.append(["SaslHandshake", struct.unpack(">h", r[:2])[0]])
    nonce = base64.b64encode(os.urandom(18)).decode()
    first_bare = f"n={username},r={nonce}"
    answer = authenticate(("n,," + first_bare).encode())
    if answer is None:
        return False
    steps.append(["SaslAuthenticate", answer[0]])
    if answer[0] != 0:
        return True
    server_first = answer[1].decode()
    salt = base64.b64decode(attribute(server_first, "s"))
    salted = hashlib.pbkdf2_hmac("sha512", password.encode(), salt, int(attribute(server_first, "i")))
    client_key = hmac.new(salted, b"Client Key", hashlib.sha512).digest()
    stored = hashlib.sha512(client_key).digest()
    without_proof = "c=biws,r=" + attribute(server_first, "r")
    auth_message = ",".join([first_bare, server_first, without_proof]).encode()
    signature = hmac.new(stored, auth_message, hashlib.sha512).digest()
    proof = bytes(a ^ b for a, b in zip(client_key, signature))
    final = without_proof + ",p=" + base64.b64encode(proof).decode()
    answer = authenticate(final.encode())
    if answer is None:
        return False
    server_key = hmac.new(salted, b"Server Key", hashlib.sha512).digest()
    expected = "v=" + base64.b64encode(hmac.new(server_key, auth_message, hashlib.sha512).digest()).decode()
    steps.append(["SaslAuthenticate", answer[0] if answer[1].decode() == expected else -1])
    return True


steps = []
open_ = call(18, 0, b"") is not None
if open_:
    steps.append(["ApiVersions", 0])
    open_ = scram(steps)
if open_:
    r = call(3, 1, struct.pack(">i", 0))
    open_ = r is not None
    if open_:
        steps.append(["Metadata", struct.unpack(">i", r[:4])[0]])
if open_:
    open_ = scram(steps)
if open_ and idle is not None:
    time.sleep(idle)
    r = call(3, 1, struct.pack(">i", 0))
    open_ = r is not None
    if open_:
        steps.append(["Metadata", struct.unpack(">i", r[:4])[0]])
if not open_:
    steps.append(["closed", 0])
print(json.dumps({"steps": steps}), flush=True)
