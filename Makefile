# msi-hub: the two set-up commands are `make run` and `make test`.
SWIFT ?= swift

.PHONY: run test leakcheck deps build bench-import bench bench-devices bench-fanout bench-enrolment bench-receipts bench-neighbours bench-rooms bench-schedule bench-digest bench-archive

## Installs the C libraries and the test database's venv if they are missing.
deps:
	@scripts/install-deps.sh

build: deps
	$(SWIFT) build

## Builds and starts the hub on the embedded default database (kept under var/).
run: deps
	@scripts/run.sh

## Checks the sources' format (swift-format, .swift-format) and that no folder of Relay, DAO or Mongo uses one that
## uses it back (scripts/check-layers.py), runs every test against a fresh test database (started
## and stopped here), checks docker-compose.yml, then runs the portal's browser tests.
test: deps
	scripts/check-format.sh
	python3 scripts/check-layers.py Sources/Relay Sources/DAO Sources/Mongo
	$(SWIFT) build --build-tests
	SWIFT=$(SWIFT) scripts/with-test-database.sh scripts/swift-tests.sh
	.venv/bin/python scripts/check-compose.py
	scripts/with-test-database.sh scripts/browser-tests.sh

## Runs the Mongo and DAO tests under AddressSanitizer with leak detection.
leakcheck: deps
	scripts/with-test-database.sh scripts/leakcheck.sh

## Times `msi-hub import` of 100,000 generated legacy messages (release build, throw-away database).
bench-import: deps
	scripts/bench-import.sh 100000

## What an insert into `message` costs the database with each set of indexes the archive has had (scripts/bench-archive.sh).
bench-archive: deps
	scripts/bench-archive.sh

## Measures the hub against nginx serving the same bytes, and the relay to a fake FCM (scripts/bench.sh).
bench: deps
	scripts/bench.sh

## 10,000 device registrations, then the time until their subscriptions are applied at a fake FCM (scripts/bench-devices.sh).
bench-devices: deps
	scripts/bench-devices.sh

## The hub beside more hubs on their own databases and CPU-bound processes, with a 40,000-message archive: the
## read phases, then POST /message, and the hub's errors (scripts/bench-neighbours.sh).
bench-neighbours: deps
	scripts/bench-neighbours.sh

## One message to a group of 20,000 persons sent device by device to a fake FCM over HTTP/2, beside h2load's ceiling (scripts/bench-fanout.sh).
bench-fanout: deps
	scripts/bench-fanout.sh

## 20,000 devices registered and bound to persons through the API from 16 clients (rates and p99 a block of 2,000, the
## database's CPU per enrolment), then a fan-out to a group of them made through the API beside one to devices written
## straight into the database (scripts/bench-enrolment.sh).
bench-enrolment: deps
	scripts/bench-enrolment.sh

## 20,000 devices posting receipts for one topic message (receipts/s, database CPU per receipt), then the reach report's latency against 100 ms (scripts/bench-receipts.sh).
bench-receipts: deps
	scripts/bench-receipts.sh

## Rooms of 500 members posting through the hub: the time from a post's 201 to its first and last send, CPU per delivered post, the unread counting's share, a read's cost (scripts/bench-rooms.sh).
bench-rooms: deps
	scripts/bench-rooms.sh

## Reminders of 10,000 events made through POST /event, all due in one minute: each one's lag from its due time to its message, none twice, CPU per reminder (scripts/bench-schedule.sh).
bench-schedule: deps
	scripts/bench-schedule.sh

## The daily digests of one minute: 20,000 persons, a third with a subject in digest mode through the API, 50 messages in the day; the digests' times and rate at a fake FCM, each once and exact, CPU per digest and per held message (scripts/bench-digest.sh).
bench-digest: deps
	scripts/bench-digest.sh
