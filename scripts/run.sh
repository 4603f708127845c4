#!/usr/bin/env bash
# `make run`: builds the hub and starts it. Without MONGODB_URI, it first starts the embedded
# database (SecantusDB, data kept under var/db) on port 27117, and stops it when the hub stops.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
swift build --product msi-hub ${SWIFT_BUILD_FLAGS:-}
binary="$(swift build --product msi-hub --show-bin-path ${SWIFT_BUILD_FLAGS:-})/msi-hub"

if [ -z "${MONGODB_URI:-}" ]; then
    mkdir -p var
    port=${DB_PORT:-27117}
    if ! python3 -c "import socket,sys; s=socket.socket(); s.settimeout(0.3); sys.exit(s.connect_ex(('127.0.0.1', $port)))" 2>/dev/null; then
        DB_PORT=$port scripts/database.sh "$PWD/var/db" var/secantus.log >/dev/null
        trap 'kill "$(cat var/secantus.log.pid)" 2>/dev/null || true' EXIT
        echo "msi-hub: started the embedded database (data in var/db, log in var/secantus.log)"
    fi
    export MONGODB_URI=$(scripts/database-uri.sh "$port" msi)
fi
echo "msi-hub: database $MONGODB_URI"
echo "msi-hub: serving on http://${HOST:-127.0.0.1}:${PORT:-8080}  (Ctrl-C stops it)"
"$binary" serve
