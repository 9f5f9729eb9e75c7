#!/usr/bin/env python3
"""Throughput and memory rows: tether beside its baseline, measured in the same run on the same
stream, alternating which goes first: A B, B A (lib.sh `ab`).

usage: report.py TITLE STREAM_BYTES FRAMES TETHER_RUNS BASELINE_RUNS BASELINE_NAME [NOTES] [TARGET_RATIO]
       report.py rss TITLE TETHER_RUNS [TARGET_MB]

The RUNS are JSON arrays of harness.py's results. A throughput row compares the median seconds
of each side (with two runs, their mean) and gives every run in the notes; a run that did not
reach its marker counts as not complete, and the row says so. The rss row gives tether's peak
RSS over all its runs. Appends to bench/out/rows.jsonl (see rows.py).
"""
import json, statistics, sys

import rows


def median_seconds(runs):
    return statistics.median(run["seconds"] for run in runs) if runs else float("nan")


def throughput(title, stream_bytes, frames, tether, baseline, baseline_name, notes="", target=5.0):
    mb = stream_bytes / 1e6
    t_s, b_s = median_seconds(tether), median_seconds(baseline)
    complete = bool(tether) and bool(baseline) and all(run["found"] for run in tether + baseline)
    ratio = b_s / t_s if t_s > 0 else float("nan")
    t_rate = f"{mb / t_s:.1f} MB/s, {frames / t_s / 1000:.0f}k frames/s"
    b_rate = f"{mb / b_s:.1f} MB/s, {frames / b_s / 1000:.0f}k frames/s"
    runs = lambda side: ", ".join(f"{run['seconds']:.2f}" + ("" if run["found"] else " (incomplete)") for run in side)
    incomplete = [run for run in tether if not run["found"]]
    if complete:
        result = f"{ratio:.2f}×"
    elif incomplete:
        got = max(run["bytes"] for run in incomplete) / 1e6
        result = f"— (tether did not finish: {got:.1f} MB of output in {max(run['seconds'] for run in incomplete):.0f} s)"
    else:
        result = f"{ratio:.2f}× (a baseline run did not complete)"
    peak = max((run["peak_rss_kb"] for run in tether), default=0) / 1024
    rows.add(
        f"{title} ({mb:.1f} MB)",
        t_rate if complete or not incomplete else "did not finish",
        f"`{baseline_name}` {b_rate}",
        result,
        f"≥ {target:g}×",
        complete and ratio >= target,
        f"median of {len(tether)} runs each, A B, B A alternated; tether s: {runs(tether)}; baseline s: {runs(baseline)}; "
        f"tether peak RSS {peak:.1f} MB" + (f"; {notes}" if notes else ""),
        {"stream_bytes": stream_bytes, "frames": frames, "tether": tether, "baseline": baseline},
    )


def rss(title, tether, target_mb=50.0):
    peaks = [run["peak_rss_kb"] / 1024 for run in tether]
    peak = max(peaks, default=0.0)
    complete = bool(tether) and all(run["found"] for run in tether)
    rows.add(
        title,
        f"peak RSS {peak:.1f} MB",
        "— (no baseline: curl and jq keep no state per part)",
        f"{peak:.1f} MB" + ("" if complete else " (a run did not finish)"),
        f"< {target_mb:g} MB",
        complete and peak < target_mb,
        "per run: " + ", ".join(f"{p:.1f} MB" for p in peaks) + " (sampled every 20 ms from /proc)",
        {"tether": tether},
    )


def main():
    args = sys.argv[1:]
    if args[:1] == ["rss"]:
        rss(args[1], json.loads(args[2]), float(args[3]) if len(args) > 3 else 50.0)
        return
    title, stream_bytes, frames = args[0], int(args[1]), int(args[2])
    tether, baseline, baseline_name = json.loads(args[3]), json.loads(args[4]), args[5]
    notes = args[6] if len(args) > 6 else ""
    target = float(args[7]) if len(args) > 7 else 5.0
    throughput(title, stream_bytes, frames, tether, baseline, baseline_name, notes, target)


main()
