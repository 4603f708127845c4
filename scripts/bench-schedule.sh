#!/usr/bin/env bash
# `make bench-schedule` (also run by `make bench`): reminders of many events due within one minute.
#  1. a throw-away SecantusDB, the fake FCM (50 ms answers) and a hub speaking HTTP/2 to it;
#  2. BENCH_SCHEDULE_PERSONS persons (default 100), a phone each, written straight into the database;
#  3. BENCH_SCHEDULE_EVENTS events (default 10,000) made through POST /event, half to one person, half to the
#     legacy fixture's "Opening hours" subject, with two
#     reminders (PT1M, PT30S) whose times all fall in one minute starting well after the last event is made;
#  4. then: the time from each reminder's due time to its message being stored for the relay (p50, p99, max), how
#     many were stored twice or not at all, the database's and the hub's CPU per reminder over that minute, and the
#     claims the idle worker makes a second before the minute.
# Prints the figures with issue 44's targets and appends its rows to BENCH_RESULTS (default a new
# bench-results/schedule-*.jsonl), its table to bench-results/schedule-*.txt.
set -euo pipefail
export APPROVAL_DEFAULTS=off
cd "$(dirname "$0")/.."
persons=${BENCH_SCHEDULE_PERSONS:-100}
events=${BENCH_SCHEDULE_EVENTS:-10000}

scripts/install-deps.sh nghttp2-client
source scripts/bench/processes.sh
bench_begin schedule msi-hub fake-fcm
start_database msi_bench_schedule
"$python" "$helper" receipts-cube "$uri" fixtures/legacy-channel.json
start_fake --latency 50ms
port=$(free_port)
env GOOGLE_APPLICATION_CREDENTIALS="$credentials" FCM_ENDPOINT="$fake_url" FCM_HTTP2_PRIOR_KNOWLEDGE=true \
    "$bin_dir/msi-hub" serve --port "$port" --mongodb-uri "$uri" >>"$work/hub.log" 2>&1 &
hub_pid=$!
wait_for_hub "$port"
token=$(admin_token bench-schedule)
"$python" "$helper" schedule-load "$uri" "$persons"
"$python" "$helper" schedule-run "$results" "$uri" "http://127.0.0.1:$port" "$token" "$db_pid" "$hub_pid" \
    "$persons" "$events"
hub_warnings
"$python" "$helper" schedule-table "$results" "$table"
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg); written to $table"
