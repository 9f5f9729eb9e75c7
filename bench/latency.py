#!/usr/bin/env python3
"""Latency of each event from a local server to a line on a command's stdout.

usage: latency.py --expect N [--warmup W] [--timeout S] -- CMD...
       latency.py row TITLE TETHER_JSON CURL_JSON   (appends the table row, see rows.py)

The server stamps every event with its wall-clock send time (`sent_ns=NS` in a delta, or
`"sent_ns":NS` in JSON, also when tether escapes it inside a string). This reader runs CMD, reads
its stdout as it comes, notes the wall-clock time (`time.time_ns()`, the same CLOCK_REALTIME as
the server's) as soon as each read returns, and for every complete line carrying a stamp records
read time minus send time. The first W stamped lines (default 50) are a warm-up and are left out.
It stops after N stamped lines (or when CMD's stdout ends, or after the timeout), kills CMD and
prints one JSON object: the count and p50/p90/p99/max in microseconds.

The same reader, on the same machine, reads the baseline (`curl -sN` of the same endpoint) and
tether, so what it costs itself is in both numbers and cancels out of the difference.
"""
import json, os, re, signal, subprocess, sys, time

import rows
from rows import percentile

STAMP = re.compile(rb'sent_ns(?:\\?"?:|=)(\d+)')


def main():
    args = sys.argv[1:]
    expect = int(args[args.index("--expect") + 1])
    warmup = int(args[args.index("--warmup") + 1]) if "--warmup" in args else 50
    timeout = float(args[args.index("--timeout") + 1]) if "--timeout" in args else 120
    command = args[args.index("--") + 1:]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, bufsize=0)
    fd = process.stdout.fileno()
    latencies = []
    seen = lines = 0
    os.set_blocking(fd, True)
    signal.signal(signal.SIGALRM, rows.raise_timeout)
    signal.setitimer(signal.ITIMER_REAL, timeout)
    try:
        for arrived, chunk_lines in rows.line_chunks(fd):
            for line in chunk_lines:
                lines += 1
                match = STAMP.search(line)
                if not match:
                    continue
                seen += 1
                if seen > warmup:
                    latencies.append(arrived - int(match.group(1)))
            if seen >= expect:
                break
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        process.kill()
        process.wait()
    latencies.sort()
    us = lambda q: round(percentile(latencies, q) / 1000, 1)
    print(json.dumps({
        "complete": seen >= expect, "stamped": seen, "lines": lines, "measured": len(latencies),
        "p50_us": us(0.50), "p90_us": us(0.90), "p99_us": us(0.99),
        "max_us": round(latencies[-1] / 1000, 1) if latencies else None,
    }))
    sys.exit(0 if seen >= expect else 1)


def row(title, tether, curl):
    ms = lambda us: f"{us / 1000:.3f}"
    added50, added99 = tether["p50_us"] - curl["p50_us"], tether["p99_us"] - curl["p99_us"]
    complete = tether["complete"] and curl["complete"]
    rows.add(
        title,
        f"p50 {ms(tether['p50_us'])} ms, p99 {ms(tether['p99_us'])} ms",
        f"`curl -sN` p50 {ms(curl['p50_us'])} ms, p99 {ms(curl['p99_us'])} ms",
        f"added p50 {added50 / 1000:+.3f} ms, p99 {added99 / 1000:+.3f} ms"
        + ("" if complete else f" (incomplete: {tether['stamped']} and {curl['stamped']} events arrived)"),
        "added p99 < 1 ms",
        complete and added99 < 1000,
        f"{tether['measured']:,} events each after a warm-up; max tether {ms(tether['max_us'] or 0)} ms, "
        f"curl {ms(curl['max_us'] or 0)} ms",
        {"tether": tether, "curl": curl},
    )


if __name__ == "__main__":
    if sys.argv[1:2] == ["row"]:
        row(sys.argv[2], json.loads(sys.argv[3]), json.loads(sys.argv[4]))
    else:
        main()
