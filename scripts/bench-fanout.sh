#!/usr/bin/env bash
# `make bench-fanout` (also run at the end of `make bench`): a message to a group, sent device by device.
#  1. a throw-away SecantusDB, the fake FCM answering each messages:send after 50 ms (Google's round trip) and a hub
#     speaking HTTP/2 to it with prior knowledge (FCM_HTTP2_PRIOR_KNOWLEDGE=true: h2c, the fake's port speaks both);
#  2. 20,000 active devices bound to 20,000 persons and one group of all of them, written straight into the
#     database as DeviceDAO and GroupDAO write them (PUT /group takes at most 10,000 members);
#  3. one Alert POSTed to the group by an admin: sends/s from the 201 to the last send the fake accepted (its arrival
#     times), the database's CPU per delivery (from the POST until every outcome is in `deliveries`), the hub's peak
#     RSS, how long until every outcome was recorded;
#  4. the same fan-out by a hub with FCM_SEND_RATE=3000 (a second message): its rate and the most sends the fake
#     accepted in any one second;
#     then a third message at that rate, withdrawn (DELETE) a second into its fan-out: the sends the fake received
#     after the DELETE answered, against what was in flight, and the withdrawals (one to each device reached);
#  5. each device got exactly one request per message (distinct tokens at the fake);
#  6. the same fake's ceiling with h2load at the connections and streams the hub's client uses (CurlMultiClient: 4
#     connections of 100 streams).
# Prints the figures with issue 29's targets and appends its rows to the bench's results (BENCH_RESULTS, default a
# new bench-results/fanout-*.jsonl), its table to bench-results/fanout-*.txt, the hubs' log beside it.
#
# Environment: BENCH_FANOUT_DEVICES (default 20000), BENCH_FANOUT_RATE (the capped run's FCM_SEND_RATE, default
# 3000), BENCH_FANOUT_TIMEOUT (seconds a fan-out may take, default 300), BENCH_FANOUT_H2_CONNECTIONS and
# BENCH_FANOUT_H2_STREAMS (h2load's, default the hub's), BENCH_FANOUT_PROFILE (a file for the database's profile
# during the first fan-out), SCRATCH_PATH (default .build), BENCH_CONFIGURATION
# (default release; debug only to try the script itself).
set -euo pipefail
# The hubs measured send at once: the two-person rule would hold the Forced subjects' and critical messages.
export APPROVAL_DEFAULTS=off
cd "$(dirname "$0")/.."
devices=${BENCH_FANOUT_DEVICES:-20000}
rate=${BENCH_FANOUT_RATE:-3000}
timeout=${BENCH_FANOUT_TIMEOUT:-300}
group=bench-fanout

scripts/install-deps.sh nghttp2-client
source scripts/bench/processes.sh
bench_begin fanout msi-hub fake-fcm
start_database msi_bench_fanout
start_fake --latency 50ms

start_hub() {  # start_hub PORT ENV...: a hub speaking h2c to the fake, ready; sets hub_pid
    local port=$1; shift
    env GOOGLE_APPLICATION_CREDENTIALS="$credentials" FCM_ENDPOINT="$fake_url" FCM_HTTP2_PRIOR_KNOWLEDGE=true "$@" \
        "$bin_dir/msi-hub" serve --port "$port" --mongodb-uri "$uri" >>"$work/hub.log" 2>&1 &
    hub_pid=$!
    wait_for_hub "$port"
}
stop_hub() { stop "$hub_pid"; hub_pid=""; }

# The hub makes its indexes at start, before the devices and the group are written.
port=$(free_port)
start_hub "$port"
"$python" "$helper" fanout-load "$uri" "$devices" "$group"
admin=$(admin_token bench-fanout-admin)
"$python" "$helper" quiet "$db_pid"

# 3. The fan-out at the default rate (10,000/s); with BENCH_FANOUT_PROFILE=FILE, the database's Python stacks
# during it are sampled into FILE (collapsed stacks, py-spy raw; where the database's time per delivery goes).
profiler_pid=""
if [ -n "${BENCH_FANOUT_PROFILE:-}" ]; then
    .venv/bin/pip install -q py-spy
    .venv/bin/py-spy record --pid "$db_pid" --rate 200 --format raw --output "$BENCH_FANOUT_PROFILE" \
        --nonblocking >"$work/profile.log" 2>&1 &
    profiler_pid=$!
fi
"$python" "$helper" fanout-run "$results" "default rate" "$uri" "http://127.0.0.1:$port" "$admin" "$fake_url" \
    "$db_pid" "$hub_pid" "$fake_pid" "$group" "$devices" "$timeout" -
hub_log_lines=$(wc -l <"$work/hub.log")
if [ -n "$profiler_pid" ]; then kill -INT "$profiler_pid" 2>/dev/null; wait "$profiler_pid" 2>/dev/null || true; fi
stop_hub
"$python" "$helper" quiet "$db_pid"

# 4. The same, paced by FCM_SEND_RATE.
port=$(free_port)
start_hub "$port" FCM_SEND_RATE="$rate"
"$python" "$helper" fanout-run "$results" "FCM_SEND_RATE=$rate" "$uri" "http://127.0.0.1:$port" "$admin" \
    "$fake_url" "$db_pid" "$hub_pid" "$fake_pid" "$group" "$devices" "$timeout" "$rate"
"$python" "$helper" quiet "$db_pid"

# 4b. A false alarm: the same paced fan-out withdrawn a second into it (BENCH_FANOUT_WITHDRAW_AFTER): the sends the
# fake got after the DELETE answered (at most those in flight: the hub's 500 a message), and the withdrawals.
"$python" "$helper" fanout-withdraw "$results" "FCM_SEND_RATE=$rate, withdrawn" "$uri" "http://127.0.0.1:$port" \
    "$admin" "$fake_url" "$group" "$devices" "${BENCH_FANOUT_WITHDRAW_AFTER:-1}" "$timeout" 500
stop_hub

# 5. Each device once per message.
"$python" "$helper" fanout-tokens "$results" "$fake_url"

# 6. The fake's ceiling at the hub's connections and streams: CurlMultiClient.Configuration's 4 connections a host
# and 100 streams each (with libcurl before 8.0 too: PriorKnowledgeGate opens as many h2c connections); the fake's
# /_stats above shows what the hub used.
connections=${BENCH_FANOUT_H2_CONNECTIONS:-4}
streams=${BENCH_FANOUT_H2_STREAMS:-100}
source="the hub's: CurlMultiClient's connections a host and streams"
[ -z "${BENCH_FANOUT_H2_CONNECTIONS:-}${BENCH_FANOUT_H2_STREAMS:-}" ] || source="BENCH_FANOUT_H2_*"
"$python" "$helper" fanout-h2load "$results" "$fake_url" "$credentials" "$devices" "$connections" "$streams" "$source"

# The hub's log lines about the fan-out (warnings and errors), when it logged any.
if grep -qiE ' (warning|error) ' "$work/hub.log"; then
    echo "the hubs' warnings and errors (the first 10 of $(grep -ciE ' (warning|error) ' "$work/hub.log"); the first" \
        "hub's log has $hub_log_lines lines):"
    grep -iE ' (warning|error) ' "$work/hub.log" | head -n 10
fi
"$python" "$helper" fanout-table "$results" "$table"
grep -v 'password:' "$work/hub.log" >"bench-results/fanout-$stamp.hub.log" || true  # not the first user's password
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg); written to $table (the hubs' log: ${table%.txt}.hub.log)"
