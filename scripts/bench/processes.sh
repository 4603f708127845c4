# What scripts/bench-fanout.sh, bench-enrolment.sh and bench-receipts.sh share, sourced after `cd` to the checkout:
# the builds, the results' names, a work directory, and the throw-away database, fake FCM and hubs they start, all
# stopped on exit (the last lines of their logs shown when the bench failed).
#
#   bench_begin NAME PRODUCT...   builds the products (SCRATCH_PATH, BENCH_CONFIGURATION) and sets bin_dir, python,
#                                 helper, stamp, results (BENCH_RESULTS, default bench-results/NAME-STAMP.jsonl),
#                                 table and work; prints the load average
#   start_database DATABASE       a new in-memory SecantusDB: db_pid, and uri naming DATABASE
#   start_fake ARG...             the fake FCM with ARGs: fake_pid, fake_url, credentials
#   wait_for_hub PORT             until the hub ($hub_pid) on PORT is ready; exits when it is not running
#   stop PID, free_port, admin_token NAME, hub_warnings

bench_begin() {
    bench_name=$1; shift
    local scratch=${SCRATCH_PATH:-.build} configuration=${BENCH_CONFIGURATION:-release} product
    for product in "$@"; do swift build -c "$configuration" --scratch-path "$scratch" --product "$product"; done
    bin_dir=$(swift build -c "$configuration" --scratch-path "$scratch" --show-bin-path)
    python=.venv/bin/python
    helper=scripts/bench/bench.py
    mkdir -p bench-results
    stamp=$(date -u +%Y%m%dT%H%M%SZ)
    results=${BENCH_RESULTS:-bench-results/$bench_name-$stamp.jsonl}
    table=bench-results/$bench_name-$stamp.txt
    work=$(mktemp -d "${TMPDIR:-/tmp}/msi-bench-$bench_name.XXXXXX")
    db_pid="" fake_pid="" hub_pid=""
    trap bench_cleanup EXIT
    trap 'exit 130' INT TERM
    echo "load average before the $bench_name bench: $(cut -d' ' -f1-3 /proc/loadavg) ($(nproc) CPUs)"
}

bench_cleanup() {
    local status=$? pid log
    set +e
    for pid in $hub_pid $fake_pid $db_pid; do kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; done
    if [ "$status" -ne 0 ]; then
        echo "make bench-$bench_name failed; the last lines of the logs:" >&2
        for log in "$work"/hub.log "$work"/fcm.log "$work"/db*.log; do
            if [ -s "$log" ]; then echo "== $log" >&2; tail -n 20 "$log" >&2; fi
        done
    fi
    rm -rf "$work"
}

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'; }

stop() { [ -z "$1" ] || { kill "$1" 2>/dev/null || true; wait "$1" 2>/dev/null || true; }; }

start_database() {
    local port
    port=$(scripts/database.sh :memory: "$work/db-$1.log")
    db_pid=$(cat "$work/db-$1.log.pid")
    uri=$(scripts/database-uri.sh "$port" "$1")
}

start_fake() {
    "$bin_dir/fake-fcm" --port 0 --state-dir "$work/fcm" "$@" >"$work/fcm.json" 2>"$work/fcm.log" &
    fake_pid=$!
    for _ in $(seq 1 100); do [ -s "$work/fcm.json" ] && break; sleep 0.1; done
    fake_url=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["base_url"])' "$work/fcm.json")
    credentials=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["credentials"])' "$work/fcm.json")
}

wait_for_hub() {
    for _ in $(seq 1 300); do curl -sf -o /dev/null "http://127.0.0.1:$1/readyz" && break; sleep 0.05; done
    kill -0 "$hub_pid" 2>/dev/null || { echo "the hub did not start:" >&2; tail -n 20 "$work/hub.log" >&2; exit 1; }
}

admin_token() { "$bin_dir/msi-hub" token create --name "$1" --role admin --mongodb-uri "$uri" | tail -n 1; }

hub_warnings() {  # the hubs' warnings and errors, the first 10, when they logged any
    if grep -qiE ' (warning|error) ' "$work/hub.log"; then
        echo "the hubs' warnings and errors (the first 10 of $(grep -ciE ' (warning|error) ' "$work/hub.log")):"
        grep -iE ' (warning|error) ' "$work/hub.log" | head -n 10
    fi
}
