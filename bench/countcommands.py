#!/usr/bin/env python3
# countcommands.py - whole commands at 0 us, counted in instructions
#
# Copyright 2026 hg-backgroundclose contributors
#
# This software may be used and distributed according to the terms of the
# GNU General Public License version 2 or any later version.
"""The instructions of whole commands, core against the extension, with
closes at 0 us, counted by callgrind in every process they start.

The timing benchmark (run.py) cannot tell a 3% difference at 0 us on a
shared 2-core VM: one run of a row varies by more than that.  The
instructions run in user space do not vary, so this counts the rows of
run.py instead, on the same corpus, one command each:

- every process a command starts is counted (an update's workers, the
  dummy ssh script), but not the server of the ssh rows, the same work for
  core and the extension;
- Python's string hashes are seeded the same in every command
  (``PYTHONHASHSEED``): with random seeds a count varies by about 0.1%;
- the kernel's work is not counted, and it is not always the same: the
  extension makes each directory once, core tries again for each file.
  A ratio here is the extension's user-space work, not its time;
- under callgrind every open and close takes tens of times longer, which
  the extension's adaptive closer would take for a slow file system.  Its
  threshold (``worker.backgroundclosethreshold``) is raised by
  ``--slowdown`` so that it takes the paths a real run takes at 0 us: the
  threads column says how many threads each command started beyond its
  processes' main threads (none, where it took them).

    python bench/countcommands.py --hg HG --shim SHIM [--files 20000]
        [--operations v1-apply,...] [--before DIR]

Valgrind is installed with apt-get where missing (root only).
"""

import argparse
import concurrent.futures
import os
import queue
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import common  # noqa: E402
import countloop  # noqa: E402
import run  # noqa: E402

OPERATIONS = ['v1-apply', 'v1-ssh', 'v2-ssh', 'v3-unbundle', 'cg-unbundle',
              'update']
# the extension's default threshold, in microseconds (__init__.py)
THRESHOLD = 30


def counter(scratch):
    """a Bench.measure that counts: (instructions of every process,
    threads started beyond each process's main thread)"""

    def measure(cmd, env):
        out = tempfile.mkdtemp(dir=scratch)
        try:
            proc = subprocess.run(
                ['valgrind', '--tool=callgrind', '--trace-children=yes',
                 '--separate-threads=yes',
                 '--callgrind-out-file=' + os.path.join(out, 'cg.%p')]
                + cmd,
                env=dict(env, PYTHONHASHSEED='0'),
                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
            )
            # pid -> instructions; a server's own (ssh rows) comes back as
            # "remote:" lines: only the client side is counted
            counts = {}
            for line in proc.stderr.splitlines():
                found = re.match(rb'==(\d+)== Collected : ([\d,]+)', line)
                if found:
                    counts[found.group(1).decode()] = int(
                        found.group(2).replace(b',', b''))
            # one file per thread of each process: cg.PID-01, -02, ...
            threads = 0
            for name in os.listdir(out):
                found = re.match(r'cg\.(\d+)-(\d+)$', name)
                if found and found.group(1) in counts \
                        and int(found.group(2)) > 1:
                    threads += 1
        finally:
            shutil.rmtree(out, ignore_errors=True)
        if proc.returncode:
            raise SystemExit('%s failed under valgrind:\n%s' % (
                ' '.join(cmd), proc.stderr.decode(errors='replace')[-3000:]))
        if not counts:
            raise SystemExit('callgrind printed no count for %s'
                             % ' '.join(cmd))
        return sum(counts.values()), threads

    return measure


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--hg', required=True)
    parser.add_argument('--shim', required=True)
    parser.add_argument('--files', type=int, default=20000)
    parser.add_argument('--seed', type=int, default=1)
    parser.add_argument('--size-scale', type=float, default=1.0)
    parser.add_argument('--operations', default=','.join(OPERATIONS))
    parser.add_argument('--slowdown', type=int, default=50,
                        help='how many times the threshold is raised')
    parser.add_argument('--before', metavar='DIR',
                        help='another copy of the extension\'s package, '
                             'counted as ext-before (as run.py --before)')
    args = parser.parse_args()
    operations = args.operations.split(',')
    unknown = [op for op in operations if op not in run.OPERATIONS]
    if unknown:
        parser.error('unknown operation: %s' % ', '.join(unknown))
    if not countloop.ensure_valgrind():
        print('valgrind is missing and could not be installed: '
              'nothing counted')
        return 1
    configs = ['core', 'ext-adaptive']
    if args.before:
        run.CONFIGS['ext-before'] = [
            '--config', 'extensions.backgroundclose=%s'
            % os.path.abspath(args.before)]
        configs.append('ext-before')
    # compiling would be counted (PYTHONDONTWRITEBYTECODE)
    common.byte_compile(args.hg, common.EXTENSION,
                        *([args.before] if args.before else []))

    with common.workdir() as (work, _tmpfs):
        first = run.Bench(args, work)
        print('building the %d-file corpus...' % args.files, flush=True)
        src = first.prepare(args.files, operations=operations)
        files, _size = run.store_size(src)
        first.v1_server()  # made once, before two commands could race
        # two commands at a time, each in a place of its own: a count does
        # not depend on what else runs
        benches = queue.Queue()
        for number in range(2):
            bench = run.Bench(args, work) if number else first
            place = os.path.join(work, 'counted-%d' % number)
            os.makedirs(place)
            bench.target = place
            bench.dest = os.path.join(place, 'dest')
            bench.measure = counter(work)
            bench.extra = ['--config', 'worker.backgroundclosethreshold=%d'
                           % (THRESHOLD * args.slowdown)]
            benches.put(bench)

        def count(job):
            op, config = job
            bench = benches.get()
            try:
                return bench.run_hg(op, config, '0', src)
            finally:
                benches.put(bench)

        jobs = [(op, config) for op in operations for config in configs
                if (op, config) not in run.NOT_APPLICABLE]
        with concurrent.futures.ThreadPoolExecutor(2) as pool:
            counts = dict(zip(jobs, pool.map(count, jobs)))

    print('instructions of whole commands at 0 us (callgrind, %d files; '
          'user space of the client side)' % files)
    header = '%-13s %16s' % ('operation', 'core')
    for config in configs[1:]:
        header += ' %27s' % config
    print(header + '   threads started')
    for op in operations:
        core, corethreads = counts[(op, 'core')]
        row = '%-13s %16d' % (op, core)
        threads = [corethreads]
        for config in configs[1:]:
            mine, minethreads = counts[(op, config)]
            row += ' %7.3fx %+8.0f a file' % (
                mine / core, (mine - core) / files) + ' ' * 3
            threads.append(minethreads)
        print(row + '   ' + ' / '.join(str(t) for t in threads))
    return 0


if __name__ == '__main__':
    sys.exit(main())
