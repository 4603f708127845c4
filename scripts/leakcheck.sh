#!/usr/bin/env bash
# Runs the Mongo, DAO and Relay (libcurl) tests under AddressSanitizer with LeakSanitizer on: any leak or invalid
# access of memory (a bson_t, cursor, client or collection not freed, or freed twice) fails the run.
# Expects MONGODB_URI (scripts/with-test-database.sh provides it).
set -euo pipefail
cd "$(dirname "$0")/.."
export ASAN_OPTIONS="detect_leaks=1:halt_on_error=1:abort_on_error=0"
# Leaks inside libraries we do not own that live for the whole process (one-time initialisation).
export LSAN_OPTIONS="suppressions=$PWD/scripts/lsan.supp:print_suppressions=0"
swift build --build-tests --sanitize=address --scratch-path .build-asan
swift test --skip-build --sanitize=address --scratch-path .build-asan --filter 'MongoTests|DAOTests|FCMTests|RelayTests'
echo "leakcheck: no leak or invalid access reported by AddressSanitizer/LeakSanitizer"
