#!/usr/bin/env python3
"""Reproduces the two timing-dependent DOT observations of Interop/README.md (items 4 and 6).

    Interop/django/start
    .build-interop/venv/bin/python Interop/django/probe_dot.py [--base-url URL] [--parallel 16]
    Interop/django/stop

Not a test (no assertions, not run by ci): it prints what the server did. It changes the
server's settings through /debug/config and restores them. It never prints a token.
"""
import argparse
import collections
import hashlib
import os
import threading
import time

from smoke_test import Server


def short_digest(token):
    return hashlib.sha256((token or "").encode()).hexdigest()[:8]


def grace_replay_expiry(server):
    """Item 4: a grace replay says the full expires_in, but the token keeps its first expiry."""
    original = server.config()
    server.config(
        access_token_expire_seconds=3, refresh_token_grace_period_seconds=30, refresh_token_reuse_protection=True
    )
    try:
        first = server.login("confidential")
        rotated = server.refresh("confidential", first["refresh_token"])[1]
        rotated_at = time.monotonic()
        time.sleep(2)
        status, replay = server.refresh("confidential", first["refresh_token"])
        same = replay.get("access_token") == rotated["access_token"]
        print(f"grace replay after 2 s: {status}, same pair: {same}, expires_in: {replay.get('expires_in')}")
        time.sleep(max(0.0, 3.3 - (time.monotonic() - rotated_at)))
        status, _, _ = server.me(replay["access_token"])
        print(f"replayed access token {time.monotonic() - rotated_at:.1f} s after the rotation: {status}")
    finally:
        server.config(**original)


def concurrent_refreshes(server, parallel, reuse):
    """Item 6: several refreshes with one refresh token at the same moment."""
    original = server.config()
    server.config(refresh_token_grace_period_seconds=0, refresh_token_reuse_protection=reuse)
    try:
        server.post_debug("/debug/reset")
        refresh_token = server.login("confidential")["refresh_token"]
        barrier = threading.Barrier(parallel)
        outcomes = []

        def one():
            barrier.wait()
            status, body = server.refresh("confidential", refresh_token)
            outcomes.append((status, body.get("error") or "pair " + short_digest(body.get("refresh_token"))))

        threads = [threading.Thread(target=one) for _ in range(parallel)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        stats = server.stats()
        keys = ("refresh_grants", "refresh_grants_replayed", "reuse_detections")
        print(
            f"{parallel} parallel refreshes, reuse protection {reuse}: "
            f"{dict(collections.Counter(outcomes))}; stats {({key: stats[key] for key in keys})}"
        )
    finally:
        server.config(**original)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base-url", default=f"http://127.0.0.1:{os.environ.get('INTEROP_PORT', '8765')}")
    parser.add_argument("--parallel", type=int, default=16)
    args = parser.parse_args()
    server = Server(args.base_url)
    grace_replay_expiry(server)
    for reuse in (True, False):
        concurrent_refreshes(server, args.parallel, reuse)


if __name__ == "__main__":
    main()
