#!/usr/bin/env bash
# Runs the Swift tests (built already) in two phases against the test database of with-test-database.sh:
#  1. every suite at once, except the fault scenarios;
#  2. the fault scenarios: suites that kill, stop or pause processes and check what happened within a time
#     window of seconds (a kill re-sends only what was in flight and is taken over within 10 s, a change is
#     seen within a second, FCM applies a rotated token's subscriptions...). On two cores shared with three
#     hundred other tests and one database server, such a window measures the machine, not the hub.
# Both phases run even if the first fails; the exit status is the first failure's.
set -uo pipefail
cd "$(dirname "$0")/.."
swift=${SWIFT:-swift}
faults='ConnectionDeadlineTests|RelayOutboxTests|WriteOutcomeTests|IdempotencyKeyTests|DatabaseOutageTests|CubeCacheTests|DeviceTests|MetricsTests|EndToEndTests\.'
status=0
echo "== phase 1: all suites but the fault scenarios"
$swift test --skip-build --skip "$faults" "$@" || status=$?
echo "== phase 2: the fault scenarios"
$swift test --skip-build --no-parallel --filter "$faults" "$@" || { s=$?; [ $status -eq 0 ] && status=$s; }
exit $status
