#!/usr/bin/env bash
# Runs each fuzz target for SECONDS on a scratch copy of its seed corpus (Fuzz/make-corpus.py,
# from the transcripts under Tests/), so runs never write into the repository. Run from the
# repository root after building (`make fuzz` does both):
#
#     bash Fuzz/run.sh SECONDS [TARGET…]        # default: every target
#
# Progress goes to stderr. A crash, sanitizer report, leak, timeout or failed invariant fails
# the run, naming the target and the input that did it; the other targets still run.
set -uo pipefail

seconds=${1:?usage: Fuzz/run.sh SECONDS [TARGET...]}
shift
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(FuzzSSEDecoder FuzzLineFramer FuzzWebSocketFrames FuzzJSONParser
                                     FuzzOpenCodeWire FuzzOpenCode2Wire FuzzCodexWorkerWire FuzzCodexMonitorWire FuzzNotificationWire)
build=${FUZZ_BUILD_PATH:-.build-fuzz}
bin="$build/debug"
scratch="$build/run"

rm -rf "$scratch"
mkdir -p "$scratch"
python3 Fuzz/make-corpus.py "$scratch/corpus" 2>/dev/null || { echo "fuzz: could not build the seed corpus" >&2; exit 1; }

# Swift's own crash backtracer would race libFuzzer's signal handler (and trips ASan reading
# the stack): leave a trap to libFuzzer, which saves the input.
export SWIFT_BACKTRACE=enable=no

failed=()
for target in "${targets[@]}"; do
    [ -x "$bin/$target" ] || { echo "fuzz: $bin/$target is not built (make fuzz builds it)" >&2; exit 1; }
    artifacts="$scratch/artifacts/$target"
    log="$scratch/$target.log"
    mkdir -p "$artifacts"
    printf 'fuzz: %-22s %ss … ' "$target" "$seconds" >&2
    # -timeout: a single input that takes this long is a hang, a bug in itself.
    "$bin/$target" "$scratch/corpus/$target" -max_total_time="$seconds" -timeout=20 -print_final_stats=1 -dict="$scratch/corpus/wire.dict" \
        -artifact_prefix="$artifacts/" >"$log" 2>&1
    status=$?
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
    found=$(find "$artifacts" -type f | head -1)
    if [ $status -ne 0 ] || [ -n "$found" ]; then
        echo "FAILED (exit $status)" >&2
        grep -E 'fuzz invariant failed|ERROR: (AddressSanitizer|LeakSanitizer|libFuzzer)|Fatal error|SUMMARY' "$log" | head -5 >&2
        echo "fuzz: $target crashed on input ${found:-(none saved)}; log: $log" >&2
        echo "fuzz: reproduce with: $bin/$target ${found:-INPUT}" >&2
        failed+=("$target")
    else
        echo "ok, ${runs:-?} inputs, corpus $(find "$scratch/corpus/$target" -type f | wc -l) files" >&2
    fi
done

if [ ${#failed[@]} -gt 0 ]; then
    echo "fuzz: FAILED: ${failed[*]} (keep each crashing input under Tests/Fuzz/Regressions/<target>/ with a regression test)" >&2
    exit 1
fi
echo "fuzz: all ${#targets[@]} targets ran ${seconds}s without a failure" >&2
