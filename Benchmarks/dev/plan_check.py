"""Reads one EXPLAIN (FORMAT JSON) plan on standard input; fails (exit 1) when it scans a large
table once per row of another: a Seq Scan costing over PLAN_LARGE_COST (default 2,000, about
100,000 rows of the event logs) on the inner side of a Nested Loop, or inside a SubPlan.
Prints the statement's name, its cost and its verdict."""
import json
import os
import sys

LARGE = float(os.environ.get("PLAN_LARGE_COST", "2000"))


def seq_scans(node):
    if node.get("Node Type") == "Seq Scan" and node.get("Total Cost", 0) > LARGE:
        yield node.get("Relation Name", "?")
    for child in node.get("Plans", []):
        yield from seq_scans(child)


def repeated_scans(node):
    plans = node.get("Plans", [])
    if node.get("Node Type") == "Nested Loop" and len(plans) == 2:
        yield from seq_scans(plans[1])
    for child in plans:
        if child.get("Parent Relationship") == "SubPlan":
            yield from seq_scans(child)
        yield from repeated_scans(child)


name = sys.argv[1]
plan = json.load(sys.stdin)[0]["Plan"]
bad = sorted(set(repeated_scans(plan)))
print(f"plan of {name}: cost {plan['Total Cost']:.0f}, " + (f"scans {', '.join(bad)} once per row of another" if bad else "no repeated scan"))
sys.exit(1 if bad else 0)
