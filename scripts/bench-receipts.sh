#!/usr/bin/env bash
# `make bench-receipts` (also run at the end of `make bench`): receipts at scale and the reach report (issue 30).
#  1. a throw-away SecantusDB with the legacy channel fixture, and a hub (FCM_MODE=log: the topic send is logged);
#  2. 20,000 active devices subscribed to the fixture's "Opening hours" topic, each with a secret of its own,
#     written straight into the database as DeviceDAO and the reconciler write them;
#  3. one Alert POSTed to the topic by an admin token, sent;
#  4. every device POSTs a `received` receipt and every other one, a little later, an `acknowledged` one, from
#     BENCH_RECEIPTS_CONNECTIONS keep-alive connections: the receipts/s the hub stored, the database's and the hub's
#     CPU per receipt (from /proc), the counts checked exact;
#  5. GET /message/:msiKey/receipts once right after the send (it counts the audience once and stores it on the
#     message), then 100 times one after another after the load, on the quiet database: p50 and p99 against 100 ms.
# Prints the figures with issue 30's targets and the load average; appends its rows to the bench's results
# (BENCH_RESULTS, default a new bench-results/receipts-*.jsonl) and its table to bench-results/receipts-*.txt.
#
# Environment: BENCH_RECEIPTS_DEVICES (default 20000), BENCH_RECEIPTS_CONNECTIONS (default 32),
# BENCH_RECEIPTS_REPORTS (default 100), SCRATCH_PATH (default .build), BENCH_CONFIGURATION (default release; debug
# only to try the script itself).
set -euo pipefail
# The hubs measured send at once: the two-person rule would hold the Forced subjects' and critical messages.
export APPROVAL_DEFAULTS=off
cd "$(dirname "$0")/.."
devices=${BENCH_RECEIPTS_DEVICES:-20000}
connections=${BENCH_RECEIPTS_CONNECTIONS:-32}
reports=${BENCH_RECEIPTS_REPORTS:-100}
scratch=${SCRATCH_PATH:-.build}
configuration=${BENCH_CONFIGURATION:-release}

swift build -c "$configuration" --scratch-path "$scratch" --product msi-hub
bin_dir=$(swift build -c "$configuration" --scratch-path "$scratch" --show-bin-path)
python=.venv/bin/python
helper=scripts/bench/bench.py

mkdir -p bench-results
stamp=$(date -u +%Y%m%dT%H%M%SZ)
results=${BENCH_RESULTS:-bench-results/receipts-$stamp.jsonl}
table=bench-results/receipts-$stamp.txt

work=$(mktemp -d "${TMPDIR:-/tmp}/msi-bench-receipts.XXXXXX")
db_pid="" hub_pid=""
cleanup() {
    local status=$?
    set +e
    for pid in $hub_pid $db_pid; do kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; done
    if [ "$status" -ne 0 ]; then
        echo "make bench-receipts failed; the last lines of the logs:" >&2
        for log in "$work"/hub.log "$work"/db.log; do
            if [ -s "$log" ]; then echo "== $log" >&2; tail -n 20 "$log" >&2; fi
        done
    fi
    rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'; }

echo "load average before the receipts bench: $(cut -d' ' -f1-3 /proc/loadavg) ($(nproc) CPUs)"
db_port=$(scripts/database.sh :memory: "$work/db.log")
db_pid=$(cat "$work/db.log.pid")
# retryWrites=false, as in bench-fanout.sh: SecantusDB's retryable-write records make every write dearer over a run.
uri="mongodb://127.0.0.1:$db_port/msi_bench_receipts?retryWrites=false"
"$python" "$helper" receipts-cube "$uri" fixtures/legacy-channel.json

port=$(free_port)
FCM_MODE=log "$bin_dir/msi-hub" serve --port "$port" --mongodb-uri "$uri" >>"$work/hub.log" 2>&1 &
hub_pid=$!
for _ in $(seq 1 300); do curl -sf -o /dev/null "http://127.0.0.1:$port/readyz" && break; sleep 0.05; done
kill -0 "$hub_pid" 2>/dev/null || { echo "the hub did not start:" >&2; tail -n 20 "$work/hub.log" >&2; exit 1; }
hub="http://127.0.0.1:$port"

"$python" "$helper" receipts-load "$uri" "$devices" "$work/secrets"
admin=$("$bin_dir/msi-hub" token create --name bench-receipts-admin --role admin --mongodb-uri "$uri" | tail -n 1)
"$python" "$helper" receipts-send "$hub" "$admin" "$work/msi-key"
# The sender opens the report once the message is sent: the audience is counted then, once, and stored.
"$python" "$helper" receipts-report "$results" "$hub" "$admin" "$work/msi-key" 1 first
"$python" "$helper" quiet "$db_pid"

"$python" "$helper" receipts-run "$results" "$uri" "$hub" "$work/secrets" "$work/msi-key" "$db_pid" "$hub_pid" \
    "$connections"
"$python" "$helper" quiet "$db_pid"
"$python" "$helper" receipts-report "$results" "$hub" "$admin" "$work/msi-key" "$reports" after

if grep -qiE ' (warning|error) ' "$work/hub.log"; then
    echo "the hub's warnings and errors (the first 10 of $(grep -ciE ' (warning|error) ' "$work/hub.log")):"
    grep -iE ' (warning|error) ' "$work/hub.log" | head -n 10
fi
"$python" "$helper" receipts-table "$results" "$table"
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg); written to $table"
