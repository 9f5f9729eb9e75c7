#!/usr/bin/env python3
"""Latency of each event from a local server to a line on a command's stdout.

usage: latency.py --expect N [--last I] [--warmup W] [--timeout S] -- CMD...
       latency.py row TITLE TETHER_JSON CURL_JSON   (appends the table row, see rows.py)

The server numbers every event and stamps it with its wall-clock send time (`tokenI sent_ns=NS`
in an OpenCode delta, `{"i":I,"sent_ns":NS}` from the SSE server, also when tether escapes it
inside a string). This reader runs CMD, reads its stdout as it comes, notes the wall-clock time
(`time.time_ns()`, the same CLOCK_REALTIME as the server's) as soon as each read returns, and
for the first complete line carrying each event's stamp records read time minus send time. A
later line carrying a stamp again (a `part.completed` holds the text of all its deltas) is not a
new event and is left out. The first W events (default 50) are a warm-up and are left out too.

It stops after N events, or with `--last I` once event I (or a later one) arrived (or when
CMD's stdout ends, or after the timeout), kills CMD and prints one JSON object: the count, the
first and last event seen, and p50/p90/p99/max in microseconds. Complete means at least N events arrived and, with
`--last`, none is missing from the first one seen through I: a client that joins a running
stream is judged on what was sent while it was there.

The same reader, on the same machine, reads the baseline (`curl -sN` of the same endpoint) and
tether, so what it costs itself is in both numbers and cancels out of the difference.
"""
import json, os, re, signal, subprocess, sys, time

import rows
from rows import percentile

STAMP = re.compile(rb'(?:token(\d+) |"i\\?":(\d+),\\?")sent_ns(?:\\?"?:|=)(\d+)')


def stamps(line):
    """Each (event number, send time in ns) the line carries, in order."""
    return [(int(token or index), int(sent)) for token, index, sent in STAMP.findall(line)]


def main():
    args = sys.argv[1:]
    expect = int(args[args.index("--expect") + 1])
    warmup = int(args[args.index("--warmup") + 1]) if "--warmup" in args else 50
    timeout = float(args[args.index("--timeout") + 1]) if "--timeout" in args else 120
    last = int(args[args.index("--last") + 1]) if "--last" in args else None
    command = args[args.index("--") + 1:]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, bufsize=0)
    fd = process.stdout.fileno()
    latencies = []
    arrived_events = set()
    highest = -1
    lines = 0
    os.set_blocking(fd, True)
    signal.signal(signal.SIGALRM, rows.raise_timeout)
    signal.setitimer(signal.ITIMER_REAL, timeout)
    try:
        for arrived, chunk_lines in rows.line_chunks(fd):
            for line in chunk_lines:
                lines += 1
                carried = stamps(line)
                if not carried:
                    continue
                event, sent = carried[0]
                if event in arrived_events:
                    continue
                arrived_events.add(event)
                highest = max(highest, event)
                if len(arrived_events) > warmup:
                    latencies.append(arrived - sent)
            if (highest >= last) if last is not None else len(arrived_events) >= expect:
                break
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        process.kill()
        process.wait()
    latencies.sort()
    us = lambda q: round(percentile(latencies, q) / 1000, 1)
    seen = len(arrived_events)
    first, final = (min(arrived_events), max(arrived_events)) if arrived_events else (None, None)
    gap_free = last is None or (final == last and seen == last - first + 1)
    complete = seen >= expect and gap_free
    print(json.dumps({
        "complete": complete, "gap_free": gap_free, "stamped": seen, "first": first, "last": final,
        "lines": lines, "measured": len(latencies),
        "p50_us": us(0.50), "p90_us": us(0.90), "p99_us": us(0.99),
        "max_us": round(latencies[-1] / 1000, 1) if latencies else None,
    }))
    sys.exit(0 if complete else 1)


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
