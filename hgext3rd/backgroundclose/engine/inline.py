# inline.py - the closes a closer does on the submitting thread
#
# Copyright 2026 hg-backgroundclose contributors
#
# This software may be used and distributed according to the terms of the
# GNU General Public License version 2 or any later version.
"""``InlineCloses``: the files a ``Closer`` closes on the thread that
submits them, while its policy keeps closes inline or hands this one
back.  Most go untimed; one in the policy's ``sample_every`` is timed and
learnt from (sizing.py, policy.py); a report times the others too, for
its table only, so that the policy decides as it would without one.
See docs/design.rst, "The closer".
"""

from .descriptors import FileError
from .policy import ADAPTIVE
from .threads import cpu_demand, cpu_mark


class InlineCloses:
    """closes on the submitting thread, for one closer (``untimed`` on the
    owner thread only, ``sampled`` on any submitter)"""

    def __init__(self, policy, sizer, pool, lock, book, clock, closefn,
                 timeall, statclock):
        self._policy = policy
        self._sizer = sizer
        self._pool = pool
        self._lock = lock
        self._book = book
        self._clock = clock
        self._closefn = closefn
        # a report shows every close's time
        self._timeall = timeall
        # whether ``clock`` is the stats' own: a report's close is then
        # timed by OpStat.since, one call
        self._statclock = statclock
        # closes left before the next sampled one
        self.left = 0
        # closes not timed at all (counted for the stats)
        self.untimedcount = 0
        # the owner thread's 'close' entry of the stats book, once looked
        # up: a report times every close, and the lookup costs as much as
        # the timing
        self._ownclose = None

    def disown(self, pool, sizer, lock):
        """in a forked child: the closer's new pool, sizer and lock (see
        closer._disown) in place of the parent's; the counts stay"""
        self._pool = pool
        self._sizer = sizer
        self._lock = lock
        self._ownclose = None

    def untimed(self, target, name):
        """close ``target`` here, one of the closes between two samples:
        the path most files of a fast file system take, so the shortest
        one"""
        self.left -= 1
        stat = None
        if self._timeall:
            stat = self._ownclose
            if stat is None:
                stat = self._ownclose = self._book.mine()['close']
            start = self._clock()
        else:
            self.untimedcount += 1
        try:
            self._closefn(target)
        except FileError:
            raise  # a FileWrite's own, which says what failed
        except Exception as exc:
            raise FileError(name, exc) from exc
        finally:
            # a failed or interrupted close is timed too
            if stat is not None:
                if self._statclock:
                    stat.since(start)  # one call (OpStat in C)
                else:  # a closer given its own clock (tests)
                    stat.add(self._clock() - start)

    def sampled(self, target, name, start, probing):
        """close ``target`` here, timed from ``start``, and tell the
        policy (a probe: whether to go back inline) or the sizer what it
        took"""
        clock = self._clock
        policy = self._policy
        stat = self._book.mine()['close']
        # closes worth sizing a pool for: is their time the closing
        # thread's CPU (a scan on close) or a wait (a network round trip)?
        # Not asked of cheap closes: it costs a system call each time
        mark = None
        if policy.wants_cpu_time(probing):
            mark = cpu_mark()
        # what the policy learns from is the close alone: with the system
        # call above in it, cheap closes on a busy machine would measure
        # slow enough to switch on their own
        closestart = clock()
        duration = self._timed(target, name, stat, start) - closestart
        if mark is not None:
            policy.learn_cpu(duration, cpu_demand(mark, duration))
        if probing:
            with self._lock:
                policy.learn_probe(duration)
                if not policy.background:
                    # back inline: no more files may come to wake the
                    # parked threads for those queued
                    self._pool.kick()
        elif policy.policy == ADAPTIVE and not self._sizer.stopping:
            self._sizer.learn_inline(duration)

    def _timed(self, target, name, stat, start):
        """close ``target``, its time from ``start`` added to ``stat``
        whether it fails or not: when it ended"""
        try:
            self._closefn(target)
        except Exception as exc:
            stat.add(self._clock() - start)
            if isinstance(exc, FileError):
                raise  # a FileWrite's own, which says what failed
            raise FileError(name, exc) from exc
        end = self._clock()
        stat.add(end - start)
        return end
