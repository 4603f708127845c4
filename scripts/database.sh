#!/usr/bin/env bash
# Starts SecantusDB (a MongoDB-wire server) on a free loopback port and prints its port.
#   scripts/database.sh STORAGE LOGFILE   (STORAGE is a directory or :memory:)
# The server's pid is written to $STORAGE.pid (or the log's name + .pid for :memory:).
set -euo pipefail
cd "$(dirname "$0")/.."
storage=$1
log=$2
port=${DB_PORT:-$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()')}
.venv/bin/python -m secantus --host 127.0.0.1 --port "$port" --storage-path "$storage" --log-level WARNING >"$log" 2>&1 &
pid=$!
echo "$pid" >"$log.pid"
for _ in $(seq 1 100); do
    if python3 -c "import socket,sys; s=socket.socket(); s.settimeout(0.2); sys.exit(s.connect_ex(('127.0.0.1', $port)))" 2>/dev/null; then
        echo "$port"
        exit 0
    fi
    kill -0 "$pid" 2>/dev/null || { echo "the test database failed to start:" >&2; cat "$log" >&2; exit 1; }
    sleep 0.1
done
echo "the test database did not listen on port $port within 10 s" >&2
kill "$pid" 2>/dev/null || true
exit 1
