"""Clients run side by side on threads."""
import threading
import time


def run_threads(target, count):
    """Runs `target` on `count` threads at once and returns the seconds until the last one returned."""
    threads = [threading.Thread(target=target) for _ in range(count)]
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return time.perf_counter() - started
