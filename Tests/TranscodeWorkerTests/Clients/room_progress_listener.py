"""The Python `realtime` client (Supabase, v1 serializer) as the app's room screen.

usage: room_progress_listener.py BASE_URL TOKEN CHANNEL TIMEOUT_SECONDS
Subscribes to CHANNEL, prints {"status": "..."} on subscription changes, then one JSON line
{"broadcast": ...} per `transcode_progress`, `ready` or `failed` broadcast, and exits after
`ready` or `failed` (or fails after TIMEOUT_SECONDS).
"""
import asyncio
import json
import sys

from realtime import AsyncRealtimeClient


def say(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


async def main():
    base, token, channel_name, timeout = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])
    client = AsyncRealtimeClient(base, token, auto_reconnect=False)
    await client.connect()
    done = asyncio.Event()

    def on_progress(payload):
        say({"broadcast": payload})

    def on_final(payload):
        say({"broadcast": payload})
        done.set()

    def on_state(state, error):
        say({"status": str(state.value if hasattr(state, "value") else state), "error": str(error) if error else None})

    channel = client.channel(channel_name)
    channel.on_broadcast("transcode_progress", on_progress)
    channel.on_broadcast("ready", on_final)
    channel.on_broadcast("failed", on_final)
    await channel.subscribe(on_state)
    await asyncio.wait_for(done.wait(), timeout)
    await client.close()


asyncio.run(main())
