# checkoutsummary.py - one summary of an update's checkout, from every
# process that wrote it
#
# Copyright 2026 hg-backgroundclose contributors
#
# This software may be used and distributed according to the terms of the
# GNU General Public License version 2 or any later version.
"""Core's ``applyupdates`` (wrapped) gets the working-copy files through
``batchget``, in forked worker processes or in its own process.  Each
process's ``Checkout`` sends its ``Figures`` to the ``Gathering`` the
update made before it forked; once core's workers are done, the update's
process prints one ``--debug`` line, one ``ui.log`` line and, when asked,
one timing report for them all.  See docs/design.rst, "The checkout".
"""

import os
import pickle
import struct
import threading

from . import engine, messages, report as reportmod

# the steps of a checkout file, counted (and timed for a report) by the
# thread that ran them: made, written, closed on the applying thread or
# on a writer thread, stat'ed; and files written by core's own steps
# (symbolic links, files with something in the way).  mkdir is counted by
# directories.Directories.
OPERATIONS = ('open', 'write', 'close', 'close-written', 'stat', 'core')

# the repository attribute that holds the running update's Gathering
_GATHERING = '_backgroundclose_checkout'

# a record on the pipe: its length, then its pickle.  A record at most
# PIPE_BUF long is written whole by one write() (POSIX), so records of
# processes writing at once never interleave.
_LENGTH = struct.Struct('>I')
_PIPE_BUF = getattr(__import__('select'), 'PIPE_BUF', 512)


class Figures:
    """what one checkout (or several, merged) did"""

    FIELDS = ('files', 'seconds', 'threads', 'peakheld',
              'dirs_created', 'dirs_existing')

    def __init__(self, ops, processes=1, **fields):
        self.ops = ops  # name -> engine.OpStat (OPERATIONS and 'mkdir')
        self.processes = processes
        for name in self.FIELDS:
            setattr(self, name, fields[name])

    @property
    def bytes(self):
        return self.ops['write'].bytes + self.ops['core'].bytes

    def encode(self):
        """bytes for the pipe: plain numbers only"""
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
        """the figures of processes that ran side by side: counts added,
        the longest time taken as the checkout's"""
        first = many[0]
        ops = {name: engine.OpStat() for name in first.ops}
        for figures in many:
            for name, stat in figures.ops.items():
                ops[name].merge(stat)
        fields = {
            name: sum(getattr(f, name) for f in many)
            for name in cls.FIELDS
        }
        fields['seconds'] = max(f.seconds for f in many)
        fields['peakheld'] = max(f.peakheld for f in many)
        return cls(ops, processes=len(many), **fields)


class Gathering:
    """where the checkouts of one update send their figures: kept here by
    this process's own, written to a pipe by a forked worker's (made
    before core forks them)"""

    def __init__(self):
        self.pid = os.getpid()
        self._figures = []
        # update workers on threads (Windows) send here at once
        self._lock = threading.Lock()
        self._rfd = self._wfd = None
        if hasattr(os, 'fork'):
            # never inherited by a program a hook or a tool runs; read
            # without waiting, since a process forked for something else
            # may hold the writing end open for longer than the update
            self._rfd, self._wfd = os.pipe()
            for fd in (self._rfd, self._wfd):
                os.set_inheritable(fd, False)
            os.set_blocking(self._rfd, False)
            os.set_blocking(self._wfd, False)

    def send(self, figures):
        """from any process of the update, once its checkout is done; a
        record the pipe cannot take is left out (a summary is no reason to
        fail an update that wrote every file)"""
        if os.getpid() == self.pid:
            with self._lock:
                self._figures.append(figures)
            return
        raw = figures.encode()
        record = _LENGTH.pack(len(raw)) + raw
        if self._wfd is None or len(record) > _PIPE_BUF:
            return
        try:
            os.write(self._wfd, record)
        except OSError:
            pass

    def collect(self):
        """every figures sent, once core's workers are done"""
        chunks = []
        while self._rfd is not None:
            try:
                chunk = os.read(self._rfd, 65536)
            except BlockingIOError:
                break
            if not chunk:
                break
            chunks.append(chunk)
        raw = b''.join(chunks)
        figures = list(self._figures)
        offset = 0
        while offset + _LENGTH.size <= len(raw):
            (length,) = _LENGTH.unpack_from(raw, offset)
            offset += _LENGTH.size
            figures.append(Figures.decode(raw[offset:offset + length]))
            offset += length
        return figures

    def close(self):
        for fd in (self._rfd, self._wfd):
            if fd is not None:
                os.close(fd)
        self._rfd = self._wfd = None


def applyupdates(orig, repo, *args, **kwargs):
    """core's ``applyupdates`` (wrapped): the checkouts of its processes
    summarized once, after the files are written"""
    unfi = repo.unfiltered()
    saved = getattr(unfi, _GATHERING, None)
    gathering = Gathering()
    setattr(unfi, _GATHERING, gathering)
    try:
        result = orig(repo, *args, **kwargs)
        figures = gathering.collect()
    finally:
        setattr(unfi, _GATHERING, saved)
        gathering.close()
    if figures:
        show(repo.ui, Figures.merged(figures))
    return result


def deliver(repo, figures):
    """a checkout's ``figures``, to the update that runs it; one that runs
    outside an update (an extension's own call) prints them itself"""
    gathering = getattr(repo.unfiltered(), _GATHERING, None)
    if gathering is None:
        show(repo.ui, figures)
    else:
        gathering.send(figures)


def show(ui, figures):
    messages.summarize_checkout(ui, figures)
    reportmod.show_checkout(ui, figures)
