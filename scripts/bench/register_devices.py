"""Registers N devices through POST /device over C keep-alive connections (threads); prints req/s and latency."""
import http.client
import json
import sys
import threading
import time

from support.threads import run_threads

host, port, total, connections = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
lock = threading.Lock()
next_index = 0
latencies, failures = [], 0


def worker():
    global next_index, failures
    connection = http.client.HTTPConnection(host, port)
    while True:
        with lock:
            if next_index >= total:
                return
            index = next_index
            next_index += 1
        body = json.dumps({"registration": f"bench-{index}", "platform": "ios" if index % 2 else "android"})
        started = time.perf_counter()
        connection.request("POST", "/device", body, {"Content-Type": "application/json"})
        response = connection.getresponse()
        response.read()
        elapsed = time.perf_counter() - started
        with lock:
            latencies.append(elapsed)
            if response.status != 201:
                failures += 1


took = run_threads(worker, connections)
latencies.sort()
p = lambda q: latencies[min(len(latencies) - 1, int(q * len(latencies)))] * 1000
print(f"registrations: {total} at {connections} connections in {took:.1f} s: {total / took:.0f}/s, "
      f"p50 {p(0.5):.1f} ms, p99 {p(0.99):.1f} ms, not 201: {failures}")
