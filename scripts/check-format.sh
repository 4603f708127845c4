#!/usr/bin/env bash
# Checks that the Swift sources are as swift-format (in the Swift toolchain) leaves them with .swift-format: 4-space
# indentation, lines of at most 120 columns. `swift-format format -i -r --configuration .swift-format Sources Tests
# Package.swift` fixes what it reports.
set -euo pipefail
cd "$(dirname "$0")/.."
formatter=${SWIFT_FORMAT:-$(command -v swift-format || true)}
if [ -z "$formatter" ]; then
    echo "swift-format is not on PATH (it comes with the Swift toolchain); set SWIFT_FORMAT to it" >&2
    exit 1
fi
"$formatter" lint --strict --recursive --configuration .swift-format Sources Tests Package.swift
echo "swift-format: every source as .swift-format leaves it"
