"""Runs one acc-analyzer command for the throughput benchmarks
(compare_throughput.py, check_throughput.py) and measures it."""
import json
import resource
import subprocess
import sys
import time


def timed_analyzer(cmd, what):
    """Runs `cmd` (an acc-analyzer command with --json) and returns its
    summary, wall seconds, CPU seconds and peak memory in MB of the largest
    process. Exits when the command fails (exit codes 0 and 1 are verdicts)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.monotonic()
    r = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.monotonic() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if r.returncode not in (0, 1):
        sys.exit(f"{what} failed ({r.returncode}): {r.stderr}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return json.loads(r.stdout), r.returncode, wall, cpu, after.ru_maxrss / 1024
