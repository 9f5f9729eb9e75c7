#!/usr/bin/env python3
"""Renders bench/out/rows.jsonl as docs/benchmarks.md's markdown table: a dated line naming the
machine, then one row per measurement. `run.sh` prints this to stdout and saves it to
bench/out/results.md; paste it over the table in docs/benchmarks.md.

The machine line is read from this machine (cores, memory, OS, Swift); BENCH_MACHINE overrides
it, BENCH_DATE the date.
"""
import datetime, json, os, re, subprocess, sys

from rows import ROWS


def machine():
    if os.environ.get("BENCH_MACHINE"):
        return os.environ["BENCH_MACHINE"]
    parts = [f"{os.cpu_count()} cores"]
    try:
        with open("/proc/meminfo") as meminfo:
            kb = int(next(line for line in meminfo if line.startswith("MemTotal:")).split()[1])
        parts.append(f"{round(kb / 1024 / 1024)} GiB")
    except (OSError, StopIteration, ValueError):
        pass
    try:
        with open("/etc/os-release") as release:
            fields = dict(line.rstrip("\n").split("=", 1) for line in release if "=" in line)
        parts.append(f"{fields.get('NAME', '').strip(chr(34)).split()[0]} {fields.get('VERSION_ID', '').strip(chr(34))}".strip())
    except (OSError, IndexError):
        pass
    try:
        swift = os.environ.get("SWIFT", "swift")
        version = subprocess.run([swift, "--version"], capture_output=True, text=True, timeout=30).stdout
        match = re.search(r"Swift version (\S+)", version)
        if match:
            parts.append(f"Swift {match.group(1)}")
    except (OSError, subprocess.SubprocessError):
        pass
    return ", ".join(parts)


def cell(text):
    return str(text).replace("|", "\\|").replace("<", "&lt;").replace(">", "&gt;").replace("\n", " ")


def main():
    path = sys.argv[1] if len(sys.argv) > 1 else ROWS
    rows = []
    with open(path) as source:
        for line in source:
            if line.strip():
                rows.append(json.loads(line))
    date = os.environ.get("BENCH_DATE") or datetime.date.today().isoformat()
    met = [row["met"] for row in rows if row["met"] is not None]
    print(f"Measured {date} on {machine()}: every row's tether and baseline in the same run, on the same "
          f"stream, on this machine. Targets met: {sum(met)} of {len(met)}.")
    print()
    print("| benchmark | tether | baseline | result | target | met? | notes |")
    print("|---|---|---|---|---|---|---|")
    for row in rows:
        verdict = "—" if row["met"] is None else "yes" if row["met"] else "**no**"
        print("| " + " | ".join(cell(row[key]) for key in ("benchmark", "tether", "baseline", "result", "target"))
              + f" | {verdict} | {cell(row.get('notes', ''))} |")


if __name__ == "__main__":
    main()
