#!/usr/bin/env python3
"""How long each proxy holds a request and a response, from a capture of lo
(tools/residence/capture.sh DIR, over `bench_dataplane --only tail`).

usage: residence.py DIR

For every data segment that reaches a proxy (client -> proxy: a request;
broker -> proxy: a response), the time until the proxy sends the segment of
the same length on the other side of the same connection pair: the proxy's
residence, wake-up included (a segment on lo is captured as it is sent).
Also each upstream connection's round trip (proxy -> broker -> proxy), the
broker's share of the end-to-end latency, and the same round trip on every
other connection to those brokers (the direct path's: `direct to :PORT`). Connections are told apart with
the `ss` snapshots; a client connection is paired with the upstream
connection its segments most often leave by. Samples are grouped by the
latency clients running when they were taken (their bootstrap addresses,
joined by +), in microseconds: p50, p90, p99.
"""

import bisect
import collections
import struct
import sys

KINDS = ("request", "response", "broker")


def segments(path):
    """(time, source port, destination port, payload length) of each TCP
    segment with a payload, from a pcap file of an Ethernet-framed lo."""
    data = open(path, "rb").read()
    nano = struct.unpack("<I", data[:4])[0] == 0xA1B23C4D
    off = 24
    while off + 16 <= len(data):
        sec, frac, incl, _ = struct.unpack("<IIII", data[off:off + 16])
        ip = data[off + 30:off + 16 + incl]
        off += 16 + incl
        if len(ip) < 20 or ip[0] >> 4 != 4:
            continue
        ihl, total = (ip[0] & 15) * 4, struct.unpack(">H", ip[2:4])[0]
        tcp = ip[ihl:]
        sport, dport = struct.unpack(">HH", tcp[:4])
        n = total - ihl - (tcp[12] >> 4) * 4
        if n > 0:
            yield sec + frac / (1e9 if nano else 1e6), sport, dport, n


def pct(v, q):
    v = sorted(v)
    return v[min(len(v) - 1, int(q * len(v)))] if v else float("nan")


def port(addr):
    p = addr.rsplit(":", 1)[1]
    return int(p) if p.isdigit() else 0


def load(d):
    """The proxies' PIDs, listening ports and sockets, and the snapshots'
    times with the number of latency clients then running."""
    pids = {}
    for line in open(f"{d}/kids").read().splitlines():
        pid, cmd = line.split(" ", 1)
        if "sluice-proxy" in cmd:
            pids["sluice-proxy"] = pid
        if "haproxy" in cmd.split()[0]:
            pids["haproxy"] = pid
    listen = collections.defaultdict(set)
    for line in open(f"{d}/listen"):
        for name, pid in pids.items():
            if f"pid={pid}," in line:
                listen[name].add(port(line.split()[3]))
    socks, windows = collections.defaultdict(set), []
    for line in open(f"{d}/ss"):
        if line.startswith("T "):
            _, t, c = line.split()
            windows.append((float(t), c))
            continue
        for name, pid in pids.items():
            if f"pid={pid}," in line:
                f = line.split()
                socks[name].add((port(f[3]), port(f[4])))
    return pids, listen, socks, windows


def streams_of(segs, client, upstream):
    """(socket, outbound) -> [(time, length)], for the proxy's sockets."""
    streams = collections.defaultdict(list)
    for t, sp, dp, n in segs:
        if (sp, dp) in client or (sp, dp) in upstream:
            streams[((sp, dp), True)].append((t, n))
        elif (dp, sp) in client or (dp, sp) in upstream:
            streams[((dp, sp), False)].append((t, n))
    return streams


def pair(seen, outs, streams):
    """The socket of `outs` that the segments `seen` most often leave by."""
    best, score = None, 0
    for so in outs:
        o = streams.get((so, True), [])
        ot = [x[0] for x in o]
        k = 0
        for t, n in seen[:400]:
            j = bisect.bisect_left(ot, t)
            k += j < len(o) and o[j][1] == n and o[j][0] - t < 0.001
        if k > score:
            best, score = so, k
    return best if best is not None and score >= min(20, len(seen) // 2) else None


def residence(ins, outs, streams, add):
    for si in ins:
        seen = streams.get((si, False), [])
        so = pair(seen, outs, streams)
        if so is None:
            continue
        o = streams[(so, True)]
        ot = [x[0] for x in o]
        for t, n in seen:
            j = bisect.bisect_left(ot, t)
            while j < len(o) and o[j][1] != n:
                j += 1
            if j < len(o) and o[j][0] - t < 0.05:
                add(t, (o[j][0] - t) * 1e6)


def round_trips(upstream, streams, add):
    for so in upstream:
        sent, back = streams.get((so, True), []), streams.get((so, False), [])
        j = 0
        for t, _ in sent:
            while j < len(back) and back[j][0] < t:
                j += 1
            if j < len(back):
                add(t, (back[j][0] - t) * 1e6)
                j += 1


def main(d):
    pids, listen, socks, windows = load(d)
    segs = list(segments(f"{d}/all.pcap"))
    times = [w[0] for w in windows]
    res = collections.defaultdict(lambda: collections.defaultdict(list))

    def adder(name, label):
        def add(t, micros):
            i = bisect.bisect_right(times, t) - 1
            # Only between two snapshots that agree on the clients running.
            if 0 <= i < len(windows) - 1 and windows[i][1] == windows[i + 1][1] != "none":
                res[(name, windows[i][1])][label].append(micros)
        return add

    brokers, proxied = set(), set()
    for name in pids:
        client = {s for s in socks[name] if s[0] in listen[name]}
        upstream = socks[name] - client
        brokers |= {p for _, p in upstream}
        proxied |= upstream
        streams = streams_of(segs, client, upstream)
        residence(client, upstream, streams, adder(name, "request"))
        residence(upstream, client, streams, adder(name, "response"))
        round_trips(upstream, streams, adder(name, "broker"))
    # Every other connection to those brokers: the direct path's (to the
    # broker behind sluice-proxy), the benchmark's own.
    direct = {(sp, dp) for _, sp, dp, _ in segs if dp in brokers} - proxied
    for b in sorted(brokers):
        mine = {s for s in direct if s[1] == b}
        streams = streams_of(segs, mine, set())
        round_trips(mine, streams, adder(f"direct to :{b}", "broker"))

    for (name, c), v in sorted(res.items()):
        if len(v["broker"]) < 100:
            continue
        print(f"{name:12} clients={c}: " + " | ".join(
            f"{k} n={len(v[k])} p50={pct(v[k], .5):.0f} p90={pct(v[k], .9):.0f} p99={pct(v[k], .99):.0f}"
            for k in KINDS if v[k]))
    for c in sorted({k[1] for k in res}):
        s, h = res.get(("sluice-proxy", c)), res.get(("haproxy", c))
        if s and h:
            print(f"sluice-proxy / haproxy, clients={c}: " + " | ".join(
                f"{k} " + " ".join(f"p{int(q * 100)}={pct(s[k], q) / pct(h[k], q):.2f}" for q in (.5, .9, .99))
                for k in KINDS))


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
