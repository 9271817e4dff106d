#!/usr/bin/env python3
# countloop.py - the seams' cost per file, counted in instructions
#
# Copyright 2026 hg-backgroundclose contributors
#
# This software may be used and distributed according to the terms of the
# GNU General Public License version 2 or any later version.
"""Instructions each file of a seam costs above core's loop, counted by
callgrind over ``bench/seamloop.py``.

On a shared 2-core VM the time of a 20,000-file apply varies by more than
the few percent the extension's own work per file adds; the instructions
run in user space do not vary (the kernel's work, the same system calls
either way, is not counted).  A count is not a time, so this complements
the timing benchmark: it shows whether a change to the per-file path does
less work, run after run.

    python bench/countloop.py [--files 4000] [--before DIR] [SCRATCH]

``--before DIR``: a checkout to count too (its own ``bench/seamloop.py``,
with its ``setup.py build_ext --inplace`` done).  Only modes that force a
policy are counted: under valgrind every close looks slow, which would
mislead the adaptive policy into other paths than a real run takes.
Valgrind is installed with apt-get where missing (root only).
"""

import argparse
import concurrent.futures
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import common  # noqa: E402

# (seam, mode): the forced-policy paths of seamloop.py
COUNTED = [
    ('revlog', 'inline'),
    ('revlog', 'background'),
    ('stream', 'inline'),
    ('stream', 'inline-report'),
    ('stream', 'background'),
]


def ensure_valgrind():
    if not shutil.which('valgrind'):
        common.apt_install(['valgrind'])
    return bool(shutil.which('valgrind'))


def count(python, tree, seam, mode, files, scratch):
    """instructions of one seamloop run of ``tree``'s (whole process)"""
    loop = os.path.join(tree, 'bench', 'seamloop.py')
    where = tempfile.mkdtemp(dir=scratch)
    try:
        proc = subprocess.run(
            ['valgrind', '--tool=callgrind', '--callgrind-out-file=/dev/null',
             python, loop, '--seam', seam, '--files', str(files),
             '--runs', '1', '--modes', mode, where],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=True,
        )
    finally:
        shutil.rmtree(where, ignore_errors=True)
    found = re.search(rb'Collected : ([\d,]+)', proc.stderr)
    if found is None:
        raise SystemExit('callgrind printed no count:\n%s'
                         % proc.stderr.decode(errors='replace'))
    return int(found.group(1).replace(b',', b''))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('scratch', nargs='?', default=None,
                        help='where the loops write (default: a tmpfs '
                             'when this process may mount one)')
    parser.add_argument('--files', type=int, default=4000)
    parser.add_argument('--before', metavar='DIR')
    args = parser.parse_args()
    if not ensure_valgrind():
        print('valgrind is missing and could not be installed: '
              'nothing counted')
        return 1
    python = sys.executable
    trees = [('after', common.ROOT)]
    if args.before:
        trees.append(('before', os.path.abspath(args.before)))
    for _label, tree in trees:
        # compiling would be counted (PYTHONDONTWRITEBYTECODE)
        common.compile_for(python, os.path.join(tree, 'hgext3rd'),
                           os.path.join(tree, 'bench'))
    jobs = [(common.ROOT, seam, 'core') for seam in ('revlog', 'stream')]
    jobs += [(tree, seam, mode) for _label, tree in trees
             for seam, mode in COUNTED]
    with common.workdir() as (scratch, _tmpfs):
        scratch = args.scratch or scratch
        # deterministic: two at once on two cores changes no count
        with concurrent.futures.ThreadPoolExecutor(2) as pool:
            counts = dict(zip(jobs, pool.map(
                lambda job: count(python, *job, args.files, scratch), jobs)))
    header = '%-8s %-15s %14s' % ('seam', 'mode', 'core a file')
    header += ''.join(' %14s' % label for label, _tree in trees)
    print('instructions a file above core\'s loop (%d files, callgrind)'
          % args.files)
    print(header)
    for seam, mode in COUNTED:
        core = counts[(common.ROOT, seam, 'core')]
        row = '%-8s %-15s %14d' % (seam, mode, core // args.files)
        for _label, tree in trees:
            row += ' %+14d' % ((counts[(tree, seam, mode)] - core)
                               // args.files)
        print(row)
    return 0


if __name__ == '__main__':
    sys.exit(main())
