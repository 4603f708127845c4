#!/usr/bin/env bash
# The hub on a machine it shares (issue 28, item 3): msi-hub on its own SecantusDB beside more hubs, each on its own
# SecantusDB (the first of them under a POST load of its own), and CPU-bound processes, all on the same cores. The
# phases of the bench in which a stall was seen: GET /channel at 16 and 128 connections, conditional GETs, then POST
# /message; with an archive of earlier messages when asked. Prints wrk's figures and counts the hub's warnings and
# errors and libmongoc's "Failed to buffer" lines (a connection broken under a request).
# Environment: BENCH_NEIGHBOURS (more hubs, default 2), BENCH_BURNERS (CPU-bound processes, default 1),
# BENCH_ARCHIVE (messages stored before the phases, default 40000), BENCH_GET_SECONDS (30), BENCH_POST_SECONDS (20),
# BENCH_POST_CONNECTIONS (16), BENCH_NEIGHBOUR_POSTS (1: the first neighbour takes POSTs all along), SCRATCH_PATH
# (.build-release), HUB_BIN (a msi-hub binary to measure instead, e.g. an older build's).
set -uo pipefail
cd "$(dirname "$0")/.."
scratch=${SCRATCH_PATH:-.build-release}
swift build -c release --scratch-path "$scratch" --product msi-hub >/dev/null 2>&1
swift build -c release --scratch-path "$scratch" --product fake-fcm >/dev/null 2>&1
hub_bin=${HUB_BIN:-$scratch/release/msi-hub}
python=.venv/bin/python
helper=scripts/bench/bench.py
neighbours=${BENCH_NEIGHBOURS:-2} burners=${BENCH_BURNERS:-1} archive=${BENCH_ARCHIVE:-40000}
get=${BENCH_GET_SECONDS:-30} post=${BENCH_POST_SECONDS:-20} post_connections=${BENCH_POST_CONNECTIONS:-16}
work=$(mktemp -d)
pids=()
cleanup() { for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null; done; wait 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'; }

"$scratch/release/fake-fcm" --port 0 --state-dir "$work/fcm" >"$work/fcm.json" 2>"$work/fcm.log" & pids+=($!)
for _ in $(seq 1 100); do [ -s "$work/fcm.json" ] && break; sleep 0.1; done
fake_url=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["base_url"])' "$work/fcm.json")
credentials=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["credentials"])' "$work/fcm.json")
python3 fixtures/generate-cube.py --out "$work/cube.json" >/dev/null
hubs=() uris=()
for n in $(seq 0 "$neighbours"); do
    port=$(scripts/database.sh :memory: "$work/db$n.log"); pids+=("$(cat "$work/db$n.log.pid")")
    uri=$(scripts/database-uri.sh "$port" msi_bench)
    "$python" "$helper" load "$uri" "$work/cube.json" >/dev/null
    hub_port=$(free_port)
    env GOOGLE_APPLICATION_CREDENTIALS="$credentials" FCM_ENDPOINT="$fake_url" \
        "$hub_bin" serve --port "$hub_port" --mongodb-uri "$uri" >>"$work/hub$n.log" 2>&1 & pids+=($!)
    for _ in $(seq 1 300); do curl -sf -o /dev/null "http://127.0.0.1:$hub_port/readyz" && break; sleep 0.1; done
    hubs+=("http://127.0.0.1:$hub_port") uris+=("$uri")
done
tokens=()
for uri in "${uris[@]}"; do
    tokens+=("$("$hub_bin" token create --name bench-sender --role communicator --mongodb-uri "$uri" | tail -n 1)")
done
read -r alert_topic info_topic <<<"$("$python" "$helper" topics "$work/cube.json" bench-sender)"
hub=${hubs[0]}
if [ "$archive" -gt 0 ]; then
    curl -sf -o /dev/null -H "Authorization: Bearer ${tokens[0]}" -H "Content-Type: application/json" \
        -d "{\"title\":\"t\",\"desc\":\"d\",\"message\":\"m\",\"topic_key\":\"$alert_topic\",\"distribution\":\"Alert\"}" "$hub/message"
    "$python" "$helper" prefill "${uris[0]}" "$archive"
fi
export BENCH_ALERT_TOPIC=$alert_topic BENCH_INFO_TOPIC=$info_topic
if [ "${BENCH_NEIGHBOUR_POSTS:-1}" = 1 ] && [ "$neighbours" -gt 0 ]; then
    BENCH_TOKEN=${tokens[1]} BENCH_KEYS_FILE=$work/neighbour-keys.txt wrk -t1 -c8 -d"$(( 2 * get + post + 15 ))s" \
        -s scripts/bench/post-message.lua "${hubs[1]}/message" >"$work/neighbour.txt" 2>&1 & pids+=($!)
fi
for _ in $(seq 1 "$burners"); do python3 -c 'while True: pass' & pids+=($!); done
echo "$hub_bin beside $neighbours hubs on their own databases and $burners" \
    "CPU-bound processes; archive $archive messages; load average $(cut -d' ' -f1-3 /proc/loadavg)"
summary() { grep -E "Requests/sec|Non-2xx|Socket errors|statuses|99%" | tr -s ' ' | paste -sd';' -; }
echo "GET /channel, 16 conn, ${get} s: $(wrk -t1 -c16 -d"${get}s" --latency "$hub/channel" | summary)"
echo "GET /channel, 128 conn, ${get} s: $(wrk -t1 -c128 -d"${get}s" --latency "$hub/channel" | summary)"
etag=$(curl -sf -D - -o /dev/null "$hub/channel" | tr -d '\r' | awk 'tolower($1) == "etag:" { print $2 }')
echo "conditional GET, 16 conn, 10 s: $(wrk -t1 -c16 -d10s --latency -H "If-None-Match: $etag" "$hub/channel" | summary)"
echo "POST /message, $post_connections conn, ${post} s: $(BENCH_TOKEN=${tokens[0]} BENCH_KEYS_FILE=$work/keys.txt \
    wrk -t1 -c"$post_connections" -d"${post}s" --latency -s scripts/bench/post-message.lua "$hub/message" | summary)"
sleep 30
echo "the hub's warnings and errors during the run and 30 s after: $(grep -cE " (warning|error|critical) " "$work/hub0.log")," \
    "libmongoc's \"Failed to buffer\": $(grep -c "Failed to buffer" "$work/hub0.log"); load average $(cut -d' ' -f1-3 /proc/loadavg)"
grep -E " (warning|error|critical) " "$work/hub0.log" | cut -c26-200 | sort | uniq -c | sort -rn | head -10
