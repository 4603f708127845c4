#!/usr/bin/env bash
# `make bench-enrolment` (also run by `make bench`, after the fan-out bench): a school's phones signing in, through the
# API, and a fan-out on the database they leave.
#  1. a throw-away SecantusDB, the fake FCM answering each messages:send after 50 ms and a hub speaking h2c to it
#     (FCM_HTTP2_PRIOR_KNOWLEDGE=true), which verifies person assertions signed with an HS256 secret;
#  2. 20,000 devices registered (POST /device) and bound to 20,000 persons (PUT /device/:deviceID/person, each with
#     an assertion of its own, as the school's sign-in signs them) from 16 keep-alive connections, 2,000 at a time:
#     each block's registrations/s and binds/s (issue 42: the last within 20 % of the first), their p99, the
#     database's CPU per enrolment;
#  3. a group of those persons made through the API: PUT /group/:groupID with the first 10,000 (the most a roster
#     takes), then PUT /group/:groupID/members/:personID for the rest, from the same 16 connections;
#  4. scripts/bench-fanout.sh's default-rate fan-out (one Alert to the group), then the same on a new database with
#     the devices and the group written straight into it (bench.py fanout-load): their sends/s side by side (issue
#     42: within 10 %).
# Prints the figures with issue 42's targets and the load average; appends its rows to the bench's results
# (BENCH_RESULTS, default a new bench-results/enrolment-*.jsonl), its table to bench-results/enrolment-*.txt, the
# hubs' log beside it.
#
# Environment: BENCH_ENROLMENT_DEVICES (default 20000), BENCH_ENROLMENT_CLIENTS (default 16),
# BENCH_ENROLMENT_BLOCK (default 2000), BENCH_FANOUT_TIMEOUT (seconds a fan-out may take, default 300), SCRATCH_PATH
# (default .build), BENCH_CONFIGURATION (default release; debug only to try the script itself),
# BENCH_ENROLMENT_PROFILE (a path's prefix: the database's Python stacks during each fan-out are sampled into
# PREFIX.after-enrolment.txt and PREFIX.directly-loaded.txt, collapsed stacks, py-spy raw).
set -euo pipefail
# The hubs measured send at once: the two-person rule would hold the Forced subjects' and critical messages.
export APPROVAL_DEFAULTS=off
cd "$(dirname "$0")/.."
devices=${BENCH_ENROLMENT_DEVICES:-20000}
clients=${BENCH_ENROLMENT_CLIENTS:-16}
block=${BENCH_ENROLMENT_BLOCK:-2000}
timeout=${BENCH_FANOUT_TIMEOUT:-300}
group=bench-enrolment
# The school's sign-in, as the hub is told of it: assertions signed here with this secret.
secret=bench-enrolment-assertion-secret-$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')
issuer=https://sign-in.bench.example audience=msi-bench

source scripts/bench/processes.sh
profiler_pid=""
profile_start() {  # profile_start NAME: with BENCH_ENROLMENT_PROFILE, samples the database's stacks until profile_stop
    [ -n "${BENCH_ENROLMENT_PROFILE:-}" ] || return 0
    .venv/bin/pip install -q py-spy
    .venv/bin/py-spy record --pid "$db_pid" --rate 200 --format raw --output "$BENCH_ENROLMENT_PROFILE.$1.txt" \
        --nonblocking >>"$work/profile.log" 2>&1 &
    profiler_pid=$!
}
profile_stop() {
    if [ -n "$profiler_pid" ]; then kill -INT "$profiler_pid" 2>/dev/null; wait "$profiler_pid" 2>/dev/null || true; fi
    profiler_pid=""
}
bench_begin enrolment msi-hub fake-fcm
start_database msi_bench_enrolment
start_fake --latency 50ms
start_hub() {  # start_hub PORT: a hub speaking h2c to the fake and verifying the bench's assertions, ready; sets hub_pid
    env GOOGLE_APPLICATION_CREDENTIALS="$credentials" FCM_ENDPOINT="$fake_url" FCM_HTTP2_PRIOR_KNOWLEDGE=true \
        DEVICE_REGISTRATIONS_PER_MINUTE=1000000 PERSON_ASSERTION_SECRET="$secret" PERSON_ASSERTION_ISSUER="$issuer" \
        PERSON_ASSERTION_AUDIENCE="$audience" \
        "$bin_dir/msi-hub" serve --port "$1" --mongodb-uri "$uri" >>"$work/hub.log" 2>&1 &
    hub_pid=$!
    wait_for_hub "$1"
}

# 2. The enrolment, through the API.
port=$(free_port)
start_hub "$port"
hub="http://127.0.0.1:$port"
"$python" "$helper" enrolment-run "$results" "$uri" "$hub" "$secret" "$issuer" "$audience" "$db_pid" "$hub_pid" \
    "$devices" "$clients" "$block"

# 3. The group, through the API.
admin=$(admin_token bench-enrolment-admin)
"$python" "$helper" enrolment-group "$results" "$hub" "$admin" "$group" "$devices" "$clients"
"$python" "$helper" quiet "$db_pid"

# 4. The fan-out on the enrolled database, then on one whose devices and group were written straight into it.
profile_start after-enrolment
"$python" "$helper" enrolment-fanout "$results" "after enrolment" "$uri" "$hub" "$admin" "$fake_url" "$db_pid" \
    "$hub_pid" "$fake_pid" "$group" "$devices" "$timeout"
profile_stop
stop "$hub_pid"; hub_pid=""
stop "$db_pid"; db_pid=""
start_database msi_bench_enrolment_direct
port=$(free_port)
start_hub "$port"  # it makes its indexes before the devices are written, as in scripts/bench-fanout.sh
hub="http://127.0.0.1:$port"
"$python" "$helper" fanout-load "$uri" "$devices" "$group"
admin=$(admin_token bench-enrolment-admin)
"$python" "$helper" quiet "$db_pid"
profile_start directly-loaded
"$python" "$helper" enrolment-fanout "$results" "directly loaded" "$uri" "$hub" "$admin" "$fake_url" "$db_pid" \
    "$hub_pid" "$fake_pid" "$group" "$devices" "$timeout"
profile_stop
stop "$hub_pid"; hub_pid=""

hub_warnings
"$python" "$helper" enrolment-table "$results" "$table"
grep -v 'password:' "$work/hub.log" >"bench-results/enrolment-$stamp.hub.log" || true  # not the first user's password
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg); written to $table (the hubs' log: ${table%.txt}.hub.log)"
