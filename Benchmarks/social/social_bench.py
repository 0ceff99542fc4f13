"""The social layer under load: comments and likes posted at RATE a second for SECONDS while the
pipeline runs, each timed from its post to the owner's push on user:{owner}; then the counts.

usage: social_bench.py BASE_URL JWT_SECRET USDZ JSON RATE SECONDS [WORKERS]
One owner publishes a public room (Flow A) and listens on her channel; RATE writes a second go to
it — half comments (bodies carry their number), half likes (each from a user of its own, so every
like is new) — from WORKERS processes (default 4; one Python process tops out near 140 writes a
second), each an asyncio loop over keep-alive connections, never more than 32 in flight each (the gateway's nginx holds 512
connections, two per proxied request).
The clock of a write (wall clock: the processes share it) starts when its request is sent and
stops when its push (`comment_new` naming the body's number, `like_new` naming the liker) is
decoded by the listening process. Prints one JSON object.
"""
import asyncio
import concurrent.futures
import json
import multiprocessing
import statistics
import sys
import time

import httpx
import jwt
from realtime import AsyncRealtimeClient

base, secret, usdz_path, json_path = sys.argv[1:5]
rate, seconds = int(sys.argv[5]), int(sys.argv[6])
workers = int(sys.argv[7]) if len(sys.argv) > 7 else 4


def token(user, role=None):
    now = int(time.time())
    claims = {"sub": user, "iat": now, "exp": now + 3600}
    if role:
        claims["role"] = role
    return jwt.encode(claims, secret, algorithm="HS256")


anon = jwt.encode({"sub": "", "role": "anon", "iat": 1_700_000_000, "exp": 4_102_444_800}, secret, algorithm="HS256")
owner = "bench-owner"


def headers(user):
    return {"Authorization": f"Bearer {token(user)}", "apikey": anon, "Content-Type": "application/json",
            "Prefer": "return=minimal"}


async def publish(client):
    with open(usdz_path, "rb") as f:
        usdz = f.read()
    with open(json_path, "rb") as f:
        roomplan = f.read()
    h = headers(owner)
    init = (await client.post(f"{base}/functions/v1/upload-init", headers=h, json={
        "title": "bench", "tags": [], "visibility": "public", "bytes_source": len(usdz)})).json()
    await client.put(init["presigned_usdz"], content=usdz)
    await client.put(init["presigned_json"], content=roomplan)
    await client.post(f"{base}/functions/v1/upload-complete", headers=h, json={"version_id": init["version_id"], "redactions": []})
    room = init["room_id"]
    # Published, and known to the write edge (a like is accepted).
    for _ in range(1200):
        answer = await client.post(f"{base}/rest/v1/likes", headers=headers("bench-probe"), json={"room_id": room})
        if answer.status_code == 201:
            return room
        await asyncio.sleep(0.1)
    raise RuntimeError("the room was not published in 120 s")


def post_share(room, k, n, start_at):
    """Worker k of n: writes i ≡ k (mod n) at their due times from start_at; (key, sent at, status) each."""
    return asyncio.run(post_share_async(room, k, n, start_at))


async def post_share_async(room, k, n, start_at):
    # 32 connections each: the gateway's nginx takes 512 connections, two per proxied request.
    limits = httpx.Limits(max_connections=32, max_keepalive_connections=32)
    results = []
    in_flight = asyncio.Semaphore(32)
    tokens = {}

    def head(user):
        if user not in tokens:
            tokens[user] = headers(user)
        return tokens[user]

    async with httpx.AsyncClient(limits=limits, timeout=30) as client:
        async def post(i):
            async with in_flight:
                if i % 2 == 0:
                    key, user, path, body = f"c{i}", f"bench-commenter-{i % 100}", "comments", {"room_id": room, "body": f"c{i}"}
                else:
                    key = user = f"bench-liker-{i}"
                    path, body = "likes", {"room_id": room}
                at = time.time()
                try:
                    status = (await client.post(f"{base}/rest/v1/{path}", headers=head(user), json=body)).status_code
                except httpx.HTTPError as error:
                    status = type(error).__name__
                results.append((key, at, status))

        tasks = []
        for i in range(k, rate * seconds, n):
            delay = start_at + i / rate - time.time()
            if delay > 0:
                await asyncio.sleep(delay)
            tasks.append(asyncio.create_task(post(i)))
        await asyncio.gather(*tasks)
    return results


async def main():
    limits = httpx.Limits(max_connections=64, max_keepalive_connections=64)
    async with httpx.AsyncClient(limits=limits, timeout=30) as client:
        room = await publish(client)
        sent, heard = {}, {}

        def on_push(message):
            payload = message.get("payload") or {}
            key = payload.get("excerpt") if message.get("event") == "comment_new" else payload.get("actor_id")
            if key is not None and key not in heard:
                heard[key] = time.time()

        socket = AsyncRealtimeClient(f"{base}/realtime/v1", anon, auto_reconnect=False)
        await socket.connect()
        await socket.set_auth(token(owner))
        joined = asyncio.Event()
        channel = socket.channel(f"user:{owner}")
        channel.on_broadcast("comment_new", on_push)
        channel.on_broadcast("like_new", on_push)
        await channel.subscribe(lambda state, error: joined.set() if str(getattr(state, "value", state)) == "SUBSCRIBED" else None)
        await asyncio.wait_for(joined.wait(), 10)

        loop = asyncio.get_running_loop()
        started = time.time()
        with concurrent.futures.ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn")) as pool:
            shares = await asyncio.gather(*[loop.run_in_executor(pool, post_share, room, k, workers, started + 2)
                                            for k in range(workers)])
        statuses, comments, likes = {}, 0, 0
        for share in shares:
            for key, at, status in share:
                statuses[status] = statuses.get(status, 0) + 1
                if status == 201:
                    sent[key] = at
                    comments += key.startswith("c")
                    likes += not key.startswith("c")
        total = rate * seconds
        posting = max(at for share in shares for _, at, _ in share) - (started + 2)
        deadline = time.monotonic() + 30
        while len(set(sent) & set(heard)) < len(sent) and time.monotonic() < deadline:
            await asyncio.sleep(0.1)
        latencies = sorted(heard[k] - sent[k] for k in sent if k in heard)
        counts = {}
        for _ in range(300):
            rows = (await client.get(f"{base}/rest/v1/rooms", headers=headers(owner),
                                     params={"id": f"eq.{room}", "select": "like_count,comment_count"})).json()
            counts = rows[0] if rows else {}
            if counts == {"like_count": likes + 1, "comment_count": comments}:
                break
            await asyncio.sleep(0.1)
        await socket.close()

        def pct(p):
            return round(latencies[min(len(latencies) - 1, int(p * len(latencies)))], 4) if latencies else None

        print(json.dumps({
            "target_rate": rate, "seconds": seconds, "workers": workers, "posted": total, "posting_seconds": round(posting, 2),
            "achieved_rate": round(total / posting, 1), "statuses": {str(k): v for k, v in statuses.items()},
            "accepted_comments": comments, "accepted_likes": likes, "pushes_heard": len(set(sent) & set(heard)), "pushes_expected": len(sent),
            "p50": pct(0.5), "p90": pct(0.9), "p99": pct(0.99), "max": round(latencies[-1], 4) if latencies else None,
            "mean": round(statistics.mean(latencies), 4) if latencies else None,
            "counts": counts, "counts_exact": counts == {"like_count": likes + 1, "comment_count": comments},
        }))


if __name__ == "__main__":
    asyncio.run(main())
