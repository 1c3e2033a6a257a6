"""The three applications of the report's §6 on one workload: synchronous, external queue, integrated."""
