print("analytics-bench: not implemented yet")
