#!/usr/bin/env python3
"""One benchmark row: tether beside its baseline, measured in the same run on the same stream."""
import json, sys
title, stream_bytes, tether, baseline, baseline_name = sys.argv[1], int(sys.argv[2]), json.loads(sys.argv[3]), json.loads(sys.argv[4]), sys.argv[5]
mb = stream_bytes / 1e6
t = mb / max(tether["seconds"], 1e-9)
b = mb / max(baseline["seconds"], 1e-9)
print(f"{title}: {mb:.1f} MB | tether {t:.1f} MB/s ({tether['seconds']:.2f} s) | {baseline_name} {b:.1f} MB/s "
      f"({baseline['seconds']:.2f} s) | ratio {t / b:.2f}× | tether RSS peak {tether['peak_rss_kb'] / 1024:.1f} MB, "
      f"first 10% {tether['rss_first10_kb'] / 1024:.1f} MB, last 10% {tether['rss_last10_kb'] / 1024:.1f} MB")
