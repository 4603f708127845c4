#!/usr/bin/env bash
# Runs a command against a throw-away test database: starts SecantusDB in memory on a free port,
# exports MONGODB_URI (and DB_PORT, DB_STORAGE for tests that restart it), runs the command,
# and stops the database whatever the command's outcome. Exits with the command's status.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
workdir=$(mktemp -d)
log="$workdir/secantus.log"
port=$(scripts/database.sh "$workdir/data" "$log")
stop() {
    pkill -P $$ -f "secantus" 2>/dev/null || true
    [ -f "$log.pid" ] && kill "$(cat "$log.pid")" 2>/dev/null || true
    # a test may have restarted the database on the same port: stop that one too
    pkill -f "secantus --host 127.0.0.1 --port $port " 2>/dev/null || true
    rm -rf "$workdir"
}
trap stop EXIT
export MONGODB_URI=$(scripts/database-uri.sh "$port" msi)
export DB_PORT=$port DB_STORAGE="$workdir/data" DB_LOG="$log"
echo "test database: $MONGODB_URI (SecantusDB, pid $(cat "$log.pid"))"
status=0
"$@" || status=$?
exit $status
