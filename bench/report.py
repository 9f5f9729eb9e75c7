#!/usr/bin/env python3
"""One throughput row: tether beside its baseline, measured in the same run on the same stream.

usage: report.py TITLE STREAM_BYTES TETHER_JSON BASELINE_JSON BASELINE_NAME [TARGET_RATIO]
(the JSONs are harness.py's). Appends the row to bench/out/rows.jsonl (see rows.py).
"""
import json, sys

import rows

title, stream_bytes = sys.argv[1], int(sys.argv[2])
tether, baseline, baseline_name = json.loads(sys.argv[3]), json.loads(sys.argv[4]), sys.argv[5]
target = float(sys.argv[6]) if len(sys.argv) > 6 else 5.0
mb = stream_bytes / 1e6
t = mb / max(tether["seconds"], 1e-9)
b = mb / max(baseline["seconds"], 1e-9)
ratio = t / b
complete = tether["found"] and baseline["found"]
rows.add(
    f"{title} ({mb:.1f} MB)",
    f"{t:.1f} MB/s",
    f"`{baseline_name}` {b:.1f} MB/s",
    f"{ratio:.1f}×" if complete else f"{ratio:.1f}× (a stream did not complete)",
    f"≥ {target:g}×",
    complete and ratio >= target,
    f"tether RSS {tether['rss_first10_kb'] / 1024:.1f} → {tether['rss_last10_kb'] / 1024:.1f} MB (first → last 10% of the run)",
    {"stream_bytes": stream_bytes, "tether": tether, "baseline": baseline},
)
