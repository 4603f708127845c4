#!/usr/bin/env bash
# Runs the Swift tests (built already) in two phases against the test database of with-test-database.sh:
#  1. every suite but the fault scenarios: the hub's route suites (1b, a few tests at a time) apart from the rest (1a);
#  2. the fault scenarios: suites that kill, stop or pause processes and check what follows (a kill re-sends only
#     what was in flight and is taken over, a change is seen once the database confirmed the copy, FCM applies a
#     rotated token's subscriptions...), one at a time: on two cores shared with three hundred other tests and one
#     database server, they would wait on the machine, not on the hub.
# A fault suite says so in its source, `@Suite(.tags(.faults))` (the tag is in Tests/MongoTestSupport/Tags.swift).
# `swift test` selects by test id only (--filter, --skip), so the tagged suites' ids are read from the sources here.
# Both phases run even if the first fails; the exit status is the first failure's.
set -uo pipefail
cd "$(dirname "$0")/.."
swift=${SWIFT:-swift}

# Prints `Module\.Suite\b` for every suite tagged .faults, joined by `|`: the module is the folder under Tests/, the
# suite the first type declared after its @Suite line. A .faults tag anywhere else (a single @Test) is an error.
fault_suites() {
    awk '
        FNR == 1 { split(FILENAME, parts, "/"); module = parts[2]; pending = 0 }
        /^[[:space:]]*@Test\(/ && /\.faults/ { printf "%s:%d: tag the suite .faults, not a test\n", FILENAME, FNR > "/dev/stderr"; bad = 1 }
        /^[[:space:]]*@Suite\(/ && /\.tags\([^)]*\.faults/ { pending = 1; next }
        pending && match($0, /^[[:space:]]*([@A-Za-z]+[[:space:]]+)*(struct|class|enum|actor)[[:space:]]+[A-Za-z_][A-Za-z0-9_]*/) {
            declaration = substr($0, RSTART, RLENGTH); sub(/^.*(struct|class|enum|actor)[[:space:]]+/, "", declaration)
            suites = suites (suites == "" ? "" : "|") module "\\." declaration "\\b"; pending = 0
        }
        END { if (bad || suites == "") exit 1; print suites }
    ' $(find Tests -name '*.swift' -not -path 'Tests/MongoTestSupport/*' | sort)
}
faults=$(fault_suites) || { echo "swift-tests.sh: no suite tagged .faults, or a test tagged alone" >&2; exit 2; }

status=0
# Phase 1 runs in two halves, the hub's route suites apart from the rest: every one of them starts a hub with its
# relay, webhook, escalation and held-back-send workers, and all at once they would wait on two cores and one
# database server until their clients time out.
echo "== phase 1a: all suites but the hub's routes and the fault scenarios, ${TESTS_AT_ONCE:-16} tests at a time"
# Capped as phase 1b is: 96 suites at once kept the one database server so busy in one CI run that commands waited
# past the client's 10 s socket time-out (4 issues, 65 s, where the same phase took 40 s the hour before).
SWT_EXPERIMENTAL_MAXIMUM_PARALLELIZATION_WIDTH=${TESTS_AT_ONCE:-16} \
    $swift test --skip-build --skip "$faults" --skip 'HubServerTests\.' "$@" || status=$?
# The hub's route suites run together, at most HUB_TESTS_AT_ONCE tests at a time (default 8): Swift Testing starts
# every test at once otherwise, and 175 hubs with their workers saturated the one database server until relay waits,
# a replica's start and clients' reads ran past their 30 s (121-190 s and 21-38 issues, against 48 s and none at 8;
# 44-52 s at 16, 59 s at 32). The cap is swift-testing's SWT_EXPERIMENTAL_MAXIMUM_PARALLELIZATION_WIDTH (6.x; no flag of
# `swift test` sets it): a toolchain without it runs the phase unbounded, as before the cap.
echo "== phase 1b: the hub's route suites but the fault scenarios, ${HUB_TESTS_AT_ONCE:-8} tests at a time"
SWT_EXPERIMENTAL_MAXIMUM_PARALLELIZATION_WIDTH=${HUB_TESTS_AT_ONCE:-8} \
    $swift test --skip-build --skip "$faults" --filter 'HubServerTests\.' "$@" || { s=$?; [ $status -eq 0 ] && status=$s; }
echo "== phase 2: the fault scenarios ($faults)"
$swift test --skip-build --no-parallel --filter "$faults" "$@" || { s=$?; [ $status -eq 0 ] && status=$s; }
exit $status
