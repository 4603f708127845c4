#!/usr/bin/env bash
# `make bench-archive`: what an insert into `message` costs the database with the legacy hub's index (`_id`), with
# msi-hub's (history, catch-up, the outbox), and with those and the five partial queue indexes the archive had before
# its rare queues moved to `message_queues` (scripts/bench/archive_indexes.py). Each shape on a fresh database, the
# three shapes in turn, BENCH_ARCHIVE_ROUNDS times (default 2), with the load average before and after.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
rounds=${BENCH_ARCHIVE_ROUNDS:-2}
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
for _ in $(seq "$rounds"); do
    for shape in before now legacy; do
        scripts/with-test-database.sh bash -c \
            ".venv/bin/python scripts/bench/archive_indexes.py \"\$DB_PORT\" \"\$(cat \"\$DB_LOG.pid\")\" $shape" |
            grep indexes
    done
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
