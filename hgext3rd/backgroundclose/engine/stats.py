# stats.py - operation counts and times, per thread
#
# Copyright 2026 hg-backgroundclose contributors
#
# This software may be used and distributed according to the terms of the
# GNU General Public License version 2 or any later version.
"""Counts, totals and maxima of timed operations (``OpStat``, in C where
``_opstat.c`` is built), kept per thread and merged on demand
(``StatsBook``).  See docs/design.rst."""

import operator
import threading
import time

try:
    from . import _opstat  # built from _opstat.c where possible
except ImportError:
    _opstat = None

class PythonOpStat:
    """count, total and maximum duration of one kind of operation, and the
    bytes it moved (for writes); ``OpStat`` where ``_opstat.c`` is not
    built"""

    __slots__ = ('count', 'seconds', 'max', 'bytes')

    def __init__(self):
        self.count = 0
        self.seconds = 0.0
        self.max = 0.0
        self.bytes = 0

    # the arguments as the C type takes them (positional, counts whole
    # numbers), and nothing changed when one is refused.  add() is
    # add_many(1, duration, duration, nbytes) written out: it runs for
    # every timed operation where _opstat.c is not built, and a second
    # call there costs as much as the counting
    def add(self, duration, nbytes=0, /):
        seconds = self.seconds + duration
        if type(nbytes) is not int:
            nbytes = operator.index(nbytes)
        nbytes += self.bytes
        if duration > self.max:
            self.max = float(duration)
        self.seconds = seconds
        self.bytes = nbytes
        self.count += 1

    def since(self, start, nbytes=0, /):
        """one operation that began at ``start`` (a time of
        ``time.perf_counter()``, this type's clock) and ends now"""
        self.add(time.perf_counter() - start, nbytes)

    def add_many(self, count, seconds, longest=0.0, nbytes=0, /):
        """``count`` operations that took ``seconds`` in all, the longest
        ``longest``, and moved ``nbytes``"""
        count = self.count + operator.index(count)
        total = self.seconds + seconds
        nbytes = self.bytes + operator.index(nbytes)
        if longest > self.max:
            self.max = float(longest)
        self.count, self.seconds, self.bytes = count, total, nbytes

    def merge(self, other, /):
        """add another OpStat's figures (of either kind)"""
        self.add_many(other.count, other.seconds, other.max, other.bytes)

    @property
    def mean(self):
        return self.seconds / self.count if self.count else 0.0


# A report times every open, write and close: where it is built, the C
# type reads the clock and adds in one call (``since``), which costs the
# writing thread less than the clock reads and call of PythonOpStat.
# ``stat_clock`` is the clock ``since`` reads.
if _opstat is not None:
    OpStat = _opstat.OpStat
    stat_clock = _opstat.now
else:
    OpStat = PythonOpStat
    stat_clock = time.perf_counter


class StatsBook:
    """per-thread ``OpStat`` tables, merged on demand

    Each thread updates its own table without locking; ``merged()`` adds
    them up.  Read it once the threads are done for exact figures.
    """

    def __init__(self, names):
        self._names = tuple(names)
        self._local = threading.local()
        self._tables = []
        self._lock = threading.Lock()

    def mine(self):
        """the calling thread's table: operation name -> OpStat"""
        table = getattr(self._local, 'table', None)
        if table is None:
            table = {name: OpStat() for name in self._names}
            self._local.table = table
            with self._lock:
                self._tables.append(table)
        return table

    def disown(self):
        """in a forked child: a parent's thread may have held the lock"""
        self._lock = threading.Lock()

    def merged(self):
        total = {name: OpStat() for name in self._names}
        with self._lock:
            for table in self._tables:
                for name, stat in table.items():
                    total[name].merge(stat)
        return total
