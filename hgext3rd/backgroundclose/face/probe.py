# probe.py - hg debugprobeclose: does this file system need the extension?
#
# Copyright 2026 hg-backgroundclose contributors
#
# This software may be used and distributed according to the terms of the
# GNU General Public License version 2 or any later version.
"""Time writing a few hundred store-like files where a repository lives.

The probe writes ``FILES`` files in nested directories, with sizes spread
like a store's revlogs, in a temporary directory it removes again whatever
happens (an error, Ctrl-C): by default in the directory that holds the
repository's store (``.hg``, or for a share the ``.hg`` of the repository
it shares).  It times each mkdir, open, write and close, then fsync and
close for a few more files, and the CPU time of each close on the closing
thread: an antivirus scan burns CPU on close, a network round trip or a
device flush does not.

The closes are then fed, in order, to the same ``Policy`` the closer
uses (engine/policy.py) with the user's settings, as the closer would
feed them: a close is timed in CPU time only where the closer would time
it (never under a forced policy), and once closing went to the
background only the closer's inline probes are learnt from.  The policy decides as it would
during an apply: inline or background, and how many threads.

The time saved per 100,000 files follows from a simple model.  Closed
inline, a file costs the writer ``write + close`` (``write``: its mkdir,
open and write).  Handed over to ``threads`` threads, it costs the writer
``max(write, close / threads)``: the writer waits when the threads fall
behind; and when closes burn CPU, at least ``(write + close) / cores``,
as the writer and the threads then take turns at the same cores.  The
saving is the difference.  The hand-over itself is not counted (on Python
threads, the GIL taken back after each close), so the figure is an upper
bound.
"""

import os
import shutil
import sys

from mercurial.i18n import _
from mercurial import (
    encoding,
    error,
    util,
)
from mercurial.utils import stringutil

from .. import engine
from ..engine import policy as policymod
from ..shared import (
    messages,
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

# what the closes measured are: ``kind()``
CHEAP = 'cheap'
BURNING = 'burning'
WAITING = 'waiting'


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
        self.ops = {name: engine.OpStat() for name in _OPERATIONS}
        self.closes = []  # (wall, cpu) of each close, in order

    def write_files(self, workdir, count, fsync, clock=util.timer):
        # the descriptor open at any moment: in a command server or chg the
        # process lives on after a Ctrl-C, and must not keep it.  Opening
        # adds it here and closing drops it, each in one step that no
        # interrupt can split.
        owned = set()
        try:
            self._write_files(workdir, count, fsync, clock, owned)
        finally:
            for fd in list(owned):
                try:
                    engine.close_owned(fd, owned)
                except OSError:
                    pass  # already failing: its error must not hide the first

    def _write_files(self, workdir, count, fsync, clock, owned):
        ops = self.ops
        made = set()
        flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC
        for path, size in _shape(count):
            if fsync:
                path = b'fsynced/' + path
            name = os.path.join(workdir, path)
            parent = os.path.dirname(name)
            if parent not in made:
                start = clock()
                try:
                    os.makedirs(parent, exist_ok=True)
                except OSError as exc:
                    # making a file's directories is part of opening it
                    raise engine.FileError(name, exc, 'opening') from exc
                ops['mkdir'].add(clock() - start)
                made.add(parent)
            data = b'\0' * size
            start = clock()
            try:
                fd = engine.open_owned(name, flags, owned)
            except OSError as exc:
                raise engine.FileError(name, exc, 'opening') from exc
            ops['open'].add(clock() - start)
            try:
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
                raise engine.FileError(name, exc, 'writing') from exc
            mark = engine.cpu_mark()
            start = clock()
            try:
                engine.close_owned(fd, owned)
            except OSError as exc:
                raise engine.FileError(name, exc) from exc
            wall = clock() - start
            cpu = engine.cpu_demand(mark, wall)
            ops['close-fsynced' if fsync else 'close'].add(wall)
            if not fsync:
                self.closes.append((wall, cpu))

    @property
    def files(self):
        """how many files were written (and closed)"""
        return self.ops['open'].count

    def writer_time(self):
        """the writer's own time per file: mkdir, open and write"""
        ops = self.ops
        files = ops['open'].count or 1
        return (
            ops['mkdir'].seconds + ops['open'].seconds + ops['write'].seconds
        ) / files

    def cpushare(self):
        """the share of the closes' time that was the closing thread's CPU
        time, over all the closes timed (a close of a microsecond measures
        above 100%: the CPU clock's own cost and granularity)"""
        wall = sum(w for w, _c in self.closes)
        if wall <= 0:
            return 0.0
        return min(1.0, sum(c for _w, c in self.closes) / wall)

    def cpupercent(self):
        """cpushare() as a whole percentage, rounded down: what is printed,
        and what tells burning closes from waiting ones"""
        return int(self.cpushare() * 100)

    def kind(self, threshold):
        """CHEAP (closes of ``threshold`` seconds or less on average: their
        CPU share is mostly the clock's), BURNING (half of their time or
        more on the CPU, as Policy.burning) or WAITING"""
        if self.ops['close'].mean <= threshold:
            return CHEAP
        return BURNING if self.cpupercent() >= 50 else WAITING

    def decide(self, options):
        """what the closer would do here: (policy, threads)

        The closes are given to the policy as the closer gives them
        (engine/closer.py, ``_submit`` and ``_close_inline``): a close is
        timed in CPU time where ``wants_cpu_time`` says so; once closing
        went to the background, a file is handed over (counted) unless the policy takes
        it for a probe, closed inline and learnt from.  The probe hands
        nothing over, so it cannot tell a hand-over that costs as much as a
        close (a pool that cannot keep up): the closer finds that out while
        it runs.
        """
        options = dict(options)
        options.pop('maxqueue', None)  # the closer's, not the policy's
        options['expectedcount'] = ESTIMATE_FILES
        # the probe reads no sizing window: no clock needed
        options.setdefault('clock', lambda: 0.0)
        policy = policymod.Policy(**options)
        adaptive = policy.policy == policymod.ADAPTIVE
        for wall, cpu in self.closes:
            probing = False
            if policy.background:
                probing = policy.take_probe()
                if not probing:
                    policy.account()  # handed over: nothing learnt
                    continue
            if policy.wants_cpu_time(probing):
                policy.learn_cpu(wall, cpu)
            if probing:
                policy.learn_probe(wall)
            elif adaptive and policy.learn_inline(wall):
                policy.switch_to_background(wall)
        threads = 0
        if policy.background:
            if not adaptive:
                # forced: the closer grows its pool while the queue backs
                # up, to about what the measured latency needs
                policy.latency = self.ops['close'].mean
            needed = policy.threads_needed(
                self.writer_time(), running=0, backlog=False
            )
            threads = min(max(policy.threads, needed), policy.thread_cap())
        return policy, threads

    def saved(self, policy, threads):
        """seconds saved per ESTIMATE_FILES files, at most (see the module
        doc)"""
        if not threads:
            return 0.0
        writer = self.writer_time()
        close = self.ops['close'].mean
        inline = writer + close
        handed = max(writer, close / threads)
        if self.kind(policy.threshold) == BURNING:
            handed = max(handed, inline / policy.cores)
        return max(0.0, inline - handed) * ESTIMATE_FILES

    def advice(self, options):
        """(threads, seconds saved per ESTIMATE_FILES files) with the
        adaptive policy and no minimum file count, whatever the settings
        force: what the extension gives here, or what settings that close
        inline give up"""
        options = dict(options, policy=policymod.ADAPTIVE, minfilecount=0)
        policy, threads = self.decide(options)
        return threads, self.saved(policy, threads)


def _where(repo, dest):
    """the directory to probe in, absolute"""
    if dest:
        parent = util.expandpath(dest)
        if not os.path.isdir(parent):
            raise error.Abort(_(b'%s is not a directory') % dest)
    elif repo is not None:
        # where the store lives: .hg, or for a share the .hg it shares
        parent = repo.sharedpath
    else:
        parent = encoding.getcwd()
    return os.path.abspath(parent)


def run(ui, repo, dest, opts):
    """the command: probe ``dest`` (or next to ``repo``'s store, or the
    current directory) and print what the closer would do there"""
    settings.validate(ui)
    options = settings.closer_options(ui)
    native = engine.native_available() and settings.native(ui)
    parent = _where(repo, dest)
    with ui.formatter(b'debugprobeclose', opts) as fm:
        # a template that does not parse aborts here, before any file is
        # written
        fm.datahint()
        # named before it exists, so that the cleanup below knows it
        # whenever an interrupt lands (one right after mkdtemp() returned
        # lost the name); 96 random bits: no other directory has it
        workdir = os.path.join(
            parent, b'hg-probeclose-' + os.urandom(12).hex().encode('ascii')
        )
        probe = Probe()
        try:
            try:
                os.mkdir(workdir, 0o700)
            except OSError as exc:
                raise error.Abort(
                    _(b'cannot write in %s: %s')
                    % (parent, stringutil.forcebytestr(exc.strerror or exc))
                )
            probe.write_files(workdir, FILES, fsync=False)
            probe.write_files(workdir, FSYNC_FILES, fsync=True)
        except engine.FileError as exc:
            raise messages.file_abort(exc, exc.name)
        finally:
            # even when interrupted: a second Ctrl-C here is left to Python
            shutil.rmtree(workdir, ignore_errors=True)
            removed = not os.path.lexists(workdir)
            if not removed:
                ui.warn(
                    _(b'warning: could not remove %s, remove it by hand\n')
                    % workdir
                )
        policy, threads = probe.decide(options)
        saved = probe.saved(policy, threads)
        _show(ui, fm, parent, probe, policy, threads, saved, native, removed,
              probe.advice(options), settings.describe_policy(ui))


def _gil():
    """whether Python threads take turns at a global interpreter lock"""
    isenabled = getattr(sys, '_is_gil_enabled', None)
    return isenabled is None or isenabled()


# what the advice line says, by whether the adaptive policy would start
# threads here
ADVICE_NOT_NEEDED = 'not-needed'
ADVICE_ENABLE = 'enable'


def _show(ui, fm, parent, probe, policy, threads, saved, native, removed,
          advice, described):
    ops = probe.ops
    kind = probe.kind(policy.threshold)
    advisedthreads, advisedsaved = advice
    advised = ADVICE_ENABLE if advisedthreads else ADVICE_NOT_NEEDED
    fm.startitem()
    fm.data(
        directory=parent,
        files=probe.files,
        removed=removed,
        ops={
            name.encode('ascii'): {
                b'count': stat.count,
                b'seconds': stat.seconds,
                b'mean': stat.mean,
                b'max': stat.max,
            }
            for name, stat in ops.items()
        },
        cpushare=probe.cpushare(),
        cpupercent=probe.cpupercent(),
        kind=kind.encode('ascii'),
        burning=kind == BURNING,
        requested=policy.requested.encode('ascii'),
        reason=(
            None if policy.reason is None else policy.reason.encode('ascii')
        ),
        mode=policy.mode.encode('ascii'),
        threads=threads,
        native=native,
        saved=saved,
        estimatefiles=ESTIMATE_FILES,
        advice=advised.encode('ascii'),
        advisedthreads=advisedthreads,
        advisedsaved=advisedsaved,
    )
    if not fm.isplain():
        return
    if removed:
        line = _(b'probed %s: %d files written, closed and removed\n')
    else:
        line = _(b'probed %s: %d files written and closed\n')
    ui.write(line % (parent, probe.files))
    reportmod.write_optable(
        ui, [(_LABELS[name], ops[name]) for name in _OPERATIONS]
    )
    closes = {
        CHEAP: _(b'closes: %s on average, %d%% of it on the CPU (cheap)\n'),
        BURNING: _(
            b'closes: %s on average, %d%% of it on the CPU (burning: a scan '
            b'on close)\n'
        ),
        WAITING: _(
            b'closes: %s on average, %d%% of it on the CPU (waiting: a flush '
            b'or a round trip)\n'
        ),
    }[kind]
    ui.write(closes % (util.timecount(ops['close'].mean), probe.cpupercent()))
    ui.write(_(b'settings: %s\n') % described)
    if threads:
        if native:
            decision = _(b'decision: close on %d background threads (C '
                         b'threads)\n')
        else:
            decision = _(b'decision: close on %d background threads (Python '
                         b'threads)\n')
        ui.write(decision % threads)
        ui.write(
            _(b'time saved per %d files: up to %s\n')
            % (ESTIMATE_FILES, util.timecount(saved))
        )
        if not native and _gil():
            ui.write(
                _(
                    b'note: a Python thread takes the GIL back after each '
                    b'close, which the estimate leaves out: the saving is '
                    b'smaller\n'
                )
            )
    else:
        if policy.reason is not None:
            ui.write(
                _(b'decision: close inline: %s\n')
                % messages.reason(policy.reason)
            )
        elif policy.requested == policymod.INLINE:
            ui.write(_(b'decision: close inline, as asked\n'))
        else:
            ui.write(_(b'decision: close inline, closes here are cheap\n'))
        if advisedthreads:
            ui.write(
                _(b'time given up per %d files: up to %s\n')
                % (ESTIMATE_FILES, util.timecount(advisedsaved))
            )
    if advisedthreads:
        ui.write(
            _(b'advice: enable it: up to %s saved per %d files%s\n')
            % (
                util.timecount(advisedsaved),
                ESTIMATE_FILES,
                b'' if threads else _(
                    b', with the adaptive policy (the settings here close '
                    b'inline)'
                ),
            )
        )
    else:
        ui.write(_(b'advice: not needed here: closes are cheap\n'))
