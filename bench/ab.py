#!/usr/bin/env python3
"""Runs commands alternately N times and prints each one's CPU time (user+sys, and user alone),
min and median, and peak RSS, from wait4. For A/B comparisons on a noisy machine: the commands
suffer the same noise because they alternate.

  bench/ab.py N FILE CMD_A... -- CMD_B... [-- CMD_C...]      ({} in a command is replaced by FILE)
  bench/ab.py 6 build/bench_data/a_2.2M.pickle python3 -c "import pickle; pickle.load(open('{}','rb'))" \
      -- build/memsnap -q summary {}
"""
import os, sys, statistics, subprocess
n = int(sys.argv[1]); f = sys.argv[2]
cmds = []; cur = []
for a in sys.argv[3:]:
    if a == '--': cmds.append(cur); cur = []
    else: cur.append(a.replace('{}', f))
cmds.append(cur)
res = [[] for _ in cmds]
for i in range(n):
    for k, c in enumerate(cmds):
        pid = os.fork()
        if pid == 0:
            fd = os.open('/dev/null', os.O_WRONLY); os.dup2(fd, 1)
            os.execvp(c[0], c)
        _, st, ru = os.wait4(pid, 0)
        res[k].append((ru.ru_utime + ru.ru_stime, ru.ru_maxrss, ru.ru_utime))
for k, c in enumerate(cmds):
    t = sorted(x[0] for x in res[k]); u = sorted(x[2] for x in res[k]); print(f"   user min {u[0]:.3f} med {statistics.median(u):.3f}")
    print(f"{' '.join(c)[:50]:50s} min {t[0]:.3f} med {statistics.median(t):.3f} rss {res[k][0][1]/1024:.0f} MB  all " + " ".join(f"{x[0]:.3f}" for x in res[k]))
