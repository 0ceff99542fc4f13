#!/usr/bin/env python3
"""Folds a system-wide `perf record -g` of the pipeline by process: self time by shared object and by symbol,
and inclusive time of each frame, as percentages of the samples of the given pids (a service, or the PostgreSQL
backends it opened). Usage: perf-fold.py perf.data PID[,PID…] [TOP]  (used for docs/profiles/pipeline/)."""
import collections
import os
import re
import subprocess
import sys
data, pids = sys.argv[1], set(sys.argv[2].split(','))
top = int(sys.argv[3]) if len(sys.argv) > 3 else 40
p = subprocess.Popen(['perf','script','-i',data,'-F','pid,tid,ip,sym,dso'], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, errors='replace')
selfsym = collections.Counter(); selfdso = collections.Counter(); incl = collections.Counter(); n = 0
cur = None; frames = []
def short(s):
    return s[:170]
def flush():
    global n
    if cur is None or cur not in pids or not frames: return
    n += 1
    sym, dso = frames[0]
    selfsym[(dso, sym)] += 1; selfdso[dso] += 1
    seen = set()
    for s, d in frames:
        if (d, s) not in seen:
            seen.add((d, s)); incl[(d, s)] += 1
for line in p.stdout:
    if not line.strip():
        flush(); cur = None; frames = []; continue
    if not line.startswith('\t') and not line.startswith(' ' * 8):
        flush(); frames = []
        m = re.match(r'\s*(\d+)/(\d+)', line)
        cur = m.group(1) if m else None
        continue
    m = re.match(r'\s*[0-9a-f]+\s+(.*?)\s+\((.*)\)\s*$', line)
    if m:
        sym = re.sub(r'\+0x[0-9a-f]+$', '', m.group(1)); dso = os.path.basename(m.group(2))
        frames.append((sym, dso))
flush()
print(f"samples: {n}")
print("\n## self time by shared object")
for (d), c in selfdso.most_common(15): print(f"  {100*c/n:6.2f}%  {d}")
print(f"\n## self time by symbol (top {top})")
for (d, s), c in selfsym.most_common(top): print(f"  {100*c/n:6.2f}%  {d:22s} {short(s)}")
print(f"\n## inclusive (the frame anywhere on the stack), top {top} frames of this program's own code and libraries")
k = 0
for (d, s), c in incl.most_common(400):
    if d.startswith('[kernel') or s in ('start_thread','__clone3','[unknown]','_dispatch_worker_thread','_dispatch_root_queue_drain','swift_job_run','_dispatch_continuation_pop','_dispatch_async_redirect_invoke','swift::runJobInEstablishedExecutorContext','_dispatch_worker_thread2','__GI___clone3'): continue
    print(f"  {100*c/n:6.2f}%  {d:22s} {short(s)}"); k += 1
    if k >= top: break
