#!/usr/bin/env python3
"""Checks docker-compose.yml: it parses, its services are the documented ones, and every hub
service sets every environment variable the hub reads (found in the Swift sources), so the file
cannot silently fall behind the configuration. Run by `make test`; needs PyYAML (in .venv)."""
import pathlib
import re
import sys

import yaml

root = pathlib.Path(__file__).resolve().parent.parent
compose = yaml.safe_load((root / "docker-compose.yml").read_text())
failures = []

services = compose.get("services", {})
for name in ["mongo", "mongo-init", "hub", "hub-a", "hub-b", "proxy"]:
    if name not in services:
        failures.append(f"service {name} is missing")
for name in ["hub-a", "hub-b", "proxy"]:
    if "scaled" not in services.get(name, {}).get("profiles", []):
        failures.append(f"service {name} is not in the scaled profile")
if "--replSet" not in " ".join(services.get("mongo", {}).get("command", [])):
    failures.append("mongo is not started as a replica set")
if "healthcheck" not in services.get("mongo", {}):
    failures.append("mongo has no health check")

# The variables the hub reads: `environment["NAME"]` in the configuration code, and the FCM list.
sources = "\n".join(p.read_text() for p in (root / "Sources").rglob("*.swift"))
variables = set(re.findall(r'environment\["([A-Z][A-Z0-9_]+)"\]', sources))
variables |= set(re.findall(r'number\("([A-Z][A-Z0-9_]+)"', sources))
for match in re.findall(r'fcmVariables = \[([^\]]*)\]', sources):
    variables |= set(re.findall(r'"([A-Z][A-Z0-9_]+)"', match))
if len(variables) < 8:
    failures.append(f"found only {sorted(variables)} in the sources: the pattern no longer matches the code")

for name in ["hub", "hub-a", "hub-b"]:
    environment = services.get(name, {}).get("environment", {})
    if isinstance(environment, list):
        environment = dict(item.split("=", 1) for item in environment)
    missing = sorted(variables - set(environment))
    if missing:
        failures.append(f"service {name} does not set {', '.join(missing)}")
    unknown = sorted(set(environment) - variables)
    if unknown:
        failures.append(f"service {name} sets {', '.join(unknown)}, which the hub does not read")

if failures:
    print("docker-compose.yml:", *failures, sep="\n  ")
    sys.exit(1)
print(f"docker-compose.yml: parses; {len(services)} services; the hub services set all {len(variables)} "
      f"variables the hub reads: {', '.join(sorted(variables))}")
