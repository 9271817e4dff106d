#!/usr/bin/env python3
# releases.py - one benchmark row per Mercurial release
#
# Copyright 2026 hg-backgroundclose contributors
#
# This software may be used and distributed according to the terms of the
# GNU General Public License version 2 or any later version.
"""Summarize bench/results/release-*.json (written by `make bench-releases`)
into one row per release: hg clone --stream at 0 and 700 us, core and the
extension."""

import glob
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def version_key(path):
    version = os.path.basename(path)[len('release-'):-len('.json')]
    return tuple(int(part) for part in version.split('.') if part.isdigit())


def main(argv=None):
    results = os.path.join(HERE, 'results')
    paths = sorted(glob.glob(os.path.join(results, 'release-*.json')),
                   key=version_key)
    if not paths:
        print('no release results: run "make bench-releases" first')
        return 1
    lines = [
        'hg clone -U --stream over ssh, medians in seconds '
        '(ratio to core at 0 us of the same release)',
        '%-9s %7s %14s %14s %14s %14s' % ('release', 'files', 'core 0 us',
                                          'core 700 us', 'ext 0 us',
                                          'ext 700 us'),
    ]
    for path in paths:
        with open(path) as fp:
            data = json.load(fp)
        cells = {}
        for row in data['rows']:
            if row['what'] == 'v2-ssh':
                cells[(row['config'], row['latency'])] = row
        version = os.path.basename(path)[len('release-'):-len('.json')]

        def cell(config, latency):
            row = cells.get((config, latency))
            if row is None:
                return '%14s' % '-'
            return '%14s' % ('%.2f (%.2fx)' % (row['seconds'],
                                               row['ratio_to_core_0us']))

        lines.append('%-9s %7d %s %s %s %s' % (
            version, data['files'], cell('core', '0'), cell('core', '700'),
            cell('ext-adaptive', '0'), cell('ext-adaptive', '700')))
    text = '\n'.join(lines)
    print(text)
    with open(os.path.join(results, 'releases.txt'), 'w') as fp:
        fp.write(text + '\n')
    return 0


if __name__ == '__main__':
    sys.exit(main())
