"""What the fake FCM has received (its test routes)."""
import json
import urllib.request


def received(fake):
    """How many FCM requests the fake has received."""
    with urllib.request.urlopen(fake + "/_received/count", timeout=5) as response:
        return json.load(response)["count"]


def arrivals(fake):
    """Each received message's msi_key and arrival time (at_ms)."""
    with urllib.request.urlopen(fake + "/_received/arrivals", timeout=30) as response:
        return json.load(response)
