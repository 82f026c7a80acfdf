"""Starts the ranks of a distributed test program and waits for them, the
way a user would: with torchrun, or by hand with torchrun's variables
(Debian 12's torchrun fails under Python 3.11). It never imports torch, so
a preloaded recorder does not take it for a rank.

Options (environment):
  LAUNCH_SCRIPT   the program (a path)
  LAUNCH_RANKS    processes (default 2)
  LAUNCH_TORCHRUN 1: run `python -m torch.distributed.run --nproc_per_node N`
                  with LAUNCH_TORCHRUN_ARGS (space-separated) added;
                  otherwise start each rank with MASTER_ADDR, MASTER_PORT,
                  RANK, LOCAL_RANK and WORLD_SIZE set (and USE_LIBUV=0)
Prints the ranks' output (stdout), rank by rank (torchrun's "[default0]:"
prefixes removed), and exits with the first non-zero exit status.
"""
import os
import re
import socket
import subprocess
import sys


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main():
    script = os.environ["LAUNCH_SCRIPT"]
    ranks = int(os.environ.get("LAUNCH_RANKS", "2"))
    port = str(free_port())
    if os.environ.get("LAUNCH_TORCHRUN") == "1":
        extra = os.environ.get("LAUNCH_TORCHRUN_ARGS", "").split()
        done = subprocess.run([sys.executable, "-m", "torch.distributed.run", f"--nproc_per_node={ranks}",
                               "--master_addr=127.0.0.1", f"--master_port={port}", *extra, script],
                              stdout=subprocess.PIPE, timeout=600)
        for line in done.stdout.decode().splitlines(True):
            sys.stdout.write(re.sub(r"^\[[a-z]+\d+\]:", "", line))
        return done.returncode
    procs = []
    for rank in range(ranks):
        # USE_LIBUV=0: Debian's torch 2.x has no libuv, and its rendezvous
        # store asks for it unless told not to (torch 1.13 ignores it).
        env = dict(os.environ, MASTER_ADDR="127.0.0.1", MASTER_PORT=port, RANK=str(rank), LOCAL_RANK=str(rank),
                   WORLD_SIZE=str(ranks), USE_LIBUV=os.environ.get("USE_LIBUV", "0"))
        procs.append(subprocess.Popen([sys.executable, script], env=env, stdout=subprocess.PIPE))
    status = 0
    for p in procs:
        out, _ = p.communicate(timeout=600)
        sys.stdout.write(out.decode())
        status = status or p.returncode
    return status


if __name__ == "__main__":
    sys.exit(main())
