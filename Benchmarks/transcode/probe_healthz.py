"""Times GET /healthz of one service, one request every 5 ms on a keep-alive connection, until
STOP_FILE exists; prints p50/p99/max. What the rest of a process feels while it transcodes
and moves files: the latency benchmark runs it against the progress projector of the same
`backbone dev` process. Usage: probe_healthz.py BASE_URL STOP_FILE"""
import http.client
import os
import sys
import time
from urllib.parse import urlparse

url = urlparse(sys.argv[1])
stop_file = sys.argv[2]
connection = http.client.HTTPConnection(url.hostname, url.port, timeout=10)
latencies = []
while not os.path.exists(stop_file):
    started = time.monotonic()
    try:
        connection.request("GET", "/healthz")
        connection.getresponse().read()
    except (OSError, http.client.HTTPException):
        connection = http.client.HTTPConnection(url.hostname, url.port, timeout=10)
        continue
    latencies.append(time.monotonic() - started)
    time.sleep(0.005)
latencies.sort()
n = len(latencies)
if n:
    print(f"healthz-probe requests={n} p50={latencies[n // 2] * 1000:.1f}ms "
          f"p99={latencies[int(n * 0.99)] * 1000:.1f}ms max={latencies[-1] * 1000:.1f}ms")
