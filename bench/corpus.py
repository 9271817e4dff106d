#!/usr/bin/env python3
# corpus.py - build a synthetic Mercurial repository shaped like a source tree
#
# Copyright 2026 hg-backgroundclose contributors
#
# This software may be used and distributed according to the terms of the
# GNU General Public License version 2 or any later version.
"""Build a deterministic repository for benchmarks and the demo.

The tree looks like a large source tree: deep directories, some very long
paths (their store names get hashed), mixed-case names and names that need
store encoding, heavy-tailed file sizes, compressible text and incompressible
bytes.  A second changeset modifies a fraction of the files so that some
revlogs carry deltas.

    python3 bench/corpus.py --files 20000 --seed 1 --hg .venv/bin/hg DEST
    python3 bench/corpus.py --from-dir SOMETREE --hg .venv/bin/hg DEST
"""

import argparse
import os
import random
import shutil
import subprocess
import sys

WORDS = (
    'core util net gfx dom layout js xpcom widget media ipc toolkit build '
    'config docs tests browser mobile security storage intl image modules '
    'netwerk parser services testing third_party tools uriloader view'
).split()

# fixed commit date: the same seed gives the same changeset hashes
DATE = '0 0'

EXTENSIONS = ('.c', '.cpp', '.h', '.py', '.js', '.rs', '.txt', '.json', '.html')


def file_size(rng, scale=1.0):
    """heavy-tailed sizes: most files are small, a few are large"""
    size = int(rng.paretovariate(1.2) * 400 * scale)
    return min(size, 2 * 1024 * 1024)


def word_text(rng, size):
    """``size`` bytes of words and line breaks"""
    words = []
    total = 0
    while total < size:
        word = rng.choice(WORDS)
        words.append(word)
        total += len(word) + 1
        if rng.random() < 0.1:
            words.append('\n')
    return ' '.join(words).encode('ascii')[:size]


class TextPool:
    """compressible text for many files, fast: slices of one seeded block

    Generating every file word by word costs minutes for the gigabytes of a
    mozilla-central-sized corpus; slices at random offsets of a 4 MB block
    compress like source text all the same.
    """

    SIZE = 4 * 1024 * 1024

    def __init__(self, rng):
        self.block = word_text(rng, self.SIZE)

    def take(self, rng, size):
        if size >= self.SIZE:
            repeat = self.block * (size // self.SIZE + 1)
            return repeat[:size]
        start = rng.randrange(self.SIZE - size + 1)
        return self.block[start : start + size]


def relpaths(rng, count):
    """yield `count` distinct relative paths"""
    seen = set()
    while len(seen) < count:
        depth = rng.randint(1, 7)
        parts = [rng.choice(WORDS) for _ in range(depth)]
        roll = rng.random()
        stem = '%s_%d' % (rng.choice(WORDS), len(seen))
        if roll < 0.10:
            stem = stem.capitalize() + 'Impl'  # upper case: store encodes it
        elif roll < 0.13:
            stem = stem + ' with spaces~and:colons'  # escaped in the store
        elif roll < 0.15:
            # long enough to make the store fall back to hashed names
            parts.append('very_long_directory_name_for_hashing_' * 3)
            stem = stem + '_' + 'x' * 80
        elif roll < 0.16:
            stem = 'aux' if rng.random() < 0.5 else 'con'  # reserved on Windows
            stem += '_%d' % len(seen)
        path = '/'.join(parts + [stem + rng.choice(EXTENSIONS)])
        if path.lower() in seen:
            continue
        seen.add(path.lower())
        yield path


def write_tree(dest, count, seed, scale=1.0):
    rng = random.Random(seed)
    # the pool draws from its own generator: the paths of a seed stay the
    # ones the tests name
    pool = TextPool(random.Random('text pool %d' % seed))
    paths = list(relpaths(rng, count))
    for path in paths:
        full = os.path.join(dest, path)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        size = file_size(rng, scale)
        if rng.random() < 0.15:
            data = rng.randbytes(size)  # incompressible
        else:
            data = pool.take(rng, size)
        with open(full, 'wb') as fp:
            fp.write(data)
    return paths, rng, pool


def hg(hgexe, *args, cwd=None):
    subprocess.run(
        [
            hgexe,
            '--config',
            'ui.username=corpus <corpus@example.invalid>',
            # names with ':' are kept on purpose: the store escapes them
            '--config',
            'ui.portablefilenames=ignore',
        ]
        + list(args),
        cwd=cwd,
        check=True,
        stdout=subprocess.DEVNULL,
    )


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('dest', help='repository to create (must not exist)')
    parser.add_argument('--files', type=int, default=20000)
    parser.add_argument('--seed', type=int, default=1)
    parser.add_argument(
        '--size-scale', type=float, default=1.0,
        help='multiply file sizes (3 gives about 1.5 GB of store at 230k files)',
    )
    parser.add_argument('--hg', default='hg', help='hg executable to use')
    parser.add_argument(
        '--from-dir', help='build the repository from this tree instead'
    )
    args = parser.parse_args(argv)
    if os.path.exists(args.dest):
        parser.error('%s already exists' % args.dest)
    if args.from_dir:
        shutil.copytree(
            args.from_dir,
            args.dest,
            ignore=shutil.ignore_patterns('.hg', '.git'),
            symlinks=True,
        )
        hg(args.hg, 'init', args.dest)
        hg(args.hg, 'commit', '-q', '-A', '-d', DATE, '-m', 'import tree', cwd=args.dest)
        return 0
    os.makedirs(args.dest)
    hg(args.hg, 'init', args.dest)
    paths, rng, pool = write_tree(
        args.dest, args.files, args.seed, args.size_scale
    )
    hg(args.hg, 'commit', '-q', '-A', '-d', DATE, '-m', 'initial tree', cwd=args.dest)
    # a second changeset touching some files gives revlogs with deltas
    for path in rng.sample(paths, max(1, len(paths) // 10)):
        with open(os.path.join(args.dest, path), 'ab') as fp:
            fp.write(pool.take(rng, 200))
    hg(args.hg, 'commit', '-q', '-d', DATE, '-m', 'second revision', cwd=args.dest)
    return 0


if __name__ == '__main__':
    sys.exit(main())
