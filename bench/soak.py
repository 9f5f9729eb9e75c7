#!/usr/bin/env python3
"""Steady-state memory: runs a command that prints a paced stream, reads all of it, and samples
the command's RSS from /proc once a second.

usage: soak.py --expect N --warmup W --until MARKER [--match REGEX] [--timeout S] [--csv FILE] -- CMD...
       soak.py row TITLE RESULT_JSON   (appends the table row, see rows.py)

Lines matching REGEX are the stream's events (default: lines stamped with `sent_ns`, see
latency.py). The start RSS is the first sample taken W seconds after the first event arrived (the
warm-up: connection, first allocations, caches filling); the end RSS is the last sample before
MARKER (the stream's last event) arrived. Also reported: the peak after the warm-up, the
least-squares slope of RSS over the steady window (MB per minute: a leak shows as a steady
slope, allocator high water as a step that flattens), how many events arrived and at what rate,
and, when they carry `sent_ns`, their latency percentiles under this load: each event's from
the first line carrying its stamp (the stream numbers its events in order; a `part.completed`
repeats a delta's stamp). Prints one JSON object; every sample goes to the CSV (seconds, RSS
KiB, lines).
"""
import json, os, re, signal, subprocess, sys, threading, time

from latency import STAMP, stamps
import rows
from rows import percentile, rss_kb


def main():
    args = sys.argv[1:]
    opt = lambda name, default=None: args[args.index(name) + 1] if name in args else default
    expect = int(opt("--expect"))
    warmup = float(opt("--warmup", 10))
    marker = opt("--until").encode()
    timeout = float(opt("--timeout", 600))
    csv_path = opt("--csv")
    match_events = re.compile(opt("--match").encode()) if opt("--match") else STAMP
    command = args[args.index("--") + 1:]

    start = time.monotonic()
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, bufsize=0)
    state = {"events": 0, "lines": 0, "first": None}
    samples = []  # (seconds since start, rss KiB, events so far)
    done = threading.Event()

    def sample():
        while not done.wait(1.0):
            value = rss_kb(process.pid)
            if value is not None:
                samples.append((time.monotonic() - start, value, state["events"]))

    threading.Thread(target=sample, daemon=True).start()
    signal.signal(signal.SIGALRM, rows.raise_timeout)
    signal.setitimer(signal.ITIMER_REAL, timeout)
    fd = process.stdout.fileno()
    latencies = []
    newest = -1  # the highest event number seen: a line carrying it again is a repeat
    found = False
    finished_at = None
    try:
        for arrived, chunk_lines in rows.line_chunks(fd):
            for line in chunk_lines:
                state["lines"] += 1
                if match_events.search(line):
                    if state["first"] is None:
                        state["first"] = time.monotonic() - start
                    state["events"] += 1
                    carried = stamps(line)
                    # A part.completed repeats the stamp of a delta already read: not a new event.
                    if carried and carried[0][0] > newest:
                        newest = carried[0][0]
                        latencies.append(arrived - carried[0][1])
                if marker in line:
                    found = True
                    finished_at = time.monotonic() - start
            if found:
                break
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        done.set()
        final = rss_kb(process.pid)
        process.kill()
        process.wait()

    if csv_path:
        with open(csv_path, "w") as csv:
            csv.write("seconds,rss_kb,events\n")
            for t, v, n in samples:
                csv.write(f"{t:.2f},{v},{n}\n")
    first = state["first"]
    steady = [(t, v) for t, v, _ in samples if first is not None and t >= first + warmup
              and (finished_at is None or t <= finished_at)]
    if final is not None and finished_at is not None:
        steady.append((finished_at, final))
    result = {"found": found, "events": state["events"], "expected": expect, "lines": state["lines"]}
    if len(steady) >= 2:
        n = len(steady)
        mean_t = sum(t for t, _ in steady) / n
        mean_v = sum(v for _, v in steady) / n
        var_t = sum((t - mean_t) ** 2 for t, _ in steady)
        slope = sum((t - mean_t) * (v - mean_v) for t, v in steady) / var_t if var_t else 0.0
        result.update({
            "rss_start_kb": steady[0][1], "rss_end_kb": steady[-1][1],
            "rss_peak_kb": max(v for _, v in steady),
            "window_s": round(steady[-1][0] - steady[0][0], 1),
            "slope_mb_per_min": round(slope * 60 / 1024, 3),
        })
    if first is not None and finished_at is not None and finished_at > first:
        result["rate_per_s"] = round(state["events"] / (finished_at - first), 1)
    latencies.sort()
    if latencies:
        result.update({f"p{int(q * 100)}_ms": round(percentile(latencies, q) / 1e6, 3) for q in (0.5, 0.99)})
    print(json.dumps(result))
    sys.exit(0 if found and state["events"] >= expect else 1)


def row(title, result):
    mb = lambda kb: kb / 1024
    if "rss_start_kb" not in result:
        rows.add(title, "no steady window", "—", "failed", "growth < 5 MB", False,
                 f"{result.get('events', 0):,} of {result.get('expected', 0):,} events arrived", result)
        return
    growth = mb(result["rss_end_kb"] - result["rss_start_kb"])
    complete = result["found"] and result["events"] >= result["expected"]
    rows.add(
        title,
        f"RSS {mb(result['rss_start_kb']):.1f} → {mb(result['rss_end_kb']):.1f} MB (peak {mb(result['rss_peak_kb']):.1f})",
        "— (RSS after the warm-up vs at the end)",
        f"growth {growth:+.1f} MB" + ("" if complete else f" (incomplete: {result['events']:,} of {result['expected']:,})"),
        "growth < 5 MB",
        complete and growth < 5,
        f"{result['events']:,} events at {result.get('rate_per_s', 0):,.0f}/s; {result['window_s']:.0f} s measured; "
        f"slope {result['slope_mb_per_min']:+.3f} MB/min"
        + (f"; latency under load p50 {result['p50_ms']:.2f} ms, p99 {result['p99_ms']:.2f} ms" if "p50_ms" in result else ""),
        result,
    )


if __name__ == "__main__":
    if sys.argv[1:2] == ["row"]:
        row(sys.argv[2], json.loads(sys.argv[3] or "{}"))
    else:
        main()
