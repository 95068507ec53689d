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
