#!/usr/bin/env bash
# `make bench-devices` (also run at the end of `make bench`), against the release hub and a fake FCM, in three phases:
#  1. 10,000 device registrations at 16 connections (a Python client, scripts/bench/register_devices.py) on a hub
#     that does not talk to FCM (RELAY_CONCURRENCY=0), so registration is measured alone: requests/s and p99;
#  2. a hub with the reconciler starts with their 20,000 subscriptions pending, FCM_SUBSCRIPTION_RATE=3000 (Google's
#     documented limit): the time until the fake holds them all, beside what the cap allows, and the most calls the
#     fake saw in one second; then the time until the hub has recorded them all (its records follow the calls);
#  3. once the database is quiet again, a new Forced subject (POST /subject) reaches the 10,000 devices: how long
#     the POST takes (one rollout document, whatever the registry's size), the time from the POST until the fake
#     holds the 10,000 new subscriptions, beside what the cap allows, and until the hub has recorded them.
#
# The cube is the legacy fixture: one Forced and one Recommended subject, so each device needs two subscriptions.
# Progress is read from the fake (GET /_subscriptions), not from the hub's metrics, so polling costs the database
# nothing. Environment: BENCH_DEVICES (default 10000), BENCH_SUBSCRIPTION_RATE (default 3000), SCRATCH_PATH
# (default .build), BENCH_CONFIGURATION (default release).
set -euo pipefail
# The hubs measured send at once: the two-person rule would hold the Forced subjects' and critical messages.
export APPROVAL_DEFAULTS=off
cd "$(dirname "$0")/.."
devices=${BENCH_DEVICES:-10000}
rate=${BENCH_SUBSCRIPTION_RATE:-3000}
scratch=${SCRATCH_PATH:-.build}
configuration=${BENCH_CONFIGURATION:-release}  # debug only to try the script itself

swift build -c "$configuration" --scratch-path "$scratch" --product msi-hub
swift build -c "$configuration" --scratch-path "$scratch" --product fake-fcm
bin_dir=$(swift build -c "$configuration" --scratch-path "$scratch" --show-bin-path)
python=.venv/bin/python

work=$(mktemp -d "${TMPDIR:-/tmp}/msi-bench-devices.XXXXXX")
db_pid="" fake_pid="" hub_pid=""
cleanup() {
    set +e
    for pid in $hub_pid $fake_pid $db_pid; do kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; done
    rm -rf "$work"
}
trap cleanup EXIT
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'; }

db_port=$(scripts/database.sh :memory: "$work/db.log")
db_pid=$(cat "$work/db.log.pid")
uri=$(scripts/database-uri.sh "$db_port" msi_bench_devices)
"$python" - "$uri" <<'PY'
import json, sys, pymongo
from bson import json_util
client = pymongo.MongoClient(sys.argv[1])
channel = json_util.loads(open("fixtures/legacy-channel.json").read())
client.get_default_database()["icube"].insert_one(channel)
PY

"$bin_dir/fake-fcm" --port 0 --state-dir "$work/fcm" >"$work/fcm.json" 2>"$work/fcm.log" &
fake_pid=$!
for _ in $(seq 1 100); do [ -s "$work/fcm.json" ] && break; sleep 0.1; done
fake_url=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["base_url"])' "$work/fcm.json")
credentials=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["credentials"])' "$work/fcm.json")

fake_count() { curl -sf "$fake_url/_subscriptions" | python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["subscriptions"], d["peak_calls_per_second"])'; }
start_hub() {  # start_hub PORT ENV...: starts a hub on PORT, waits until it is ready; sets hub_pid
    local port=$1; shift
    env GOOGLE_APPLICATION_CREDENTIALS="$credentials" FCM_ENDPOINT="$fake_url" FCM_SUBSCRIPTION_RATE="$rate" \
        DEVICE_REGISTRATIONS_PER_MINUTE=1000000 "$@" "$bin_dir/msi-hub" serve --port "$port" --mongodb-uri "$uri" >>"$work/hub.log" 2>&1 &
    hub_pid=$!
    for _ in $(seq 1 300); do curl -sf -o /dev/null "http://127.0.0.1:$port/readyz" && break; sleep 0.05; done
    kill -0 "$hub_pid" 2>/dev/null || { echo "the hub did not start:" >&2; tail -n 20 "$work/hub.log" >&2; exit 1; }
}
wait_for_fake() {  # wait_for_fake COUNT: until the fake holds COUNT subscriptions (at most 900 s); prints the peak
    local held peak
    while :; do
        read -r held peak <<<"$(fake_count)"
        [ "$held" -ge "$1" ] && break
        [ "$SECONDS" -gt 1800 ] && { echo "not all applied within the run ($held of $1 at the fake)" >&2; break; }
        sleep 0.05
    done
    echo "$peak"
}
wait_for_records() {  # until no subscription is pending and no rollout is under way (the hub's records of what FCM has)
    "$python" - "$uri" <<'PY'
import sys, time, pymongo
database = pymongo.MongoClient(sys.argv[1]).get_default_database()
while (database["subscription_rollouts"].find_one({}, {"_id": 1}) is not None
       or database["device_subscriptions"].find_one({"pending": True}, {"_id": 1}) is not None):
    time.sleep(1)  # each look scans the backlog on SecantusDB: seldom, so the records are not slowed much
PY
}
verdict() {  # verdict COUNT STARTED ENDED PEAK LABEL
    python3 - "$rate" "$@" <<'PY'
import sys
rate, count = int(sys.argv[1]), int(sys.argv[2])
started, ended, peak, label = float(sys.argv[3]), float(sys.argv[4]), int(sys.argv[5]), sys.argv[6]
ideal, took = count / rate, ended - started
print(f"{label}: {count} subscriptions applied at the fake in {took:.2f} s ({count / took:.0f}/s); the cap allows "
      f"{ideal:.2f} s -> {took / ideal:.2f}x {'PASS' if took <= ideal * 1.1 else 'MISS'} (target within 10 %); "
      f"peak {peak} calls in one second at the fake {'PASS' if peak <= rate else 'MISS'} (cap {rate})")
PY
}

echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
# 1. Registration alone.
port=$(free_port)
start_hub "$port" RELAY_CONCURRENCY=0
# One registration by hand first: the run is meaningless if it is refused.
curl -sf -o /dev/null -H 'Content-Type: application/json' -d '{"registration": "bench-check", "platform": "ios"}' \
    "http://127.0.0.1:$port/device" || { echo "POST /device failed:" >&2; tail -n 20 "$work/hub.log" >&2; exit 1; }
"$python" scripts/bench/register_devices.py 127.0.0.1 "$port" "$devices" 16
kill "$hub_pid"; wait "$hub_pid" 2>/dev/null || true
subscriptions=$(( (devices + 1) * 2 ))

# 2. The backlog, applied by a hub that starts with it.
db_ticks() { awk '{print $14 + $15}' "/proc/$db_pid/stat"; }
ticks=$(db_ticks)
port=$(free_port)
started=$(date +%s.%N)
start_hub "$port"
ready=$(date +%s.%N)
peak=$(wait_for_fake "$subscriptions")
applied=$(date +%s.%N)
python3 -c 'import sys; print("the reconciling hub was ready %.2f s after its start" % (float(sys.argv[2]) - float(sys.argv[1])))' "$started" "$ready"
verdict "$subscriptions" "$ready" "$applied" "$peak" "backlog of $subscriptions"
# The records follow the calls (SubscriptionRecorder): until then GET /device/:id/subscriptions says pending.
wait_for_records
recorded=$(date +%s.%N)
python3 -c 'import sys; a, r, t, n, s = map(float, sys.argv[1:]); print("recorded in the database %.2f s after the fake held them all (%.2f s after ready); database CPU from the start until then: %.2f ms a subscription" % (r - a, r - s, t * 10 / n))' \
    "$applied" "$recorded" "$(( $(db_ticks) - ticks ))" "$subscriptions" "$ready"
# After many updates SecantusDB's storage engine goes on evicting for a while: phase 3 starts on a quiet database.
"$python" scripts/bench/bench.py quiet "$db_pid"

# 3. A new Forced subject, rolled out to every device.
admin=$("$bin_dir/msi-hub" token create --name bench-admin --role admin --mongodb-uri "$uri" | tail -n 1)
started=$(date +%s.%N)
curl -sf -o /dev/null -H "Authorization: Bearer $admin" -H 'Content-Type: application/json' \
    -d '{"name": "Bench alert", "desc": "every device", "opt": {"level": "Forced", "distribution": "Alert"}}' \
    "http://127.0.0.1:$port/subject/5a0b1c2d3e4f5a6b7c8d9e01/5a0b1c2d3e4f5a6b7c8d9e02" \
    || { echo "POST /subject failed:" >&2; tail -n 20 "$work/hub.log" >&2; exit 1; }
posted=$(date +%s.%N)
peak=$(wait_for_fake $(( subscriptions + devices + 1 )))
applied=$(date +%s.%N)
python3 -c 'import sys; print("POST /subject (a Forced subject for %s devices) answered in %.2f s" % (sys.argv[3], float(sys.argv[2]) - float(sys.argv[1])))' "$started" "$posted" "$((devices + 1))"
verdict $(( devices + 1 )) "$started" "$applied" "$peak" "a new Forced subject"
wait_for_records
python3 -c 'import sys; print("recorded in the database %.2f s after the fake held them all" % (float(sys.argv[2]) - float(sys.argv[1])))' "$applied" "$(date +%s.%N)"
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
