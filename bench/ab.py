#!/usr/bin/env python3
"""Runs commands alternately N times and prints each one's wall time, CPU time (user+sys) and
peak RSS (wait4): min and median. For A/B comparisons on a noisy machine: the commands suffer the
same noise because they alternate.

  bench/ab.py N FILE CMD_A... -- CMD_B... [-- CMD_C...]      ({} in a command is replaced by FILE)
  bench/ab.py 6 build/bench_data/a_2.2M.pickle python3 -c "import pickle; pickle.load(open('{}','rb'))" \
      -- build/memsnap -q summary {}
"""
import os
import statistics
import sys
import time


def warm(path):
    """Reads `path` (a file, or a directory's files) through the page cache, untimed. These VMs
    run DAMON's proactive reclaim (a `pageout` scheme on physical memory), which evicts page-cache
    pages it sees as cold, so a run would otherwise read part of the file from disk: noise of
    tens of milliseconds that hits whichever command runs next."""
    paths = [os.path.join(path, f) for f in sorted(os.listdir(path))] if os.path.isdir(path) else [path]
    for p in paths:
        if not os.path.isfile(p):
            continue
        with open(p, 'rb', buffering=0) as fh:
            while fh.read(8 << 20):
                pass

n = int(sys.argv[1])
f = sys.argv[2]
cmds = []
cur = []
for a in sys.argv[3:]:
    if a == '--':
        cmds.append(cur)
        cur = []
    else:
        cur.append(a.replace('{}', f))
cmds.append(cur)
res = [[] for _ in cmds]
for i in range(n):
    for k, c in enumerate(cmds):
        if os.path.exists(f):
            warm(f)
        start = time.perf_counter()
        pid = os.fork()
        if pid == 0:
            fd = os.open('/dev/null', os.O_WRONLY)
            os.dup2(fd, 1)
            os.execvp(c[0], c)
        _, st, ru = os.wait4(pid, 0)
        wall = time.perf_counter() - start
        res[k].append((wall, ru.ru_utime + ru.ru_stime, ru.ru_utime, ru.ru_maxrss, ru.ru_minflt))
for k, c in enumerate(cmds):
    def col(j):
        v = sorted(x[j] for x in res[k])
        return v[0], statistics.median(v)
    w, t, u = col(0), col(1), col(2)
    print(f"{' '.join(c)[:60]}")
    print(f"   wall min {w[0]:.3f} med {w[1]:.3f} | cpu min {t[0]:.3f} med {t[1]:.3f} "
          f"(user med {u[1]:.3f}) | rss {max(x[3] for x in res[k]) / 1024:.0f} MB "
          f"| minor faults med {statistics.median(x[4] for x in res[k]):.0f}")
