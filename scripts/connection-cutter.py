#!/usr/bin/env python3
"""A TCP proxy for tests that cut a database's connections while the database stays up.

    connection-cutter.py LISTEN_PORT TARGET_PORT STATUS_FILE

Forwards every connection made to 127.0.0.1:LISTEN_PORT to 127.0.0.1:TARGET_PORT. On SIGUSR1 it aborts every
connection open through it at once, both sides, with a reset (as a network cut, a firewall's idle timeout or a
restarted load balancer does), and goes on accepting new ones. STATUS_FILE holds the number of cuts made so far:
"0" once it listens, then 1, 2, ... after each cut (the test waits for it). It exits when the process that started
it is gone.
"""
import asyncio
import os
import signal
import sys

listen_port, target_port, status_file = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
open_pairs = set()
cuts = 0


def write_status():
    with open(status_file + ".tmp", "w") as f:
        f.write(str(cuts))
    os.replace(status_file + ".tmp", status_file)


async def pipe(reader, writer):
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    except (ConnectionError, OSError):
        pass
    finally:
        writer.transport.abort()


async def handle(client_reader, client_writer):
    try:
        upstream_reader, upstream_writer = await asyncio.open_connection("127.0.0.1", target_port)
    except OSError:
        client_writer.transport.abort()
        return
    pair = (client_writer, upstream_writer)
    open_pairs.add(pair)
    try:
        await asyncio.gather(pipe(client_reader, upstream_writer), pipe(upstream_reader, client_writer))
    finally:
        open_pairs.discard(pair)


def cut():
    global cuts
    for pair in list(open_pairs):
        for writer in pair:
            writer.transport.abort()
    open_pairs.clear()
    cuts += 1
    write_status()


async def orphaned(parent):
    """Returns once the process that started the proxy is gone (a test process that crashed)."""
    while os.getppid() == parent:
        await asyncio.sleep(0.5)


async def main():
    parent = os.getppid()
    # A process started by a test inherits its signal mask, which may block the signals it is sent.
    signal.pthread_sigmask(signal.SIG_UNBLOCK, [signal.SIGUSR1, signal.SIGTERM, signal.SIGINT])
    server = await asyncio.start_server(handle, "127.0.0.1", listen_port)
    asyncio.get_running_loop().add_signal_handler(signal.SIGUSR1, cut)
    write_status()
    async with server:
        await orphaned(parent)


asyncio.run(main())
