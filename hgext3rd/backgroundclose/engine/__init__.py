# engine - closing files inline or on threads, without Mercurial
#
# Copyright 2026 hg-backgroundclose contributors
#
# This software may be used and distributed according to the terms of the
# GNU General Public License version 2 or any later version.
"""The engine: what closes files, and when, with no Mercurial import, so
that it can be tested on its own.  The seams (stream/, changegroup/,
checkout/, and what they share in shared/) hand it files; see
docs/design.rst for the layers.

- policy.py, writepolicy.py: the decisions, clock in, decisions out;
- closer.py: the ``Closer`` the seams hand every file to;
- handovers.py, sizing.py: its hand-overs, and the threads it runs;
- pools.py, pythonpool.py: the threads that close, C or Python, behind
  one interface (pools.py says it);
- descriptors.py: opening, writing and closing with one owner at a time;
- failures.py: what failed anywhere, raised once on the closer's owner;
- stats.py, threads.py, native.py: what those share;
- helpers.py: the threads of helpers that work ahead of a seam's applying
  thread (its store readers, its directory makers);
- _closelane.c, _opstat.c: the C lane, and the report's counters in C.
"""

from .closer import Closer, interrupt_again, native_available
from .descriptors import (
    FileError,
    close_elsewhere,
    close_owned,
    close_quietly,
    close_target,
    descriptor_room,
    file_error,
    flush_for_handover,
    open_owned,
    owned_open_close,
    write_all,
)
from .policy import ADAPTIVE, BACKGROUND, INLINE, POLICIES, SAMPLE
from .stats import OpStat, PythonOpStat, StatsBook, stat_clock
from .threads import (
    cpu_demand,
    cpu_mark,
    on_pool_thread,
    slept,
    timed_call,
)

__all__ = [
    'ADAPTIVE',
    'BACKGROUND',
    'Closer',
    'FileError',
    'INLINE',
    'OpStat',
    'POLICIES',
    'PythonOpStat',
    'SAMPLE',
    'StatsBook',
    'close_elsewhere',
    'close_owned',
    'close_quietly',
    'close_target',
    'cpu_demand',
    'cpu_mark',
    'descriptor_room',
    'file_error',
    'flush_for_handover',
    'interrupt_again',
    'native_available',
    'on_pool_thread',
    'open_owned',
    'owned_open_close',
    'slept',
    'stat_clock',
    'write_all',
]
