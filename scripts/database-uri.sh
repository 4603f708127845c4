#!/usr/bin/env bash
# Prints the connection string of the embedded database (scripts/database.sh) on PORT, database NAME:
#   scripts/database-uri.sh PORT NAME
# The one place that says how every client here reaches it: `make run`'s hub, the tests, the benches and their
# pymongo helpers.
#
# retryWrites=false: SecantusDB (0.7.0b3) keeps the last 10,000 retryable-write records (30 minutes) in one list
# and, on every write that carries a transaction number, scans the list, and sorts it whole once it is full. With
# retryable writes on (libmongoc's and pymongo's default), every write's cost grows with the writes of the last
# half hour, whoever made them: an insert costs the database 1.4 ms on a fresh server, 2.8 ms after 6,000 writes
# and 9 ms past 10,000 (0.6-0.8 ms throughout without). A single local server has no primary to fail over to,
# which is what retryable writes are for. MongoDB keeps the records per session: a deployment on MongoDB keeps
# the default (retryable writes on).
set -euo pipefail
echo "mongodb://127.0.0.1:$1/$2?retryWrites=false"
