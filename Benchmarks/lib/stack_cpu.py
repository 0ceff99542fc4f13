"""CPU seconds so far of a `backbone dev` stack's processes, read from /proc: the benchmarks'
same-run accounting of where the cores went (Benchmarks/social, Benchmarks/learning)."""
import os
import resource
import time

HZ = os.sysconf("SC_CLK_TCK")


def cpu_ticks(pid):
    """utime + stime of process `pid` in clock ticks (0 once it is gone)."""
    try:
        fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
        return int(fields[11]) + int(fields[12])
    except OSError:
        return 0


def process_table():
    """pid → (parent pid, name, command line) of every process."""
    table = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                ppid = int(open(f"/proc/{entry}/stat").read().rsplit(")", 1)[1].split()[1])
                comm = open(f"/proc/{entry}/comm").read().strip()
                cmdline = open(f"/proc/{entry}/cmdline", errors="replace").read()
                table[int(entry)] = (ppid, comm, cmdline)
            except OSError:
                pass
    return table


def tree_seconds(table, name, mark):
    """CPU seconds of the processes called `name` whose command line holds `mark`, and of all
    their descendants (a postmaster's backends, nginx's workers)."""
    if not mark:
        return 0.0
    children = {}
    for pid, (ppid, _, _) in table.items():
        children.setdefault(ppid, []).append(pid)
    found, stack = set(), [p for p, (_, comm, cmd) in table.items() if comm == name and mark in cmd]
    while stack:
        p = stack.pop()
        if p not in found:
            found.add(p)
            stack += children.get(p, [])
    return sum(cpu_ticks(p) for p in found) / HZ


def snapshot(dev_pid, postgres_mark, nginx_mark):
    """The stack's process, its PostgreSQL and nginx, this process ("self") and the machine's
    busy time, in CPU seconds so far; "wall" to divide their differences by."""
    table = process_table()
    with open("/proc/stat") as stat:
        cpu = [int(x) for x in stat.readline().split()[1:]]
    me = resource.getrusage(resource.RUSAGE_SELF)
    return {"backbone": cpu_ticks(dev_pid) / HZ if dev_pid else 0.0,
            "postgres": tree_seconds(table, "postgres", postgres_mark),
            "nginx": tree_seconds(table, "nginx", nginx_mark),
            "self": me.ru_utime + me.ru_stime,
            "machine": (sum(cpu) - cpu[3] - cpu[4]) / HZ, "wall": time.monotonic()}
