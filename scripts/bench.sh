#!/usr/bin/env bash
# `make bench`: measures the hub (release build) against nginx serving the same bytes as a static file,
# with wrk (one thread) over loopback, and the relay's throughput to a fake FCM.
#
# Starts a throw-away SecantusDB with a generated cube (fixtures/generate-cube.py), the fake FCM
# (`fake-fcm`), the hub and nginx; runs GET /channel at 16 and 128 connections, conditional GET,
# gzip GET, a mixed phase (GETs beside POSTs), the database's floor (POST's documents inserted with insert_one by 16 clients), POST /message
# at 16 connections (every 201 checked durable; the database's CPU per message until the hub has relayed it,
# and the lag from 201 to the fake FCM), then stores messages with
# the relay off and times their relay by a fresh hub. The sustained phase POSTs for a minute at 16 and at 64
# connections while the hub relays (the oldest unsent age every second, the drain after the load). Prints a table with each figure's ratio to
# nginx's and issue 8's targets, and writes it to bench-results/. Every process it starts is stopped
# on exit. Then scripts/bench-devices.sh, scripts/bench-fanout.sh, scripts/bench-enrolment.sh,
# scripts/bench-receipts.sh, scripts/bench-rooms.sh, scripts/bench-schedule.sh and scripts/bench-digest.sh run, with
# processes of their own.
#
# Environment: BENCH_DURATION (seconds per GET/POST run, default 15), BENCH_SHORT_DURATION (conditional
# and gzip runs, default 10), BENCH_RELAY_MESSAGES (default 2000), BENCH_RELAY_TIMEOUT (seconds the relay
# may take before the run reports what was sent by then, default 60), BENCH_SUSTAINED_DURATION (seconds of each
# sustained run, default 60), SCRATCH_PATH (default .build).
set -euo pipefail
# The hubs measured send at once: the two-person rule would hold the Forced subjects' and critical messages.
export APPROVAL_DEFAULTS=off
cd "$(dirname "$0")/.."

duration=${BENCH_DURATION:-15}
short=${BENCH_SHORT_DURATION:-10}
relay_messages=${BENCH_RELAY_MESSAGES:-2000}
relay_timeout=${BENCH_RELAY_TIMEOUT:-60}
sustained=${BENCH_SUSTAINED_DURATION:-60}
scratch=${SCRATCH_PATH:-.build}
bench_started=$(date +%s)

# MARK: tools and builds

scripts/install-deps.sh nginx-light wrk
nginx=$(command -v nginx || echo /usr/sbin/nginx)

swift build -c release --scratch-path "$scratch" --product msi-hub
swift build -c release --scratch-path "$scratch" --product fake-fcm
bin_dir=$(swift build -c release --scratch-path "$scratch" --show-bin-path)
hub_bin=$bin_dir/msi-hub
fake_bin=$bin_dir/fake-fcm
python=.venv/bin/python
helper=scripts/bench/bench.py

# MARK: processes, stopped on exit

work=$(mktemp -d "${TMPDIR:-/tmp}/msi-bench.XXXXXX")
chmod 755 "$work"  # nginx's workers may run as another user
db_pid="" fake_pid="" hub_pid="" nginx_pid=""
stop() {  # stop PID: SIGTERM and wait for it
    [ -n "$1" ] || return 0
    kill "$1" 2>/dev/null || true
    wait "$1" 2>/dev/null || true
}
cleanup() {
    local status=$?
    set +e  # clean up everything, whatever fails
    if [ -s "$work/relay-hub.pid" ]; then kill "$(cat "$work/relay-hub.pid")" 2>/dev/null || true; fi
    stop "$hub_pid"; stop "$nginx_pid"; stop "$fake_pid"; stop "$db_pid"
    if [ "$status" -ne 0 ] && [ -d "$work" ]; then
        echo "make bench failed; the last lines of the logs:" >&2
        for log in "$work"/hub.log "$work"/fcm.log "$work"/db.log "$work"/nginx/error.log; do
            if [ -s "$log" ]; then echo "== $log" >&2; tail -n 20 "$log" >&2; fi
        done
    fi
    rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}
wait_for() {  # wait_for URL PID: until URL answers 2xx, or fail when PID has exited
    for _ in $(seq 1 300); do
        curl -sf -o /dev/null "$1" && return 0
        kill -0 "$2" 2>/dev/null || { echo "the process serving $1 exited" >&2; return 1; }
        sleep 0.1
    done
    echo "$1 did not answer within 30 s" >&2
    return 1
}

# The database, with the generated cube and a communicator's token.
db_port=$(scripts/database.sh :memory: "$work/db.log")
db_pid=$(cat "$work/db.log.pid")
# Every client of the bench (the hub, the floor's and the helpers' pymongo) reaches it as `make run`'s hub does.
uri=$(scripts/database-uri.sh "$db_port" msi_bench)
python3 fixtures/generate-cube.py --out "$work/cube.json"
"$python" "$helper" load "$uri" "$work/cube.json"
token=$("$hub_bin" token create --name bench-sender --role communicator --mongodb-uri "$uri" | tail -n 1)
topics=$("$python" "$helper" topics "$work/cube.json" bench-sender)
read -r alert_topic info_topic <<<"$topics"

# The fake FCM.
"$fake_bin" --port 0 --state-dir "$work/fcm" >"$work/fcm.json" 2>"$work/fcm.log" &
fake_pid=$!
for _ in $(seq 1 100); do [ -s "$work/fcm.json" ] && break; sleep 0.1; done
fake_url=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["base_url"])' "$work/fcm.json")
credentials=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["credentials"])' "$work/fcm.json")

start_hub() {  # start_hub PORT [VAR=VALUE...]: the hub in the background, its pid in hub_pid
    local port=$1
    shift
    env GOOGLE_APPLICATION_CREDENTIALS="$credentials" FCM_ENDPOINT="$fake_url" "$@" \
        "$hub_bin" serve --port "$port" --mongodb-uri "$uri" >>"$work/hub.log" 2>&1 &
    hub_pid=$!
    wait_for "http://127.0.0.1:$port/readyz" "$hub_pid"
}
hub_port=$(free_port)
start_hub "$hub_port"
hub="http://127.0.0.1:$hub_port"

# nginx, serving the exact bytes the hub serves (plain and gzip).
mkdir -p "$work/nginx/www" "$work/nginx/tmp"
curl -sf -o "$work/nginx/www/channel" "$hub/channel"
curl -sf -H "Accept-Encoding: gzip" -o "$work/nginx/www/channel.gz" "$hub/channel"
gzip -dc "$work/nginx/www/channel.gz" | cmp -s - "$work/nginx/www/channel" \
    || { echo "the hub's gzip body does not decompress to its plain body" >&2; exit 1; }
touch -r "$work/nginx/www/channel" "$work/nginx/www/channel.gz"
chmod -R a+rX "$work/nginx"
nginx_port=$(free_port)
sed -e "s|@PREFIX@|$work/nginx|g" -e "s|@PORT@|$nginx_port|g" scripts/bench/nginx.conf >"$work/nginx/nginx.conf"
"$nginx" -p "$work/nginx" -c "$work/nginx/nginx.conf" -g "daemon off;" >>"$work/nginx/error.log" 2>&1 &
nginx_pid=$!
static="http://127.0.0.1:$nginx_port"
wait_for "$static/channel" "$nginx_pid"
curl -sf "$static/channel" | cmp -s - "$work/nginx/www/channel" \
    || { echo "nginx does not serve the hub's bytes" >&2; exit 1; }
curl -sf -H "Accept-Encoding: gzip" "$static/channel" | cmp -s - "$work/nginx/www/channel.gz" \
    || { echo "nginx does not serve the hub's gzip bytes" >&2; exit 1; }

etag() { curl -sf -D - -o /dev/null "$1" | tr -d '\r' | awk 'tolower($1) == "etag:" { print $2 }'; }
hub_etag=$(etag "$hub/channel")
nginx_etag=$(etag "$static/channel")
for pair in "$hub $hub_etag" "$static $nginx_etag"; do
    set -- $pair
    code=$(curl -s -o /dev/null -w "%{http_code}" -H "If-None-Match: $2" "$1/channel")
    [ "$code" = 304 ] || { echo "$1/channel answered $code, not 304, to If-None-Match: $2" >&2; exit 1; }
done

# MARK: measurements

mkdir -p bench-results
stamp=$(date -u +%Y%m%dT%H%M%SZ)
results=bench-results/bench-$stamp.jsonl
"$python" "$helper" meta "$results" "date=$(date -u '+%Y-%m-%d %H:%M UTC')" "cpus=$(nproc)" \
    "load=load average $(cut -d' ' -f1-3 /proc/loadavg) before the run" \
    "nginx=$("$nginx" -v 2>&1 | sed 's|.*/||')" "cube_bytes=$(stat -c %s "$work/nginx/www/channel")" \
    "gzip_bytes=$(stat -c %s "$work/nginx/www/channel.gz")" "relay_concurrency=${RELAY_CONCURRENCY:-16}"
echo "cube: $(stat -c %s "$work/nginx/www/channel") bytes ($(stat -c %s "$work/nginx/www/channel.gz") gzip);" \
    "load average $(cut -d' ' -f1-3 /proc/loadavg); ${duration} s per run"

measure() {  # measure LABEL SERVER PIDS WRK-ARGS...
    "$python" "$helper" wrk "$results" "$1" "$2" "$3" "$db_pid" -- "${@:4}"
}
wrk -t1 -c16 -d2s "$hub/channel" >/dev/null    # warm-up, not measured
wrk -t1 -c16 -d2s "$static/channel" >/dev/null

for connections in 16 128; do
    for server in hub nginx; do
        if [ $server = hub ]; then url=$hub pids=$hub_pid; else url=$static pids=$nginx_pid; fi
        measure "GET /channel, $connections conn" $server "$pids" \
            -t1 -c"$connections" -d"${duration}s" --latency "$url/channel"
    done
done
measure "conditional GET (304), 16 conn" hub "$hub_pid" \
    -t1 -c16 -d"${short}s" --latency -H "If-None-Match: $hub_etag" "$hub/channel"
measure "conditional GET (304), 16 conn" nginx "$nginx_pid" \
    -t1 -c16 -d"${short}s" --latency -H "If-None-Match: $nginx_etag" "$static/channel"
for server in hub nginx; do
    if [ $server = hub ]; then url=$hub pids=$hub_pid; else url=$static pids=$nginx_pid; fi
    measure "gzip GET, 16 conn" $server "$pids" \
        -t1 -c16 -d"${short}s" --latency -H "Accept-Encoding: gzip" "$url/channel"
done

# The database's own floor: POST's documents inserted straight into a copy of `message` by 16 clients (the copy
# stays: dropping it slows SecantusDB's inserts after it, see post.py).
"$python" "$helper" floor "$results" "$uri" "$db_pid" "$duration" "$alert_topic" "$info_topic"
# and what a message cost the legacy hub's database at least: its documents, with its one index (`_id`).
"$python" "$helper" floor "$results" "$uri" "$db_pid" "$duration" "$alert_topic" "$info_topic" legacy

export BENCH_TOKEN=$token BENCH_ALERT_TOPIC=$alert_topic BENCH_INFO_TOPIC=$info_topic
export BENCH_KEYS_FILE=$work/post-keys.txt
db_ticks=$("$python" "$helper" ticks "$db_pid")
post_started=$(date +%s.%N)
measure "POST /message, 16 conn" hub "$hub_pid" \
    -t1 -c16 -d"${duration}s" --latency -s scripts/bench/post-message.lua "$hub/message"
# The hub relays as it stores: a message's database cost runs from its POST until its outcome is written.
"$python" "$helper" relaycost "$results" "$uri" "$db_pid" "$db_ticks" "$fake_url" "$BENCH_KEYS_FILE" "$post_started" 60
"$python" "$helper" durable "$results" "$uri" "$BENCH_KEYS_FILE"
# The mixed phase: GET /channel (plain, then conditional) at 16 connections while POST /message runs at 16
# connections beside it, against the same runs without the writes above. nginx serving the same bytes beside the
# same POSTs is the control: what the machine's two cores, busy with the writes, do to any server's p99.
mixed=$(( duration > 4 ? duration / 2 : 2 ))
BENCH_KEYS_FILE=$work/mixed-keys.txt wrk -t1 -c16 -d"$(( 4 * mixed + 5 ))s" -s scripts/bench/post-message.lua \
    "$hub/message" >"$work/mixed-post.txt" 2>&1 &
mixed_post=$!
sleep 1
measure "mixed: GET /channel, 16 conn" hub "$hub_pid" -t1 -c16 -d"${mixed}s" --latency "$hub/channel"
measure "mixed: GET /channel, 16 conn" nginx "$nginx_pid" -t1 -c16 -d"${mixed}s" --latency "$static/channel"
measure "mixed: conditional GET, 16 conn" hub "$hub_pid" \
    -t1 -c16 -d"${mixed}s" --latency -H "If-None-Match: $hub_etag" "$hub/channel"
measure "mixed: conditional GET, 16 conn" nginx "$nginx_pid" \
    -t1 -c16 -d"${mixed}s" --latency -H "If-None-Match: $nginx_etag" "$static/channel"
wait "$mixed_post" || true
"$python" "$helper" mixedposts "$results" "$work/mixed-post.txt"
"$python" "$helper" drain "$uri" 30
# Sustained load (issue 28): a minute of POSTs at 16, then 64 connections, while the hub relays.
for connections in 16 64; do
    "$python" "$helper" sustained "$results" "$uri" "$hub" "$db_pid" "$fake_url" "$sustained" "$connections" \
        "$work/sustained-keys.txt" scripts/bench/post-message.lua
done
stop "$hub_pid"; hub_pid=""

# The relay: messages stored by a hub that does not relay, then sent by a fresh hub with the defaults.
store_port=$(free_port)
start_hub "$store_port" RELAY_CONCURRENCY=0
"$python" "$helper" store "http://127.0.0.1:$store_port" "$token" "$alert_topic" "$info_topic" "$relay_messages"
stop "$hub_pid"; hub_pid=""
relay_port=$(free_port)
"$python" "$helper" relay "$results" "$uri" "$fake_url" "$db_pid" "$fake_pid" "$work/relay-hub.pid" \
    "$work/hub.log" "$relay_timeout" "http://127.0.0.1:$relay_port" -- env GOOGLE_APPLICATION_CREDENTIALS="$credentials" FCM_ENDPOINT="$fake_url" \
    "$hub_bin" serve --port "$relay_port" --mongodb-uri "$uri"

# MARK: the table
"$python" "$helper" table "$results" "bench-results/bench-$stamp.txt"
cp "bench-results/bench-$stamp.txt" bench-results/latest.txt
echo "written to bench-results/bench-$stamp.txt (wrk's output: $results.wrk.txt) ($(( $(date +%s) - bench_started )) s in all)"

# Devices: registrations and the subscription reconciler against the cap (its own processes and table).
SCRATCH_PATH="$scratch" scripts/bench-devices.sh

# The fan-out of a message to a group, device by device over HTTP/2 (its own processes; its rows join this run's
# results, and the table is written again with its section).
SCRATCH_PATH="$scratch" BENCH_RESULTS="$results" scripts/bench-fanout.sh
# 20,000 devices registered and bound through the API, then the same fan-out on the database they leave (its own
# processes; its rows join this run's results).
SCRATCH_PATH="$scratch" BENCH_RESULTS="$results" scripts/bench-enrolment.sh
# Receipts from 20,000 devices and the reach report's latency (its own processes; its rows join this run's results).
SCRATCH_PATH="$scratch" BENCH_RESULTS="$results" scripts/bench-receipts.sh
# Rooms whose members post through the hub (its own processes; its rows join this run's results).
SCRATCH_PATH="$scratch" BENCH_RESULTS="$results" scripts/bench-rooms.sh
SCRATCH_PATH="$scratch" BENCH_RESULTS="$results" scripts/bench-schedule.sh
# The daily digests of one minute (its own processes; its rows join this run's results).
SCRATCH_PATH="$scratch" BENCH_RESULTS="$results" scripts/bench-digest.sh
"$python" "$helper" table "$results" "bench-results/bench-$stamp.txt" >/dev/null
cp "bench-results/bench-$stamp.txt" bench-results/latest.txt
