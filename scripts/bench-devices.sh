#!/usr/bin/env bash
# `make bench-devices` (also run at the end of `make bench`): 10,000 device registrations at 16 connections
# against the release hub (a Python client, scripts/bench/register_devices.py), then the time until every subscription they need is applied at a
# fake FCM with FCM_SUBSCRIPTION_RATE=3000 (Google's documented limit), beside what that cap allows.
#
# The cube is the legacy fixture: one Forced and one Recommended subject, so each device needs two
# subscriptions. Environment: BENCH_DEVICES (default 10000), BENCH_SUBSCRIPTION_RATE (default 3000),
# SCRATCH_PATH (default .build), BENCH_CONFIGURATION (default release).
set -euo pipefail
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
uri="mongodb://127.0.0.1:$db_port/msi_bench_devices"
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

port=$(free_port)
env GOOGLE_APPLICATION_CREDENTIALS="$credentials" FCM_ENDPOINT="$fake_url" FCM_SUBSCRIPTION_RATE="$rate" \
    DEVICE_REGISTRATIONS_PER_MINUTE=1000000 "$bin_dir/msi-hub" serve --port "$port" --mongodb-uri "$uri" >"$work/hub.log" 2>&1 &
hub_pid=$!
for _ in $(seq 1 300); do curl -sf -o /dev/null "http://127.0.0.1:$port/readyz" && break; sleep 0.1; done
kill -0 "$hub_pid" 2>/dev/null || { echo "the hub did not start:" >&2; tail -n 20 "$work/hub.log" >&2; exit 1; }

# One registration by hand first: the run is meaningless if it is refused.
curl -sf -o /dev/null -H 'Content-Type: application/json' -d '{"registration": "bench-check", "platform": "ios"}' \
    "http://127.0.0.1:$port/device" || { echo "POST /device failed:" >&2; tail -n 20 "$work/hub.log" >&2; exit 1; }
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
started=$(date +%s.%N)
"$python" scripts/bench/register_devices.py 127.0.0.1 "$port" "$devices" 16
registered=$(date +%s.%N)
pending() { curl -sf "http://127.0.0.1:$port/metrics" | awk '$1 == "msi_subscriptions_pending" { print $2 }'; }
while :; do
    left=$(pending || echo 1)
    [ "${left%.*}" = "0" ] && break
    sleep 0.2
    [ "$SECONDS" -gt 900 ] && { echo "not all applied within the run's 900 s ($left pending)"; break; }
done
applied=$(date +%s.%N)
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "$devices" "$rate" "$started" "$registered" "$applied" <<'PY'
import sys
devices, rate = int(sys.argv[1]), int(sys.argv[2])
started, registered, applied = map(float, sys.argv[3:6])
subscriptions = devices * 2
ideal = subscriptions / rate
took = applied - started
print(f"subscriptions applied at the fake: {subscriptions} in {took:.1f} s from the first registration "
      f"({subscriptions / took:.0f}/s); the cap allows {ideal:.1f} s -> {took / ideal:.2f}x "
      f"{'PASS' if took <= ideal * 1.1 else 'MISS'} (target within 10 %)")
PY
