#!/usr/bin/env python3
"""The done-when of issue 37: `frag`, `oom --device-memory 12GiB` and `report` against `summary` on
one file, run alternately in one loop (so they suffer the same noise on a shared machine), each
command's wall time, CPU time (user+sys) and peak RSS, and the ratio of its median wall time to
summary's. With --baseline, another memsnap binary's commands run in the same loop, for A/B.

  bench/answers_bench.py [--reps N] [--memsnap build/memsnap] [--baseline OLD_MEMSNAP]
                         [--threads J] [--device-memory 12GiB] FILE

The generated 2.2 M-event file: build/bench/memsnap_gen --events 2200000 --seed 1 -o FILE
(docs/BENCHMARKS.md). `report` writes its page into a temporary directory, removed at the end.
"""
import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time


def warm(path):
    """Reads `path` through the page cache, untimed (see bench/ab.py: proactive reclaim evicts
    cold pages of the file between runs)."""
    with open(path, 'rb', buffering=0) as fh:
        while fh.read(8 << 20):
            pass


def run(cmd):
    start = time.perf_counter()
    pid = os.fork()
    if pid == 0:
        fd = os.open('/dev/null', os.O_WRONLY)
        os.dup2(fd, 1)
        os.dup2(fd, 2)
        os.execvp(cmd[0], cmd)
    _, status, ru = os.wait4(pid, 0)
    wall = time.perf_counter() - start
    code = os.waitstatus_to_exitcode(status)
    return wall, ru.ru_utime + ru.ru_stime, ru.ru_maxrss, code


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('file')
    ap.add_argument('--reps', type=int, default=5)
    ap.add_argument('--memsnap', default='build/memsnap')
    ap.add_argument('--baseline', help='another memsnap binary, run in the same loop')
    ap.add_argument('--threads', type=int, default=0, help='memsnap -j (0: all cores)')
    ap.add_argument('--device-memory', default='12GiB')
    args = ap.parse_args()
    if not os.path.isfile(args.file):
        sys.exit(f'answers_bench: {args.file}: no such file')
    size = os.path.getsize(args.file)
    tmp = tempfile.mkdtemp(prefix='memsnap_answers_')
    try:
        binaries = [('new', args.memsnap)] + ([('old', args.baseline)] if args.baseline else [])
        commands = []
        for tag, exe in binaries:
            base = [exe, '-q', '-j', str(args.threads)]
            commands += [
                (tag, 'summary', base + ['summary', args.file]),
                (tag, 'frag', base + ['frag', args.file]),
                (tag, f'oom --device-memory {args.device_memory}',
                 base + ['oom', '--device-memory', args.device_memory, args.file]),
                (tag, 'report', base + ['report', args.file, '-o',
                                        os.path.join(tmp, f'{tag}.html')]),
            ]
        results = {i: [] for i in range(len(commands))}
        for _ in range(args.reps):
            for i, (_, _, cmd) in enumerate(commands):
                warm(args.file)
                results[i].append(run(cmd))
        print(f'{args.file}: {size / 1e6:.0f} MB, {args.reps} alternating runs, -j {args.threads}, '
              f'{os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}')
        print(f'{"binary":6} {"command":32} {"wall min":>8} {"wall med":>8} {"cpu med":>8} '
              f'{"rss MB":>7} {"rss/file":>8} {"x summary":>9}')
        summary_med = {}
        for i, (tag, name, _) in enumerate(commands):
            med = statistics.median(r[0] for r in results[i])
            if name == 'summary':
                summary_med[tag] = med
        for i, (tag, name, _) in enumerate(commands):
            rs = results[i]
            codes = sorted({r[3] for r in rs})
            wall = sorted(r[0] for r in rs)
            med = statistics.median(wall)
            cpu = statistics.median(r[1] for r in rs)
            rss = max(r[2] for r in rs) / 1024
            print(f'{tag:6} {name:32} {wall[0]:8.3f} {med:8.3f} {cpu:8.3f} {rss:7.0f} '
                  f'{rss * 1024 * 1024 / size:8.2f} {med / summary_med[tag]:9.2f}'
                  + ('' if codes == [0] else f'  exit codes {codes}'))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == '__main__':
    main()
