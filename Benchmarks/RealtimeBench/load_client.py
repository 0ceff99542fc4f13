"""Realtime load client: one process, many WebSocket connections (asyncio + `websockets`).

usage: load_client.py URL TOKEN CHANNELS(comma-separated) FIRST_INDEX CONNECTIONS START_FILE
Opens CONNECTIONS sockets (v2 serializer), joins channel (FIRST_INDEX + i) % len(CHANNELS),
prints {"ready": n} once every join was answered, then counts broadcasts and their
publish-to-receive latency (payload field "t", epoch ms, set by the producer) until stdin closes,
and prints {"received": n, "histogram": {bucket_0.1ms: count}, "errors": n}.
"""
import asyncio
import json
import sys
import time

import websockets


async def run_connection(url, topic, ready, stats, stop):
    async with websockets.connect(url, max_queue=4096, max_size=None, ping_interval=None, open_timeout=60,
                                  close_timeout=1) as ws:
        await ws.send(json.dumps(["1", "1", topic, "phx_join", {"config": {"broadcast": {"self": False}}}]))
        while True:
            message = await ws.recv()
            if '"phx_reply"' in message:
                break
        ready.append(1)
        histogram = stats["histogram"]
        recv = ws.recv
        while not stop.is_set():
            try:
                message = await recv()
            except websockets.ConnectionClosed:
                stats["errors"] += 1
                return
            index = message.rfind('"t":')
            if index < 0:
                continue
            end = message.find("}", index)
            comma = message.find(",", index)
            if 0 <= comma < end:
                end = comma
            sent = float(message[index + 4:end])
            bucket = int((time.time() * 1000 - sent) * 10)
            histogram[bucket] = histogram.get(bucket, 0) + 1
            stats["received"] += 1


async def main():
    url, token, channels, first, count = sys.argv[1], sys.argv[2], sys.argv[3].split(","), int(sys.argv[4]), int(sys.argv[5])
    full = f"{url}?apikey={token}&vsn=2.0.0"
    ready = []
    stats = {"received": 0, "histogram": {}, "errors": 0}
    stop = asyncio.Event()
    tasks = []
    for i in range(count):
        topic = "realtime:" + channels[(first + i) % len(channels)]
        tasks.append(asyncio.create_task(run_connection(full, topic, ready, stats, stop)))
        if i % 50 == 49:
            await asyncio.sleep(0.01)
    while len(ready) < count:
        await asyncio.sleep(0.05)
        failed = [t for t in tasks if t.done() and t.exception()]
        if failed:
            print(json.dumps({"error": str(failed[0].exception())}), flush=True)
            return
    print(json.dumps({"ready": len(ready)}), flush=True)
    loop = asyncio.get_running_loop()
    await loop.run_in_executor(None, sys.stdin.read)
    stop.set()
    print(json.dumps({"received": stats["received"], "errors": stats["errors"],
                      "histogram": {str(k): v for k, v in stats["histogram"].items()}}), flush=True)


try:
    import uvloop  # optional (pip install uvloop): a faster event loop for the load client
    uvloop.run(main())
except ImportError:
    asyncio.run(main())
