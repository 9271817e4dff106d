# summary.py - one summary of an update's checkout, from every
# worker that wrote it
#
# Copyright 2026 hg-backgroundclose contributors
#
# This software may be used and distributed according to the terms of the
# GNU General Public License version 2 or any later version.
"""Core's ``applyupdates`` (wrapped) gets the working-copy files through
``batchget``, in forked worker processes, in worker threads or in its own
thread.  Each worker's ``Checkout`` sends its ``Figures`` to the
``Gathering`` the update made before core started them (a worker left to
core's own ``batchget`` sends how many files it got); once core's workers
are done, the update prints one ``--debug`` line, one ``ui.log`` line and,
when asked, one timing report for them all.  See docs/design.rst, "The
checkout".
"""

import os
import pickle
import struct
import tempfile
import threading

from mercurial.utils import stringutil

from .. import engine
from ..shared import messages, report as reportmod, settings

# the steps of a checkout file, counted (and timed for a report) by the
# thread that ran them: made, written, closed on the applying thread or
# on a writer thread, stat'ed; and files written by core's own steps
# (symbolic links, files with something in the way).  mkdir is counted by
# directories.Directories; the store's reads, and the applying thread's
# waits for one read ahead, by readahead.StoreReads.
OPERATIONS = ('open', 'write', 'close', 'close-written', 'stat', 'core')
READS = ('read', 'read-wait')
# what a checkout's time in flight is made of: the store read, the
# directories made, the files' own steps
IN_FLIGHT = (
    ('reads', ('read',)),
    ('directories', ('mkdir',)),
    ('files', OPERATIONS),
)

# the repository attribute that holds the running update's Gathering
_GATHERING = '_backgroundclose_checkout'

# a record in the file forked workers append to: its length, then its
# pickle, written by one write() of a file opened to append, which the
# kernel does not interleave with another process's
_LENGTH = struct.Struct('>I')


class Figures:
    """what one checkout (or several, merged) did"""

    FIELDS = ('files', 'seconds', 'threads', 'readers', 'peakheld', 'peakread',
              'dirs_created', 'dirs_existing', 'dirs_ahead', 'dirthreads',
              'declined')

    def __init__(self, ops, workers=1, **fields):
        self.ops = ops  # name -> engine.OpStat (OPERATIONS and 'mkdir')
        self.workers = workers
        for name in self.FIELDS:
            setattr(self, name, fields.get(name, 0))

    @classmethod
    def declined_by(cls, count):
        """a worker whose ``count`` files core's own batchget got"""
        return cls({}, declined=count)

    @property
    def bytes(self):
        return sum(self.ops[name].bytes for name in ('write', 'core')
                   if name in self.ops)

    def in_flight(self):
        """(name, steps on average in flight) of IN_FLIGHT: the time
        spent in them over the checkout's time (Little's law; summed over
        the threads and workers that ran them), where timed"""
        seconds = self.seconds
        return [
            (name, sum(self.ops[op].seconds for op in ops if op in self.ops)
             / seconds if seconds > 0 else 0.0)
            for name, ops in IN_FLIGHT
        ]

    def encode(self):
        """bytes for the file: plain numbers only"""
        data = {name: getattr(self, name) for name in self.FIELDS}
        data['ops'] = {
            name: (stat.count, stat.seconds, stat.max, stat.bytes)
            for name, stat in self.ops.items()
        }
        return pickle.dumps(data, protocol=4)

    @classmethod
    def decode(cls, raw):
        data = pickle.loads(raw)
        ops = {}
        for name, (count, seconds, longest, nbytes) in data.pop('ops').items():
            stat = ops[name] = engine.OpStat()
            stat.add_many(count, seconds, longest, nbytes)
        return cls(ops, **data)

    @classmethod
    def merged(cls, many):
        """the figures of workers that ran side by side: counts added
        (the most held at once too: at most their sum), the longest time
        taken as the checkout's"""
        ops = {}
        for figures in many:
            for name, stat in figures.ops.items():
                ops.setdefault(name, engine.OpStat()).merge(stat)
        for name in OPERATIONS + READS + ('mkdir',):
            ops.setdefault(name, engine.OpStat())
        fields = {
            name: sum(getattr(f, name) for f in many)
            for name in cls.FIELDS
        }
        fields['seconds'] = max(f.seconds for f in many)
        # each worker's own reads held apart: the most one of them held
        fields['peakread'] = max(f.peakread for f in many)
        return cls(ops, workers=len(many), **fields)


class Gathering:
    """where the workers of one update send their figures: kept in a list
    by those of this process (its own thread, worker threads), appended to
    a file by forked ones; the file was made, and its name removed, before
    core forked them"""

    def __init__(self):
        self.pid = os.getpid()
        self._figures = []
        self._lock = threading.Lock()
        self._fd = None
        if hasattr(os, 'fork'):
            try:
                made, name = tempfile.mkstemp(prefix='hg-backgroundclose-')
                try:
                    # to append: each write where the file ends then
                    self._fd = os.open(name, os.O_RDWR | os.O_APPEND)
                finally:
                    os.close(made)
                    os.unlink(name)
            except OSError:
                # no file, no summary of forked workers: not a reason to
                # fail the update
                pass

    def send(self, figures):
        """from any worker of the update, once its checkout is done; a
        record that cannot be written is left out (a summary is no reason
        to fail an update that wrote every file)"""
        if os.getpid() == self.pid:
            with self._lock:
                self._figures.append(figures)
            return
        if self._fd is None:
            return
        raw = figures.encode()
        try:
            os.write(self._fd, _LENGTH.pack(len(raw)) + raw)
        except OSError:
            pass

    def collect(self):
        """every figures sent, once core's workers are done"""
        figures = list(self._figures)
        if self._fd is None:
            return figures
        os.lseek(self._fd, 0, os.SEEK_SET)
        chunks = []
        while True:
            chunk = os.read(self._fd, 1 << 16)
            if not chunk:
                break
            chunks.append(chunk)
        raw = b''.join(chunks)
        offset = 0
        while offset + _LENGTH.size <= len(raw):
            (length,) = _LENGTH.unpack_from(raw, offset)
            offset += _LENGTH.size
            if offset + length > len(raw):
                break  # a worker killed as it wrote
            figures.append(Figures.decode(raw[offset:offset + length]))
            offset += length
        return figures

    def close(self):
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def applyupdates(orig, repo, *args, **kwargs):
    """core's ``applyupdates`` (wrapped): the settings checked before a
    file is removed (sparse and narrow call it directly), and the
    checkouts of its workers summarized once, after the files are
    written"""
    settings.validate(repo.ui)
    unfi = repo.unfiltered()
    saved = getattr(unfi, _GATHERING, None)
    gathering = Gathering()
    setattr(unfi, _GATHERING, gathering)
    try:
        result = orig(repo, *args, **kwargs)
        figures = gathering.collect()
    finally:
        if saved is None:
            delattr(unfi, _GATHERING)
        else:
            setattr(unfi, _GATHERING, saved)
        gathering.close()
    if any(f.files for f in figures):
        _show_guarded(repo.ui, Figures.merged(figures))
    return result


def left_to_core(repo, count):
    """a worker of the running update leaves its ``count`` files to core's
    own batchget (a file to back up, atomic writes asked for)"""
    gathering = getattr(repo.unfiltered(), _GATHERING, None)
    if gathering is not None:
        gathering.send(Figures.declined_by(count))


def deliver(repo, figures):
    """a checkout's ``figures``, to the update that runs it; one that runs
    outside an update (an extension's own call) prints them itself"""
    gathering = getattr(repo.unfiltered(), _GATHERING, None)
    if gathering is None:
        _show_guarded(repo.ui, figures)
    else:
        gathering.send(figures)


def _show_guarded(ui, figures):
    """the summary, which never fails the update: it runs before core
    writes the dirstate, and an update whose files are all written must
    not end as an interrupted one for a line of output"""
    try:
        messages.summarize_checkout(ui, figures)
        reportmod.show_checkout(ui, figures)
    except Exception as exc:
        try:
            ui.debug(
                b'backgroundclose: the checkout summary failed: %s\n'
                % stringutil.forcebytestr(exc)
            )
        except Exception:
            pass
