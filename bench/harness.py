#!/usr/bin/env python3
"""Runs one benchmark command, reads its stdout until a marker, and measures it.

Prints one JSON object: seconds to the marker, bytes and lines read, and for the measured
process (the command itself, not a shell around it) its peak RSS and the RSS over the first and
last 10 % of the run, sampled from /proc every 20 ms — memory that stays flat across a stream is
the point. It stops at the marker, at EOF (a buffered pipeline prints its last block only when
its stream ends, so its marker comes right before EOF) or at the timeout, then kills the command.
`--stderr FILE` appends the command's stderr to FILE (default: discarded). `--no-lines` leaves
the lines uncounted ("lines": null).

This process shares the machine's two cores with what it measures, so its read loop does as
little per byte as it can: the marker is searched in each read (and across the seam with the
previous one) without joining the two, and the timed runs of `ab` do not count lines. Counting
and joining were two more passes over every byte; over tether's 96 MB of output on the OpenCode
new-parts flood that was about 0.05 s of CPU taken from tether's run, and little from the
baseline's, whose jq prints a fifth of those bytes (bench/PROFILE.md, part eight).
"""
import json, os, signal, subprocess, sys, threading, time

from rows import raise_timeout, rss_kb

def main():
    args = sys.argv[1:]
    marker = args[args.index("--until") + 1].encode()
    timeout = float(args[args.index("--timeout") + 1]) if "--timeout" in args else 300
    command = args[args.index("--") + 1:]
    options = args[:args.index("--")]
    stderr = open(options[options.index("--stderr") + 1], "ab") if "--stderr" in options else subprocess.DEVNULL
    count_lines = "--no-lines" not in options
    samples = []
    start = time.monotonic()
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=stderr, bufsize=0)
    done = threading.Event()

    def sample():
        while not done.is_set():
            value = rss_kb(process.pid)
            if value is not None:
                samples.append((time.monotonic() - start, value))
            time.sleep(0.02)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    read = lines = 0
    found = False
    tail = b""
    stream = process.stdout
    signal.signal(signal.SIGALRM, raise_timeout)
    signal.setitimer(signal.ITIMER_REAL, timeout)
    while time.monotonic() - start < timeout:
        try:
            chunk = stream.read(1 << 16)
        except TimeoutError:  # the command hung: report it as not found
            break
        if not chunk:
            break
        read += len(chunk)
        if count_lines:
            lines += chunk.count(b"\n")
        if marker in chunk or marker in tail + chunk[:len(marker) - 1]:
            found = True
            break
        seam = len(marker) - 1  # the bytes of a marker cut by the next read
        tail = (tail + chunk if len(chunk) < seam else chunk)[-seam:] if seam else b""
    signal.setitimer(signal.ITIMER_REAL, 0)
    elapsed = time.monotonic() - start
    done.set()
    process.kill()
    process.wait()
    total = samples[-1][0] if samples else elapsed
    first = [v for t, v in samples if t <= total * 0.1] or [0]
    last = [v for t, v in samples if t >= total * 0.9] or [0]
    print(json.dumps({
        "found": found, "seconds": round(elapsed, 4), "bytes": read, "lines": lines if count_lines else None,
        "peak_rss_kb": max((v for _, v in samples), default=0),
        "rss_first10_kb": max(first), "rss_last10_kb": max(last),
    }))
    sys.exit(0 if found else 1)

main()
