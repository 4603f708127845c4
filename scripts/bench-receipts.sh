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

source scripts/bench/processes.sh
bench_begin receipts msi-hub
start_database msi_bench_receipts
"$python" "$helper" receipts-cube "$uri" fixtures/legacy-channel.json

port=$(free_port)
FCM_MODE=log "$bin_dir/msi-hub" serve --port "$port" --mongodb-uri "$uri" >>"$work/hub.log" 2>&1 &
hub_pid=$!
wait_for_hub "$port"
hub="http://127.0.0.1:$port"

"$python" "$helper" receipts-load "$uri" "$devices" "$work/secrets"
admin=$(admin_token bench-receipts-admin)
"$python" "$helper" receipts-send "$hub" "$admin" "$work/msi-key"
# The sender opens the report once the message is sent: the audience is counted then, once, and stored.
"$python" "$helper" receipts-report "$results" "$hub" "$admin" "$work/msi-key" 1 first
"$python" "$helper" quiet "$db_pid"

"$python" "$helper" receipts-run "$results" "$uri" "$hub" "$work/secrets" "$work/msi-key" "$db_pid" "$hub_pid" \
    "$connections"
"$python" "$helper" quiet "$db_pid"
"$python" "$helper" receipts-report "$results" "$hub" "$admin" "$work/msi-key" "$reports" after

hub_warnings
"$python" "$helper" receipts-table "$results" "$table"
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg); written to $table"
