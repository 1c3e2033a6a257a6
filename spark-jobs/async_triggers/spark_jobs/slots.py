"""How many tasks Spark runs at once, for the load generator's barrier stages (loadgen.py, jvm_sender.py): every task
of such a stage must run at the same time, or the later ones would send their share late."""
from __future__ import annotations

import os
import time

from .errors import LoadGenError


def check_cores(sc, partitions: int) -> None:
    """Every task of a barrier stage must run at once: refuse more partitions than Spark has cores."""
    cores = task_slots(sc, partitions)
    if partitions > cores:
        raise LoadGenError(f"'partitions' ({partitions}) exceeds the {cores} cores Spark has "
                           f"({sc.master}): the tasks would not all run at once, and the later ones would send "
                           "their share late")


def task_slots(sc, wanted: int, wait_s: float = 60.0) -> int:
    """How many tasks can run at once: N of ``local[N]`` (the machine's cores for ``local[*]``); on a cluster
    manager, the registered executors' cores, waiting up to ``wait_s`` for ``wanted`` of them (a standalone master
    launches the executors one after the other: the first registers seconds before the second)."""
    master = sc.master
    if master.startswith("local"):
        n = master[len("local["):-1].split(",")[0] if master.startswith("local[") else "1"
        return (os.cpu_count() or 1) if n == "*" else int(n)
    per_executor = int(sc.getConf().get("spark.executor.cores", "1"))
    deadline = time.monotonic() + wait_s
    while True:
        slots = max(0, sc._jsc.sc().getExecutorMemoryStatus().size() - 1) * per_executor    # minus the driver
        if slots >= wanted or time.monotonic() > deadline:
            return slots
        time.sleep(0.5)
