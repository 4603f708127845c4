#!/usr/bin/env bash
# `make bench-digest` (also run by `make bench`): the daily digests of one minute (issue 45, item 6).
#  1. a throw-away SecantusDB with the legacy fixture, the fake FCM (50 ms answers) and a hub speaking HTTP/2 to it,
#     on SCHOOL_TIME_ZONE=UTC;
#  2. BENCH_DIGEST_PERSONS persons (default 20,000), a phone each, written straight into the database;
#  3. one in BENCH_DIGEST_SHARE of them (default 3: a third) puts the fixture's "New books" subject (Information) in
#     digest mode with PUT /device/:deviceID/person/settings, all with one digest_hour a few minutes ahead (UTC);
#  4. BENCH_DIGEST_MESSAGES messages (default 50) to that subject through POST /message, one after another;
#  5. then at the digest minute: the time from the due instant to the first and the last digest at the fake, the
#     digests/s against the fan-out's (1,704/s), every digest once with the exact count, the database's CPU per digest
#     and per held message, the hub's, and a held message's send cost.
# BENCH_DIGEST_PUT_RATE (default 12) is the PUTs/s the digest time is chosen for: lower it on a slower machine;
# BENCH_DIGEST_TIMEOUT (seconds after the due instant, default 60 + a second per 100 digests) how long the digests
# are waited for before what came is reported.
# Prints the figures and appends its row to BENCH_RESULTS (default a new bench-results/digest-*.jsonl), its table
# to bench-results/digest-*.txt.
set -euo pipefail
export APPROVAL_DEFAULTS=off
cd "$(dirname "$0")/.."
persons=${BENCH_DIGEST_PERSONS:-20000}
messages=${BENCH_DIGEST_MESSAGES:-50}
share=${BENCH_DIGEST_SHARE:-3}
put_rate=${BENCH_DIGEST_PUT_RATE:-12}

scripts/install-deps.sh nghttp2-client
source scripts/bench/processes.sh
bench_begin digest msi-hub fake-fcm
start_database msi_bench_digest
"$python" "$helper" receipts-cube "$uri" fixtures/legacy-channel.json
start_fake --latency 50ms
port=$(free_port)
env GOOGLE_APPLICATION_CREDENTIALS="$credentials" FCM_ENDPOINT="$fake_url" FCM_HTTP2_PRIOR_KNOWLEDGE=true \
    SCHOOL_TIME_ZONE=UTC "$bin_dir/msi-hub" serve --port "$port" --mongodb-uri "$uri" >>"$work/hub.log" 2>&1 &
hub_pid=$!
wait_for_hub "$port"
token=$(admin_token bench-digest)
"$python" "$helper" digest-load "$uri" "$persons" "$share" "$work/digest-devices.txt"
"$python" "$helper" quiet "$db_pid"
"$python" "$helper" digest-run "$results" "$uri" "http://127.0.0.1:$port" "$fake_url" "$token" "$db_pid" "$hub_pid" \
    "$persons" "$work/digest-devices.txt" "$messages" "$put_rate"
hub_warnings
"$python" "$helper" digest-table "$results" "$table"
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg); written to $table"
