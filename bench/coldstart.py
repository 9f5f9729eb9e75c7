#!/usr/bin/env python3
"""Cold start: wall time from spawning a command to its exit, over many runs.

usage: coldstart.py RUNS TETHER_BIN

Runs `tether --version` and two baselines the same way (posix_spawn, stdout to /dev/null,
waitpid): `/bin/true` (the floor: a process that does nothing) and `curl --version` (a small
dynamically linked C tool). The three are interleaved run by run so they share whatever else
the machine is doing; 3 untimed runs of each first warm the page cache, so "cold" means a new
process, not a cold disk. Appends the row: tether's median and p90 beside the baselines'.
"""
import os, sys, time

import rows
from rows import percentile


def timed(argv, devnull):
    actions = [(os.POSIX_SPAWN_DUP2, devnull, 1), (os.POSIX_SPAWN_DUP2, devnull, 2)]
    start = time.perf_counter()
    pid = os.posix_spawn(argv[0], argv, os.environ, file_actions=actions)
    _, status = os.waitpid(pid, 0)
    elapsed = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"coldstart: {' '.join(argv)} failed")
    return elapsed * 1000


def main():
    runs, tether = int(sys.argv[1]), sys.argv[2]
    curl = next((os.path.join(d, "curl") for d in os.environ.get("PATH", "").split(":")
                 if os.access(os.path.join(d, "curl"), os.X_OK)), "/usr/bin/curl")
    commands = {"tether": [tether, "--version"], "true": ["/bin/true"], "curl": [curl, "--version"]}
    times = {name: [] for name in commands}
    devnull = os.open(os.devnull, os.O_WRONLY)
    for _ in range(3):
        for argv in commands.values():
            timed(argv, devnull)
    for _ in range(runs):
        for name, argv in commands.items():
            times[name].append(timed(argv, devnull))
    stats = {name: {"p50_ms": round(percentile(sorted(v), 0.5), 2), "p90_ms": round(percentile(sorted(v), 0.9), 2)}
             for name, v in times.items()}
    t, b, c = stats["tether"], stats["true"], stats["curl"]
    rows.add(
        f"cold start, `tether --version`, {runs} runs",
        f"median {t['p50_ms']:.1f} ms, p90 {t['p90_ms']:.1f} ms",
        f"`/bin/true` median {b['p50_ms']:.1f} ms, p90 {b['p90_ms']:.1f} ms; "
        f"`curl --version` median {c['p50_ms']:.1f} ms, p90 {c['p90_ms']:.1f} ms",
        f"median {t['p50_ms']:.1f} ms ({t['p50_ms'] - b['p50_ms']:+.1f} ms over `/bin/true`)",
        "median < 50 ms",
        t["p50_ms"] < 50,
        "spawn to exit, runs interleaved with the baselines",
        {**stats, "runs": runs},
    )


if __name__ == "__main__":
    main()
