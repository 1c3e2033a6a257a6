"""The shared machinery of the report's experiments: the test bed, one application's run, completions and drain,
the lag probe, the processes and their resources, the verification."""
