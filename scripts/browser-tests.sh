#!/usr/bin/env bash
# The portal's browser tests: selenium drives Debian's chromium against `msi-hub serve` (the debug build) on an
# ephemeral port, with the test database and the fake FCM. Expects MONGODB_URI (scripts/with-test-database.sh
# provides it) and the debug build (`swift build --build-tests`). Screenshots go to the folder it prints.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${BIN_PATH:-.build/debug}
for binary in msi-hub fake-fcm fake-oidc; do
    [ -x "$bin/$binary" ] || { echo "browser tests: $bin/$binary is missing; run swift build --build-tests" >&2; exit 1; }
done
exec .venv/bin/python Tests/Browser/portal_browser_test.py --bin "$bin" --screenshots "${SCREENSHOTS:-screenshots/portal}"
