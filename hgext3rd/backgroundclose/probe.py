# probe.py - hg debugprobeclose: does this file system need the extension?
#
# Copyright 2026 hg-backgroundclose contributors
#
# This software may be used and distributed according to the terms of the
# GNU General Public License version 2 or any later version.
"""Time writing a few hundred store-like files where a repository lives.

The probe writes ``FILES`` files in nested directories, with sizes spread
like a store's revlogs, in a temporary directory it removes again whatever
happens (an error, Ctrl-C).  It times each mkdir, open, write and close,
then fsync and close for a few more files, and the CPU time of each close
on the closing thread: an antivirus scan burns CPU on close, a network
round trip or a device flush does not.

The closes are then fed, in order, to the same ``Policy`` the closer uses
(policy.py) with the user's settings, which decides as it would during an
apply: inline or background, and how many threads.  The time saved per
100,000 files follows from a simple model: a file costs its write time
plus its close time when closed inline; handed over, the writer only waits
when the threads fall behind, which is the close time divided by the
threads (by the cores when closes burn CPU).  The hand-over itself is not
counted, so the figure is an upper bound.
"""

import os
import shutil
import tempfile
import time

from mercurial.i18n import _
from mercurial import (
    error,
    util,
)
from mercurial.utils import stringutil

from . import (
    closer as closermod,
    messages,
    policy as policymod,
    report as reportmod,
    settings,
)

FILES = 300
FSYNC_FILES = 32
# what the estimate is given for
ESTIMATE_FILES = 100000

_OPERATIONS = ('mkdir', 'open', 'write', 'close', 'fsync', 'close-fsynced')
_LABELS = {
    'mkdir': _(b'mkdir'),
    'open': _(b'open'),
    'write': _(b'write'),
    'close': _(b'close'),
    'fsync': _(b'fsync'),
    'close-fsynced': _(b'close after fsync'),
}


def _shape(count):
    """(relative path, size) of ``count`` files: two levels of directories,
    sizes from 128 bytes to 64 KB, most of them small, as in a store"""
    sizes = (128, 512, 512, 2048, 2048, 2048, 8192, 8192, 32768, 65536)
    for i in range(count):
        path = b'data/d%02d/s%d/f%04d.i' % (i % 16, i % 7, i)
        yield path, sizes[(i * 7) % len(sizes)]


class Probe:
    """the measurements of one probe"""

    def __init__(self):
        self.ops = {name: closermod.OpStat() for name in _OPERATIONS}
        self.closecpu = 0.0  # CPU time of the timed closes
        self.closes = []  # (wall, cpu) of each close, in order

    def write_files(self, workdir, count, fsync, clock=util.timer):
        ops = self.ops
        made = set()
        for path, size in _shape(count):
            if fsync:
                path = b'fsynced/' + path
            name = os.path.join(workdir, path)
            parent = os.path.dirname(name)
            if parent not in made:
                start = clock()
                os.makedirs(parent, exist_ok=True)
                ops['mkdir'].add(clock() - start)
                made.add(parent)
            data = b'\0' * size
            start = clock()
            fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o666)
            try:
                ops['open'].add(clock() - start)
                start = clock()
                written = 0
                while written < size:
                    written += os.write(fd, data[written:])
                ops['write'].add(clock() - start, size)
                if fsync:
                    start = clock()
                    os.fsync(fd)
                    ops['fsync'].add(clock() - start)
            except OSError as exc:
                closermod.close_quietly(fd)
                raise closermod.FileError(name, exc, 'writing') from exc
            cpustart = time.thread_time()
            start = clock()
            try:
                os.close(fd)
            except OSError as exc:
                raise closermod.FileError(name, exc) from exc
            wall = clock() - start
            cpu = time.thread_time() - cpustart
            ops['close-fsynced' if fsync else 'close'].add(wall)
            if not fsync:
                self.closes.append((wall, cpu))

    def writer_time(self):
        """the writer's own time per file: mkdir, open and write"""
        ops = self.ops
        files = ops['open'].count or 1
        return (
            ops['mkdir'].seconds + ops['open'].seconds + ops['write'].seconds
        ) / files

    def decide(self, options):
        """what the closer would do here: (policy, threads)"""
        options = dict(options)
        options.pop('maxqueue', None)  # the closer's, not the policy's
        options['expectedcount'] = ESTIMATE_FILES
        policy = policymod.Policy(**options)
        adaptive = policy.policy == policymod.ADAPTIVE
        for wall, cpu in self.closes:
            policy.learn_cpu(wall, cpu)
            if adaptive and policy.learn_inline(wall):
                policy.switch_to_background(wall)
        threads = 0
        if policy.background:
            if not adaptive:  # forced: size the pool for what was measured
                policy.latency = self.ops['close'].mean
            needed = policy.threads_needed(
                self.writer_time(), running=0, backlog=False
            )
            threads = min(max(policy.threads, needed), policy.thread_cap())
        return policy, threads

    def saved(self, policy, threads):
        """seconds saved per ESTIMATE_FILES files, at most"""
        if not threads:
            return 0.0
        writer = self.writer_time()
        close = self.ops['close'].mean
        inline = writer + close
        if policy.burning:
            handed = max(writer, inline / policy.cores)
        else:
            handed = max(writer, close / threads)
        return max(0.0, inline - handed) * ESTIMATE_FILES


def run(ui, repo, dest, opts):
    """the command: probe ``dest`` (or next to ``repo``'s store, or the
    current directory) and print what the closer would do there"""
    settings.validate(ui)
    if dest:
        parent = util.expandpath(dest)
        if not os.path.isdir(parent):
            raise error.Abort(_(b'%s is not a directory') % dest)
    elif repo is not None:
        parent = repo.vfs.join(b'')
    else:
        parent = b'.'
    try:
        workdir = tempfile.mkdtemp(prefix=b'hg-probeclose-', dir=parent)
    except OSError as exc:
        raise error.Abort(
            _(b'cannot write in %s: %s')
            % (parent, stringutil.forcebytestr(exc.strerror or exc))
        )
    probe = Probe()
    try:
        probe.write_files(workdir, FILES, fsync=False)
        probe.write_files(workdir, FSYNC_FILES, fsync=True)
    except closermod.FileError as exc:
        raise messages.file_abort(exc, exc.name)
    finally:
        # even when interrupted: a second Ctrl-C here is left to Python
        shutil.rmtree(workdir, ignore_errors=True)
    policy, threads = probe.decide(settings.closer_options(ui))
    saved = probe.saved(policy, threads)
    _show(ui, opts, parent, probe, policy, threads, saved)


def _show(ui, opts, parent, probe, policy, threads, saved):
    ops = probe.ops
    closes = probe.closes
    wall = sum(w for w, _c in closes)
    # a close of a microsecond measures above 100%: the CPU clock's own
    # cost and granularity
    cpushare = min(1.0, sum(c for _w, c in closes) / wall) if wall > 0 else 0.0
    with ui.formatter(b'debugprobeclose', opts) as fm:
        fm.startitem()
        fm.data(
            directory=parent,
            files=FILES,
            ops={
                name.encode('ascii'): {
                    b'count': stat.count,
                    b'seconds': stat.seconds,
                    b'mean': stat.mean,
                    b'max': stat.max,
                }
                for name, stat in ops.items()
            },
            cpushare=cpushare,
            # only said of closes worth threads: a cheap close's CPU share
            # is mostly the clock's
            burning=bool(threads) and policy.burning,
            mode=policy.mode.encode('ascii'),
            threads=threads,
            saved=saved,
            estimatefiles=ESTIMATE_FILES,
        )
        if not fm.isplain():
            return
        ui.write(
            _(b'probed %s: %d files written, closed and removed\n')
            % (parent, FILES + FSYNC_FILES)
        )
        reportmod.write_optable(
            ui, [(_LABELS[name], ops[name]) for name in _OPERATIONS]
        )
        if not threads:
            kind = _(b'cheap')
        elif policy.burning:
            kind = _(b'burning: a scan on close')
        else:
            kind = _(b'waiting: a flush or a round trip')
        ui.write(
            _(b'closes: %s on average, %d%% of it on the CPU (%s)\n')
            % (util.timecount(ops['close'].mean), round(cpushare * 100), kind)
        )
        if threads:
            ui.write(
                _(b'decision: close on %d background threads\n') % threads
            )
            ui.write(
                _(b'time saved per %d files: up to %s\n')
                % (ESTIMATE_FILES, util.timecount(saved))
            )
        else:
            ui.write(
                _(b'decision: close inline, closes here are cheap\n')
            )
