print("loop-bench: workloads coming")
