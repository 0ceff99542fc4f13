"""The Python `realtime` client (Supabase, v1 serializer) as the app's room screen, used as the
SDKs use it: the socket is opened with the project's anon key, the signed-in user's session is
handed over with `set_auth`.

usage: room_listener.py BASE_URL API_KEY SESSION|- CHANNEL TIMEOUT_SECONDS
`-`: no session handed over (the client then sends API_KEY as the join's access_token: the anon
key, nobody signed in; or a user's token given as the apikey, which the notifier also takes).
Prints {"status": ..., "error": ...} on subscription changes and {"broadcast": ...} per
`transcode_progress`, `ready` or `failed` broadcast; exits after `ready` or `failed`, or after
the join was refused (or fails after TIMEOUT_SECONDS).
"""
import asyncio
import json
import sys

from realtime import AsyncRealtimeClient


def say(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


async def main():
    base, anon_key, session, channel_name, timeout = sys.argv[1:5] + [float(sys.argv[5])]
    client = AsyncRealtimeClient(base, anon_key, auto_reconnect=False)
    await client.connect()
    if session != "-":
        await client.set_auth(session)
    done = asyncio.Event()

    def on_progress(payload):
        say({"broadcast": payload})

    def on_final(payload):
        say({"broadcast": payload})
        done.set()

    def on_state(state, error):
        state = str(state.value if hasattr(state, "value") else state)
        say({"status": state, "error": str(error) if error else None})
        if state != "SUBSCRIBED":
            done.set()

    channel = client.channel(channel_name)
    channel.on_broadcast("transcode_progress", on_progress)
    channel.on_broadcast("ready", on_final)
    channel.on_broadcast("failed", on_final)
    await channel.subscribe(on_state)
    await asyncio.wait_for(done.wait(), timeout)
    await client.close()


asyncio.run(main())
