"""The social layer under load: comments and likes posted at RATE a second for SECONDS while the
pipeline runs, each timed from its post to the owner's push on user:{owner}; then the counts.

usage: social_bench.py BASE_URL JWT_SECRET USDZ JSON RATE SECONDS [WORKERS [CONNECTIONS]]
One owner publishes a public room (Flow A) and listens on her channel; RATE writes a second go to
it — half comments (bodies carry their number), half likes (each from a user of its own, so every
like is new) — from WORKERS processes (default 2), each an asyncio loop over CONNECTIONS (default
48) keep-alive HTTP/1.1 connections written as raw asyncio streams (an HTTP library's own CPU per
request capped one process near 140 writes a second; a raw stream costs a fraction of that), one
request in flight on each (the gateway's nginx holds 512 connections, two per proxied request).
The clock of a write (wall clock: the processes share it) starts when its request is sent and
stops when its push (`comment_new` naming the body's number, `like_new` naming the liker) is
decoded by the listening process. Prints one JSON object, with where the CPU went while the
writes were posted: the cores used by the stack (BENCH_DEV_PID, the `backbone dev` process: every
service), its PostgreSQL and nginx, the posting workers and the listener, and the whole machine.
"""
import asyncio
import concurrent.futures
import json
import multiprocessing
import os
import resource
import statistics
import sys
import time
from urllib.parse import urlsplit

import httpx
import jwt
from realtime import AsyncRealtimeClient

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import stack_cpu  # noqa: E402  (Benchmarks/lib)

base, secret, usdz_path, json_path = sys.argv[1:5]
rate, seconds = int(sys.argv[5]), int(sys.argv[6])
workers = int(sys.argv[7]) if len(sys.argv) > 7 else 2
connections = int(sys.argv[8]) if len(sys.argv) > 8 else 48
dev_pid = int(os.environ.get("BENCH_DEV_PID", "0"))
dev_home = os.environ.get("BENCH_DEV_HOME", "")
dev_database_port = urlsplit(os.environ.get("BENCH_DEV_DATABASE_URL", "")).port


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


class Connection:
    """One keep-alive HTTP/1.1 connection to the gateway, a raw asyncio stream."""

    def __init__(self, host, port):
        self.host, self.port = host, port
        self.reader = self.writer = None

    async def post(self, path, head, body):
        for attempt in range(2):
            try:
                if self.writer is None:
                    self.reader, self.writer = await asyncio.open_connection(self.host, self.port)
                self.writer.write(f"POST {path} HTTP/1.1\r\nHost: {self.host}:{self.port}\r\n{head}"
                                  f"Content-Length: {len(body)}\r\n\r\n".encode() + body)
                status_line = await self.reader.readuntil(b"\r\n")
                status, length, closing = int(status_line.split()[1]), 0, False
                while (line := await self.reader.readuntil(b"\r\n")) != b"\r\n":
                    name, _, value = line.partition(b":")
                    name = name.strip().lower()
                    if name == b"content-length":
                        length = int(value)
                    elif name == b"connection" and value.strip().lower() == b"close":
                        closing = True
                if length:
                    await self.reader.readexactly(length)
                if closing:
                    self.close()
                return status
            except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError, ValueError, IndexError) as error:
                self.close()
                if attempt:
                    return type(error).__name__
        return "unreachable"

    def close(self):
        if self.writer is not None:
            self.writer.close()
        self.reader = self.writer = None


def post_share(room, k, n, start_at):
    """Worker k of n: writes i ≡ k (mod n) at their due times from start_at; (key, sent at, status)
    each, and this worker's CPU seconds while posting."""
    return asyncio.run(post_share_async(room, k, n, start_at))


async def post_share_async(room, k, n, start_at):
    parts = urlsplit(base)
    free = asyncio.Queue()
    for _ in range(connections):
        free.put_nowait(Connection(parts.hostname, parts.port))
    results = []
    heads = {}

    def head(user):
        if user not in heads:
            heads[user] = (f"Authorization: Bearer {token(user)}\r\napikey: {anon}\r\nContent-Type: application/json\r\n"
                           "Prefer: return=minimal\r\n")
        return heads[user]

    async def post(i):
        connection = await free.get()
        try:
            if i % 2 == 0:
                key, user, path, body = f"c{i}", f"bench-commenter-{i % 100}", "/rest/v1/comments", {"room_id": room, "body": f"c{i}"}
            else:
                key = user = f"bench-liker-{i}"
                path, body = "/rest/v1/likes", {"room_id": room}
            at = time.time()
            status = await connection.post(path, head(user), json.dumps(body).encode())
            results.append((key, at, status))
        finally:
            free.put_nowait(connection)

    tasks = []
    usage = resource.getrusage(resource.RUSAGE_SELF)
    for i in range(k, rate * seconds, n):
        delay = start_at + i / rate - time.time()
        if delay > 0:
            await asyncio.sleep(delay)
        tasks.append(asyncio.create_task(post(i)))
    await asyncio.gather(*tasks)
    after = resource.getrusage(resource.RUSAGE_SELF)
    for _ in range(connections):
        (await free.get()).close()
    return results, (after.ru_utime + after.ru_stime) - (usage.ru_utime + usage.ru_stime)


def thread_groups(pid):
    """CPU seconds so far of the stack's threads by kind (their names): the services' Swift code
    (the concurrency pool), the embedded Kafka broker (`rdk:mock`), the services' Kafka clients
    (other `rdk:` threads), the HTTP servers (libmicrohttpd's `MHD-` threads), the rest."""
    groups = {"swift": 0, "kafka_broker": 0, "kafka_clients": 0, "http": 0, "other": 0}
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return groups
    for task in tasks:
        try:
            name = open(f"/proc/{pid}/task/{task}/comm").read().strip()
            fields = open(f"/proc/{pid}/task/{task}/stat").read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        ticks = int(fields[11]) + int(fields[12])
        kind = ("swift" if "qos" in name else "kafka_broker" if name == "rdk:mock" else "kafka_clients" if name.startswith("rdk:")
                else "http" if name.startswith("MHD") else "other")
        groups[kind] += ticks / stack_cpu.HZ
    return groups


def cpu_snapshot():
    """CPU seconds so far of the stack's process, its PostgreSQL (the postmaster listening on
    DATABASE_URL's port, and its backends) and nginx (the one with the stack's folder), this
    process (the listener), its threads by kind, and the machine."""
    snap = stack_cpu.snapshot(dev_pid, dev_database_port and f"\0-p\0{dev_database_port}\0", dev_home)
    snap["listener"] = snap.pop("self")
    snap["threads"] = thread_groups(dev_pid) if dev_pid else {}
    return snap


def posting_seconds(shares, started):
    return max(at for share in shares for _, at, _ in share) - (started + 2)


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
            async def measured():
                await asyncio.sleep(max(0.0, started + 2 - time.time()))
                before = cpu_snapshot()
                await asyncio.sleep(seconds)
                return before, cpu_snapshot()
            window = asyncio.create_task(measured())
            outcomes = await asyncio.gather(*[loop.run_in_executor(pool, post_share, room, k, workers, started + 2)
                                              for k in range(workers)])
            before, after = await window
        shares = [share for share, _ in outcomes]
        wall = after["wall"] - before["wall"]
        cores = {name: round((after[name] - before[name]) / wall, 2) for name in ("backbone", "postgres", "nginx", "listener", "machine")}
        cores["workers"] = round(sum(cpu for _, cpu in outcomes) / max(posting_seconds(shares, started), wall), 2)
        cores["backbone_threads"] = {k: round((after["threads"][k] - before["threads"].get(k, 0)) / wall, 2) for k in after["threads"]}
        # What the rest of the machine (other users' processes) took meanwhile.
        cores["others"] = round(max(0.0, cores["machine"] - sum(cores[k] for k in ("backbone", "postgres", "nginx", "listener", "workers"))), 2)
        statuses, comments, likes = {}, 0, 0
        for share in shares:
            for key, at, status in share:
                statuses[status] = statuses.get(status, 0) + 1
                if status == 201:
                    sent[key] = at
                    comments += key.startswith("c")
                    likes += not key.startswith("c")
        total = rate * seconds
        posting = posting_seconds(shares, started)
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
            "connections_per_worker": connections, "cores_while_posting": cores, "cpu_count": os.cpu_count(),
        }))


if __name__ == "__main__":
    asyncio.run(main())
