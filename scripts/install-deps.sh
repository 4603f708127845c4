#!/usr/bin/env bash
# Installs what building and testing msi-hub needs and the machine lacks:
# the C libraries and the browser for the portal's tests (Debian packages), and a Python venv with the test
# database, SecantusDB, pymongo (the bench's floor and helpers) and selenium. Debian packages named as arguments are installed too
# (`make bench`: nginx-light wrk).
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(libmongoc-dev libbson-dev libcurl4-openssl-dev libsqlite3-dev pkg-config chromium chromium-driver "$@")
missing=()
for package in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
done
if [ ${#missing[@]} -gt 0 ]; then
    echo "installing ${missing[*]}"
    sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
fi

venv=.venv
if ! "$venv/bin/python" -c "import secantus, yaml, pymongo" 2>/dev/null; then
    echo "creating $venv with SecantusDB, PyYAML and pymongo"
    [ -x "$venv/bin/python" ] || python3 -m venv "$venv"
    "$venv/bin/pip" install -q --disable-pip-version-check "SecantusDB==0.7.0b3" "PyYAML==6.0.2" "pymongo==4.20.0"
fi
if ! "$venv/bin/python" -c "import selenium" 2>/dev/null; then
    echo "installing selenium into $venv"
    "$venv/bin/pip" install -q --disable-pip-version-check "selenium==4.*"
fi
