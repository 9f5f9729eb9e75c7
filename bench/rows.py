#!/usr/bin/env python3
"""The benchmarks' results: one JSON object per table row, appended to bench/out/rows.jsonl.

Each row: benchmark, tether, baseline (named), result (ratio or value), target, met (true,
false, or null when there is no target), notes, and `raw` (the measured numbers, for anyone who
wants more than the table). `table.py` renders the rows. Used as a module by the other scripts,
and from bash as `rows.py add BENCHMARK TETHER BASELINE RESULT TARGET MET [NOTES]` (MET: yes, no
or -).
"""
import json, math, os, sys, time

OUT_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "out")
ROWS = os.environ.get("BENCH_ROWS", os.path.join(OUT_DIR, "rows.jsonl"))


def add(benchmark, tether, baseline, result, target, met, notes="", raw=None):
    os.makedirs(os.path.dirname(ROWS), exist_ok=True)
    row = {"benchmark": benchmark, "tether": tether, "baseline": baseline, "result": result,
           "target": target, "met": met, "notes": notes, "raw": raw or {}}
    with open(ROWS, "a") as out:
        out.write(json.dumps(row, ensure_ascii=False) + "\n")
    # Progress for the person watching: the row as one line on stderr.
    print(f"bench: {benchmark}: tether {tether} | {baseline} | {result} | target {target} | "
          f"met: {'-' if met is None else 'yes' if met else 'NO'}" + (f" | {notes}" if notes else ""),
          file=sys.stderr, flush=True)
    return row


def raise_timeout(*_):
    """A SIGALRM handler: a blocked read is only interrupted by a handler that raises (PEP 475)."""
    raise TimeoutError


def line_chunks(fd):
    """Reads `fd` until EOF, or until a SIGALRM (see raise_timeout) interrupts a read, and yields
    (arrival time in ns, the complete lines of that read). A line split across reads is joined."""
    partial = b""
    while True:
        try:
            chunk = os.read(fd, 1 << 16)
        except TimeoutError:  # the command hung: report what arrived
            return
        arrived = time.time_ns()
        if not chunk:
            return
        data = partial + chunk
        end = data.rfind(b"\n")
        if end < 0:
            partial = data
            continue
        partial = data[end + 1:]
        yield arrived, data[:end].split(b"\n")


def percentile(sorted_values, q):
    """Nearest-rank percentile of an already sorted list."""
    if not sorted_values:
        return float("nan")
    return sorted_values[max(0, math.ceil(q * len(sorted_values)) - 1)]


def rss_kb(pid):
    """The process's resident set size from /proc, in KiB (None once it is gone)."""
    try:
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def main():
    args = sys.argv[1:]
    if len(args) < 7 or args[0] != "add":
        sys.exit("usage: rows.py add BENCHMARK TETHER BASELINE RESULT TARGET yes|no|- [NOTES]")
    met = {"yes": True, "no": False}.get(args[6])
    add(args[1], args[2], args[3], args[4], args[5], met, args[7] if len(args) > 7 else "")


if __name__ == "__main__":
    main()
