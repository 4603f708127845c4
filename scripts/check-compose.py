#!/usr/bin/env python3
"""Checks docker-compose.yml: it parses, its services are the documented ones, every hub service sets every
environment variable the hub reads (found in the Swift sources), so the file cannot silently fall behind the
configuration, and the deployment it describes is HTTPS: the default profile publishes only 443, from nginx,
which listens with TLS and a certificate, tells the hub the client's address and scheme, and is the only proxy
the hubs trust; the hubs behind it set Secure cookies. Plain HTTP is an opt-out profile of its own. Run by
`make test`; needs PyYAML (in .venv)."""
import ipaddress
import pathlib
import re
import sys

import yaml

root = pathlib.Path(__file__).resolve().parent.parent
# Another file may be named (with its deploy/ beside it), to see the check fail on a broken copy.
compose_path = pathlib.Path(sys.argv[1]).resolve() if len(sys.argv) > 1 else root / "docker-compose.yml"
compose = yaml.safe_load(compose_path.read_text())
failures = []

services = compose.get("services", {})
profiles = {
    "mongo": [], "mongo-init": [], "tls-init": [], "hub": [], "proxy": [],
    "hub-a": ["scaled"], "hub-b": ["scaled"], "proxy-scaled": ["scaled"],
    "hub-plain": ["plain-http"],
}
for name, expected in profiles.items():
    if name not in services:
        failures.append(f"service {name} is missing")
    elif sorted(services[name].get("profiles", [])) != expected:
        failures.append(f"service {name} is in profiles {services[name].get('profiles', [])}, not {expected}")
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

# `HubConfiguration.variables` (the flags of `msi-hub serve`) lists exactly the variables the sources read.
listed = re.search(r'public static let variables: \[String\] = \[([^\]]*)\]', sources)
if listed is None:
    failures.append("HubConfiguration.variables is not found in the sources")
else:
    listed = set(re.findall(r'"([A-Z][A-Z0-9_]+)"', listed.group(1)))
    if listed != variables:
        failures.append("HubConfiguration.variables differs from the variables the sources read: "
                        f"missing {sorted(variables - listed)}, extra {sorted(listed - variables)}")


def environment_of(name):
    environment = services.get(name, {}).get("environment", {})
    if isinstance(environment, list):
        environment = dict(item.split("=", 1) for item in environment)
    return environment


def default_of(value):
    """The value a compose `${NAME:-default}` gives when NAME is unset; the text itself otherwise."""
    match = re.fullmatch(r"\$\{[A-Z0-9_]+:?-(.*)\}", str(value))
    return match.group(1) if match else str(value)


def published_ports(name):
    """The host ports a service publishes (short `[ip:]host:container` and long syntax)."""
    ports = []
    for entry in services.get(name, {}).get("ports", []):
        if isinstance(entry, dict):
            ports.append(str(entry.get("published", "")))
        else:
            parts = str(entry).split("/")[0].split(":")
            ports.append(parts[-2] if len(parts) >= 2 else parts[0])
    return ports


hubs = ["hub", "hub-a", "hub-b", "hub-plain"]
for name in hubs:
    environment = environment_of(name)
    missing = sorted(variables - set(environment))
    if missing:
        failures.append(f"service {name} does not set {', '.join(missing)}")
    unknown = sorted(set(environment) - variables)
    if unknown:
        failures.append(f"service {name} sets {', '.join(unknown)}, which the hub does not read")

# HTTPS by default: of the services a plain `docker compose up` starts, only nginx publishes a port, 443.
default_services = [name for name, service in services.items() if not service.get("profiles")]
published = {name: published_ports(name) for name in default_services if published_ports(name)}
if published != {"proxy": ["443"]}:
    failures.append(f"the default profile publishes {published or 'nothing'}, not 443 from proxy alone")
for name in ["hub", "hub-a", "hub-b"]:
    if published_ports(name):
        failures.append(f"service {name} publishes {published_ports(name)}: only nginx may (TLS)")
    if str(environment_of(name).get("PORTAL_SECURE_COOKIES")).lower() != "true":
        failures.append(f"service {name} is behind TLS but does not set PORTAL_SECURE_COOKIES to true")
if "plain-http" not in services.get("hub-plain", {}).get("profiles", []) \
        or published_ports("hub-plain") != ["8080"] \
        or str(environment_of("hub-plain").get("PORTAL_SECURE_COOKIES")).lower() != "false":
    failures.append("hub-plain is not the plain-http opt-out (its own profile, :8080, insecure cookies)")

# The hubs behind nginx trust the compose network, where nginx is, and no more than that by default.
subnets = [ipaddress.ip_network(config["subnet"])
           for config in compose.get("networks", {}).get("default", {}).get("ipam", {}).get("config", [])
           if "subnet" in config]
if not subnets:
    failures.append("the default network has no fixed subnet for TRUSTED_PROXIES to name")
for name in ["hub", "hub-a", "hub-b"]:
    trusted = [ipaddress.ip_network(cidr.strip()) for cidr in
               default_of(environment_of(name).get("TRUSTED_PROXIES", "")).split(",") if cidr.strip()]
    if subnets and trusted != subnets:
        failures.append(f"service {name} trusts {[str(n) for n in trusted]} by default, not the compose network "
                        f"{[str(n) for n in subnets]}")

# nginx: TLS with a certificate from a mounted directory, the client's address and scheme for the hub.
for name, upstreams in [("proxy", ["hub"]), ("proxy-scaled", ["hub-a", "hub-b"])]:
    service = services.get(name, {})
    mounts = {}
    for volume in service.get("volumes", []):
        source, target = str(volume).split(":")[:2]
        mounts[target] = source
    config_source = mounts.get("/etc/nginx/conf.d/default.conf")
    if not config_source:
        failures.append(f"service {name} mounts no nginx configuration")
        continue
    config = re.sub(r"#[^\n]*", "", (compose_path.parent / config_source).read_text())
    listens = re.findall(r"^\s*listen\s+([^;]+);", config, re.M)
    if not listens or any(not re.search(r"\bssl\b", listen) for listen in listens) \
            or not any(re.match(r"(\S+:)?443\b", listen) for listen in listens):
        failures.append(f"{config_source} does not listen on 443 with ssl alone: {listens}")
    for directive in ["ssl_certificate", "ssl_certificate_key"]:
        path = re.search(rf"^\s*{directive}\s+(\S+);", config, re.M)
        if not path:
            failures.append(f"{config_source} has no {directive}")
        elif not any(path.group(1).startswith(target.rstrip("/") + "/") and mounts[target].startswith("./secrets/")
                     for target in mounts):
            failures.append(f"{config_source}'s {directive} {path.group(1)} is not in a directory mounted from ./secrets")
    if not re.search(r"proxy_set_header\s+X-Forwarded-For\s+\$remote_addr\s*;", config):
        failures.append(f"{config_source} does not set X-Forwarded-For to $remote_addr (the client nginx saw)")
    if not re.search(r"proxy_set_header\s+X-Forwarded-Proto\s+(https|\$scheme)\s*;", config):
        failures.append(f"{config_source} does not set X-Forwarded-Proto")
    servers = re.findall(r"^\s*server\s+([\w.-]+):8080\b", config, re.M)
    if servers != upstreams:
        failures.append(f"{config_source} proxies to {servers}, not {upstreams}")
    if service.get("depends_on", {}).get("tls-init", {}).get("condition") != "service_completed_successfully":
        failures.append(f"service {name} does not wait for tls-init")
if not any(str(v).split(":")[0] == "./secrets/tls" for v in services.get("tls-init", {}).get("volumes", [])):
    failures.append("tls-init does not write to ./secrets/tls")

if failures:
    print(f"{compose_path.name}:", *failures, sep="\n  ")
    sys.exit(1)
print(f"docker-compose.yml: parses; {len(services)} services; the hub services set all {len(variables)} "
      f"variables the hub reads: {', '.join(sorted(variables))}; the default profile publishes only 443, "
      f"from nginx with TLS, X-Forwarded-For and secure cookies; plain HTTP is the plain-http profile")
