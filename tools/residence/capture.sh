#!/bin/bash
# Captures what tools/residence/residence.py reads, over one run of
# `bench_dataplane --only tail` (started just before, from any directory):
# every TCP segment's headers on lo (tcpdump, 96 bytes a segment), and
# every half second the sockets of each process (ss) and the latency
# clients running (their bootstrap addresses). Needs root; installs Debian's
# tcpdump when it is missing.
#   target/release/bench_dataplane --only tail --reps 3 --latency-secs 5 &
#   tools/residence/capture.sh DIR; wait; tools/residence/residence.py DIR
set -u
[ $# -eq 1 ] || { echo "usage: tools/residence/capture.sh DIR (beside bench_dataplane --only tail)" >&2; exit 2; }
if ! command -v tcpdump >/dev/null 2>&1; then
  echo "[capture] installing Debian's tcpdump" >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq tcpdump >/dev/null 2>&1 \
    || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq tcpdump >/dev/null; } \
    || { echo "capture: tcpdump is missing and could not be installed" >&2; exit 1; }
fi
out=$1; mkdir -p "$out"
tcpdump -i lo -s 96 -B 16384 -w "$out"/all.pcap -n tcp 2>"$out"/tcpdump.err & tp=$!
sleep 1
bench=$(pgrep -f "release/bench_dataplane --only tail" | head -1)
while kill -0 $bench 2>/dev/null; do
  t=$(date +%s.%N)
  # The benchmark's processes, while both proxies are among them.
  k=$(pgrep -a -P $bench 2>/dev/null)
  if grep -q sluice-proxy <<<"$k" && grep -q haproxy <<<"$k"; then echo "$k" > "$out/kids"; fi
  # The latency clients running, by their bootstrap addresses.
  c=$(pgrep -P $bench -af "bench_load.py latency" | awk '{print $5}' | sort | paste -sd+)
  c=${c:-none}
  { echo "T $t $c"; ss -tnpH; } >> "$out"/ss
  ss -tlnpH >> "$out"/listen
  sleep 0.5
done
kill $tp; wait $tp
