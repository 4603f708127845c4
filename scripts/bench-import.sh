#!/usr/bin/env bash
# Benchmarks `msi-hub import` of a large legacy export (default 100,000 messages) into a throw-away
# test database, with a release build. Usage: scripts/bench-import.sh [MESSAGES]
# The export is generated deterministically by fixtures/legacy/generate.py into bench-results/import/.
set -euo pipefail
cd "$(dirname "$0")/.."
count=${1:-100000}
scratch=${SCRATCH_PATH:-.build-migration}
swift build -c release --scratch-path "$scratch" --product msi-hub
bin="$(swift build -c release --scratch-path "$scratch" --show-bin-path)/msi-hub"
out=bench-results/import
python3 fixtures/legacy/generate.py --messages "$count" --out "$out"
echo "export: $(wc -l < "$out/message.jsonl") messages, $(du -h "$out/message.jsonl" | cut -f1)"
export BENCH_BIN="$bin" BENCH_OUT="$out"
scripts/with-test-database.sh bash -c '
    start=$(date +%s.%N)
    status=0
    "$BENCH_BIN" import --icube "$BENCH_OUT/icube.jsonl" --messages "$BENCH_OUT/message.jsonl" \
        --progress lines > "$BENCH_OUT/report.txt" || status=$?
    end=$(date +%s.%N)
    grep -E "^  (message|icube):|time:|Verification" "$BENCH_OUT/report.txt" || cat "$BENCH_OUT/report.txt"
    python3 -c "import sys; n=int(sys.argv[1]); s=float(sys.argv[3])-float(sys.argv[2]); \
print(f\"import of {n} messages: {s:.1f} s wall clock, {n/s:.0f} messages/s\")" \
        "$(grep -c . "$BENCH_OUT/message.jsonl")" "$start" "$end"
    exit $status
'
