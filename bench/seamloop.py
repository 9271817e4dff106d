#!/usr/bin/env python3
# seamloop.py - the stream-apply seam's cost per file, in one process
#
# Copyright 2026 hg-backgroundclose contributors
#
# This software may be used and distributed according to the terms of the
# GNU General Public License version 2 or any later version.
"""Time files written through a repository's store vfs as a stream consumer
writes them, with and without the extension's session around the loop.

No stream, no bundle and no process start: only the per-file path of the
seam (vfs wrapper, directories, open, write, hand-over, close), which is
what separates a stream apply from core when closes are fast.  Each mode
runs in a new repository under DIR (use a tmpfs), ``--runs`` times; the
best run is printed in microseconds per file.

    python bench/seamloop.py --files 20000 /tmp/mbt/seamloop

Modes: ``core`` (no session), ``adaptive`` (the session with the default
policy, which leaves most files to core while closes are cheap),
``inline`` (the session's own path, closes inline), ``background`` (closes
on threads: the C lane where built); with
``-report``, the same with the timing report shown, which times every file
(``adaptive-report``, ``inline-report``, ``background-report``;
debugapplystreamclonebundle always shows it).

``--seam revlog`` times a changegroup step's path instead: for each new
file revlog, what core's revlog does through the store's vfs (a read open
that fails, an ``r+`` open that fails, a ``w+`` open registered with the
transaction, seek, write, tell, close), inside a changegroup session
(``-report`` modes do not apply).

``--seam update`` times a working-copy update's path: each file written
with ``repo.wwrite(..., backgroundclose=True)`` inside
``wvfs.backgroundclosing()``, as each update worker writes its share;
``core`` is core's own closer there, which closes inline outside Windows
unless ``worker.backgroundclose`` is set (nor do ``-report`` modes
apply).
"""

import argparse
import os
import shutil
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

from mercurial import extensions, hg, ui as uimod  # noqa: E402

MODES = {
    'core': None,
    'adaptive': None,
    'inline': b'no',
    'background': b'yes',
    'adaptive-report': None,
    'inline-report': b'no',
    'background-report': b'yes',
}


def run(mode, root, count, size, seam='stream'):
    ui = uimod.ui.load()
    ui.setconfig(b'extensions', b'backgroundclose', b'', b'seamloop')
    # every file through the session: no writer threads, and the closer
    # told what to do (adaptive would leave most files to core)
    ui.setconfig(b'worker', b'backgroundclosewrites', b'no', b'seamloop')
    if MODES[mode] is not None:
        ui.setconfig(b'worker', b'backgroundclose', MODES[mode], b'seamloop')
    if mode.endswith('-report'):
        # timed for the report, which is then left unprinted
        ui.setconfig(b'worker', b'backgroundclosereport', b'json', b'seamloop')
        ui.pushbuffer()
    extensions.loadall(ui)
    extensions.populateui(ui)
    if seam == 'revlog':
        return run_revlogs(mode, ui, root, count, size)
    if seam == 'update':
        return run_update(mode, ui, root, count, size)
    from hgext3rd.backgroundclose.stream import apply as streamapply
    from hgext3rd.backgroundclose.stream import wrappers as streamwrappers

    shutil.rmtree(root, ignore_errors=True)
    repo = hg.repository(ui, root, create=True)
    data = b'x' * size
    # two files a directory, as a store of a deep tree has
    names = [b'data/d%d/f%d.i' % (i // 2, i) for i in range(count)]

    def consume():
        with repo.svfs.backgroundclosing(repo.ui):
            for name in names:
                with repo.svfs(name, b'w') as fp:
                    fp.write(data)

    start = time.perf_counter()
    with repo.lock():
        if mode == 'core':
            consume()
        else:
            session = streamapply.ApplySession(repo, b'v3')
            session.run(repo.store.rawvfs, streamwrappers.SESSION_SEAMS,
                        consume, (), {})
    took = (time.perf_counter() - start) / count * 1e6
    if mode.endswith('-report'):
        ui.popbuffer()
    return took


def run_revlogs(mode, ui, root, count, size):
    from hgext3rd.backgroundclose.changegroup import revlogs as revlogwrite

    shutil.rmtree(root, ignore_errors=True)
    repo = hg.repository(ui, root, create=True)
    data = b'x' * size
    names = [b'data/d%d/f%d.i' % (i // 2, i) for i in range(count)]
    svfs = repo.svfs

    def step(tr):
        for name in names:
            try:
                svfs(name, b'rb')  # the revlog's index, not there yet
            except FileNotFoundError:
                pass
            try:
                fp = svfs(name, b'r+', checkambig=False)
            except FileNotFoundError:
                fp = svfs(name, b'w+')
            tr.add(name, 0)
            fp.seek(0, os.SEEK_END)
            fp.write(data)
            fp.tell()
            fp.close()

    with repo.lock(), repo.transaction(b'seamloop') as tr:
        start = time.perf_counter()
        if mode == 'core':
            step(tr)
        else:
            session = revlogwrite.RevlogSession(repo, count)
            session.run(repo.store.rawvfs, revlogwrite._SESSION_SEAMS, step,
                        (tr,), {})
        return (time.perf_counter() - start) / count * 1e6


def run_update(mode, ui, root, count, size):
    from mercurial import vfs as vfsmod
    from hgext3rd.backgroundclose.checkout import filecloser as workingcopy

    shutil.rmtree(root, ignore_errors=True)
    repo = hg.repository(ui, root, create=True)
    data = b'x' * size
    names = [b'd%d/f%d' % (i // 2, i) for i in range(count)]

    def update():
        with repo.wvfs.backgroundclosing(repo.ui, count):
            for name in names:
                repo.wwrite(name, data, b'', backgroundclose=True)

    # core: core's own closer, the extension's taken out while this runs
    wrapper = None
    if mode == 'core':
        wrapper = extensions.unwrapfunction(
            vfsmod, 'backgroundfilecloser', workingcopy.backgroundfilecloser
        )
    try:
        with repo.wlock():
            start = time.perf_counter()
            update()
            return (time.perf_counter() - start) / count * 1e6
    finally:
        if wrapper is not None:
            extensions.wrapfunction(vfsmod, 'backgroundfilecloser', wrapper)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('dir')
    parser.add_argument('--files', type=int, default=20000)
    parser.add_argument('--size', type=int, default=700,
                        help='bytes per file')
    parser.add_argument('--runs', type=int, default=3)
    parser.add_argument('--modes', default=None)
    parser.add_argument('--seam', choices=('stream', 'revlog', 'update'),
                        default='stream')
    args = parser.parse_args()
    known = [m for m in MODES
             if args.seam == 'stream' or not m.endswith('-report')]
    modes = args.modes.split(',') if args.modes else known
    best = {mode: None for mode in modes}
    for _ in range(args.runs):
        for mode in modes:
            if mode not in known:
                parser.error('unknown mode %r' % mode)
            root = os.fsencode(os.path.join(args.dir, mode))
            took = run(mode, root, args.files, args.size, args.seam)
            if best[mode] is None or took < best[mode]:
                best[mode] = took
    for mode in modes:
        print('%-18s %6.1f us/file' % (mode, best[mode]))
    shutil.rmtree(args.dir, ignore_errors=True)
    return 0


if __name__ == '__main__':
    sys.exit(main())
