#!/usr/bin/env bash
# `make bench-rooms` (also run by `make bench`): rooms whose members post through the hub.
#  1. a throw-away SecantusDB, the fake FCM answering each messages:send after 50 ms and a hub speaking HTTP/2 to it;
#  2. BENCH_ROOMS rooms (default 4) of BENCH_ROOM_MEMBERS members (default 500), a phone each, written straight into
#     the database as DeviceDAO and GroupDAO write them (posting: members);
#  3. members post at BENCH_ROOM_RATE posts a second (default 2) for BENCH_ROOM_SECONDS (default 30), each post to
#     every other member's phone: the time from the 201 to its first and last FCM request (p50, p99), the database's
#     and the hub's CPU per delivered post, the unread counting's share of the database's time, then 200 reads;
#     the hub counts unread messages unless BENCH_ROOM_UNREAD=off.
# Prints the figures with issue 43's targets and appends its rows to BENCH_RESULTS (default a new
# bench-results/rooms-*.jsonl), its table to bench-results/rooms-*.txt.
set -euo pipefail
export APPROVAL_DEFAULTS=off
cd "$(dirname "$0")/.."
rooms=${BENCH_ROOMS:-4}
members=${BENCH_ROOM_MEMBERS:-500}
rate=${BENCH_ROOM_RATE:-2}
seconds=${BENCH_ROOM_SECONDS:-30}

scripts/install-deps.sh nghttp2-client
source scripts/bench/processes.sh
bench_begin rooms msi-hub fake-fcm
start_database msi_bench_rooms
start_fake --latency 50ms
port=$(free_port)
env GOOGLE_APPLICATION_CREDENTIALS="$credentials" FCM_ENDPOINT="$fake_url" FCM_HTTP2_PRIOR_KNOWLEDGE=true \
    ROOM_POSTS_PER_MINUTE=1000 UNREAD_COUNTS="${BENCH_ROOM_UNREAD:-on}" "$bin_dir/msi-hub" serve --port "$port" --mongodb-uri "$uri" >>"$work/hub.log" 2>&1 &
hub_pid=$!
wait_for_hub "$port"
"$python" "$helper" rooms-load "$uri" "$rooms" "$members"
"$python" "$helper" quiet "$db_pid"
"$python" "$helper" rooms-run "$results" "$uri" "http://127.0.0.1:$port" "$fake_url" "$db_pid" "$hub_pid" \
    "$rooms" "$members" "$rate" "$seconds" 300
hub_warnings
"$python" "$helper" rooms-table "$results" "$table"
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg); written to $table"
