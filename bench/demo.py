#!/usr/bin/env python3
# demo.py - show a stream clone with and without hg-backgroundclose
#
# Copyright 2026 hg-backgroundclose contributors
#
# This software may be used and distributed according to the terms of the
# GNU General Public License version 2 or any later version.
"""Clone a sample repository with `hg clone --stream` over ssh under a
modelled slow-close file system, with core Mercurial and with the extension,
and print wall times and timing reports side by side.

Run through `make demo`, which builds the virtualenv and the shim first.
"""

import argparse
import os
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import common  # noqa: E402


def clone(hg, env, src, dest, latency, shim, extra):
    """one stream clone; returns (seconds, report text)"""
    env = common.latency_env(env, shim, str(latency))
    cmd = [
        hg, 'clone', '-U', '--stream', '--ssh', common.SSH,
        '--config', 'ui.remotecmd=%s' % hg,
        'ssh://demo/%s' % src, dest,
    ] + extra
    start = time.perf_counter()
    out = subprocess.run(
        cmd, env=env, check=True, stdout=subprocess.PIPE, text=True
    ).stdout
    seconds = time.perf_counter() - start
    shutil.rmtree(dest)
    report = out[out.find('stream apply'):] if 'stream apply' in out else ''
    return seconds, report.rstrip('\n').split('\n')


def side_by_side(left, right, titles):
    width = max([len(line) for line in left] + [len(titles[0])]) + 3
    lines = ['%-*s%s' % (width, titles[0], titles[1])]
    lines.append('%-*s%s' % (width, '-' * len(titles[0]), '-' * len(titles[1])))
    for i in range(max(len(left), len(right))):
        a = left[i] if i < len(left) else ''
        b = right[i] if i < len(right) else ''
        lines.append('%-*s%s' % (width, a, b))
    return '\n'.join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--hg', required=True)
    parser.add_argument('--shim', required=True)
    parser.add_argument('--files', type=int, default=10000)
    parser.add_argument('--latency', type=int, default=700, help='us/close')
    args = parser.parse_args(argv)
    hg = os.path.abspath(args.hg)
    shim = os.path.abspath(args.shim)
    common.byte_compile(hg, common.EXTENSION)

    with common.workdir(prefix='hg-backgroundclose-demo-') as (work, mounted):
        hgrc = os.path.join(work, 'hgrc')
        with open(hgrc, 'w') as fp:
            fp.write(common.EXTENSION_HGRC)
        env = dict(os.environ, HGRCPATH=hgrc, HGPLAIN='1')
        where = 'tmpfs' if mounted else 'a temporary directory (not tmpfs)'
        print('working in %s: %s' % (where, work))
        src = os.path.join(work, 'src')
        print('building a %d-file sample repository...' % args.files)
        subprocess.run(
            [sys.executable, common.CORPUS, '--hg', hg,
             '--files', str(args.files), src],
            env=env, check=True,
        )
        dest = os.path.join(work, 'clone')
        core = ['--config', 'extensions.backgroundclose=!']
        report = ['--config', 'worker.backgroundclosereport=yes']
        runs = [
            ('core Mercurial', 0, core),
            ('core Mercurial', args.latency, core),
            ('extension, inline closes', args.latency,
             report + ['--config', 'worker.backgroundclose=no']),
            ('extension, adaptive', args.latency, report),
        ]
        print('cloning with hg clone --stream over ssh; the modelled close '
              'latency applies to the client only\n')
        results = []
        for title, latency, extra in runs:
            seconds, text = clone(hg, env, src, dest, latency, shim, extra)
            results.append((title, latency, seconds, text))
            print('  %-26s %5d us/close  %7.2f s' % (title, latency, seconds))
        base = results[0][2]
        print('\nrelative to core Mercurial without added latency:')
        for title, latency, seconds, _text in results[1:]:
            print('  %-26s %5d us/close  %6.2fx' % (title, latency, seconds / base))
        print()
        print(side_by_side(
            results[2][3], results[3][3],
            ('extension, inline (what core does)', 'extension, adaptive'),
        ))
    return 0


if __name__ == '__main__':
    sys.exit(main())
