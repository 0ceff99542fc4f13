"""The Python `realtime` client (Supabase, v1 serializer) as a witness.

usage: supabase_listener.py BASE_URL TOKEN CHANNEL EVENT COUNT
Subscribes to CHANNEL, prints {"status": "..."} on subscription changes, then one JSON line per
broadcast with EVENT, and exits after COUNT of them.
"""
import asyncio
import json
import sys

from realtime import AsyncRealtimeClient


def say(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


async def main():
    base, token, channel_name, event, count = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5])
    client = AsyncRealtimeClient(base, token, auto_reconnect=False)
    await client.connect()
    done = asyncio.Event()
    received = []

    def on_event(payload):
        received.append(payload)
        say({"broadcast": payload})
        if len(received) >= count:
            done.set()

    def on_state(state, error):
        say({"status": str(state.value if hasattr(state, "value") else state), "error": str(error) if error else None})

    channel = client.channel(channel_name)
    channel.on_broadcast(event, on_event)
    await channel.subscribe(on_state)
    await asyncio.wait_for(done.wait(), 30)
    await client.close()


asyncio.run(main())
