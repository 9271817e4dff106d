# policy.py - when to close inline, when on threads, and on how many
#
# Copyright 2026 hg-backgroundclose contributors
#
# This software may be used and distributed according to the terms of the
# GNU General Public License version 2 or any later version.
"""The closer's decisions, apart from its threads.

A ``Policy`` holds no thread, lock or file.  The closer (closer.py) tells
it what it measured (how long a close took, how much of that was CPU, that
one more file was submitted) and asks it what to do: close this file inline
or hand it over, start how many threads.  The time comes from the ``clock``
it is given, so that tests drive it without threads or sleeps.  The closer
calls it under its own lock wherever two submitting threads could.

The three policies:

- ``inline``: every file is closed by the thread that submits it;
- ``background``: every file is handed over, from the first;
- ``adaptive``: closes start inline, timed into a smoothed estimate (one
  slow close among cheap ones does not move it much, and no close counts
  for more than ``OUTLIER`` times the threshold: a writer preempted in the
  middle of a close is not a slow file system).  When the estimate exceeds
  ``threshold`` seconds, or ``SLOW_RUN`` closes timed one after the other
  each took at least that long (a file system slow from the first file,
  found without waiting for the estimate), closes go to background threads.
  Now and then (after ``PROBE_FIRST`` files, then twice as many each time
  it is confirmed) a few closes are timed inline again, to measure the file
  system without background threads in the way (a probe ends after
  ``PROBE_LEAST`` closes that are too slow for any outcome but staying in
  the background, unless their CPU share disagrees with the estimate: each
  costs the writer a whole slow close).  Closing goes back inline when those
  are cheap (below half the threshold), or when they cost the writer no
  more than handing a file over did meanwhile: the hand-over is timed too
  (the queue's lock, and waiting for room when the threads fall behind, as
  closes that burn CPU on few cores make them; on the C lane, one hand-over
  a sizing window, which stands for the files handed over without asking
  since).  Closes sent back inline that way try the background again after
  ``PROBE_FIRST`` slow closes, then twice as many each time that does not
  pay either.

Sizing, in background mode: at every ``window`` submissions, as many
threads as keep the submitter from waiting (close latency divided by the
interval between submissions, plus a quarter for jitter), up to
``maxthreads``; a backlog of over half the queue adds one more.

Closes timed inline while they are not cheap are also timed in the closing
thread's CPU time.  When most of a close is CPU (an antivirus scan, not a
network round trip), threads beyond the number of cores only take turns at
the same cores, so the pool stops at the core count.

Only one inline close in ``sample`` is timed for the policy while closes
are cheap, as timing costs each close more than closing a file on a fast
local disk; once the estimate is a quarter of the threshold, or after a
close that took the threshold or more, every close is.  (A shown report
times the others too, for itself: the closer's ``timeall``.)

So few files that threads are not worth starting (``expectedcount`` below
``minfilecount``, core's meaning of backgroundcloseminfilecount) are closed
inline whatever the policy.
"""

import math
import os
import time

INLINE = 'inline'
BACKGROUND = 'background'
ADAPTIVE = 'adaptive'
POLICIES = (INLINE, BACKGROUND, ADAPTIVE)

# inline closes per timed one while closes are cheap, where only the policy
# needs their times
SAMPLE = 8

# why the policy is in the mode it is in (``Policy.reason``): the last
# switch, or what keeps it inline
CLOSES_SLOW = 'closes measured slow'
CLOSES_CHEAP = 'closes measured cheap again'
HANDOVER_DEAR = 'handing files over cost as much as closing them'
FEW_FILES = 'fewer files than minfilecount'
NO_THREAD = 'no thread could be started'
HUNG_LEFT = 'closes still hanging were left to their threads'


def _usable_cores():
    """the cores this process may run on (a container may allow fewer
    than the machine has)"""
    try:
        return len(os.sched_getaffinity(0)) or 1
    except (AttributeError, OSError):  # not Linux
        return os.cpu_count() or 1


class Policy:
    """the decisions of one closer; see the module doc"""

    # adaptive mode: weight of one close in the inline latency estimate
    SMOOTHING = 1.0 / 32
    # adaptive mode: most one close counts in the estimate, in thresholds
    OUTLIER = 4
    # adaptive mode: timed closes in a row, each at least the threshold,
    # that switch to the background whatever the estimate says: a writer
    # preempted in one close does not make a run of them
    SLOW_RUN = 4
    # background: weight of one hand-over in its estimate
    HANDOVER_SMOOTHING = 1.0 / 64
    # adaptive mode: weight of one close in the CPU share estimate
    CPU_SMOOTHING = 1.0 / 8
    # background mode: files between two inline probes, at first and at most
    PROBE_FIRST = 256
    PROBE_MOST = 16384
    # closes timed inline by one probe, and the fewest that may end it
    # early (learn_probe)
    PROBE_LENGTH = 8
    PROBE_LEAST = 2

    def __init__(
        self,
        policy=ADAPTIVE,
        threads=4,
        maxthreads=64,
        threshold=30e-6,
        window=16,
        minfilecount=2048,
        expectedcount=-1,
        clock=time.perf_counter,
        cores=None,
        sample=1,
    ):
        if policy not in POLICIES:
            raise ValueError('unknown policy %r' % (policy,))
        if threads < 1 or window < 1:
            raise ValueError('threads and window must be positive')
        self.requested = policy
        self.reason = None
        if 0 <= expectedcount < minfilecount and policy != INLINE:
            policy = INLINE
            self.reason = FEW_FILES
        self.policy = policy
        self.threads = threads
        self.maxthreads = max(threads, maxthreads)
        self.threshold = threshold
        self._outlier = threshold * self.OUTLIER
        self.window = window
        self.cores = cores or _usable_cores()
        # inline, while closes are cheap: one close in ``sample`` is timed
        # (when nothing but this policy needs their times); how many now
        self.sample = max(1, sample)
        self.sample_every = self.sample
        self._clock = clock

        self.background = policy == BACKGROUND
        self.switches = 0  # changes between inline and background
        # no thread could be started (a process or memory limit): inline
        # for good
        self.threadless = False
        # adaptive, inline: smoothed close time measured on the submitters
        self.estimate = 0.0
        # adaptive, inline: the latest timed closes in a row that each took
        # the threshold or more, and the fastest of them
        self._slowrun = 0
        self._runfastest = 0.0
        # background: close latency measured without background threads in
        # the way (the close that made us switch, then each probe); what
        # threads measure also holds their wait for the GIL, which would
        # oversize the pool
        self.latency = 0.0
        # background: smoothed time the submitter took to hand one file
        # over, what closing in the background costs it; None until some
        # file was
        self.handover = None
        # adaptive, inline because handing over did not pay: slow closes
        # left before trying the background again, and how many the next
        # wait is
        self._retryat = 0
        self._retryevery = self.PROBE_FIRST
        # the share of the time of closes timed inline that was the
        # closing thread's CPU time, once measured
        self.cpushare = None
        # background: submissions in this sizing window, and when it began
        self._wincount = 0
        self._winstart = clock()
        # background, adaptive: submissions until the next probe, the probe
        # interval, closes left in the running probe and their total time
        self._probeat = self.PROBE_FIRST
        self._probeevery = self.PROBE_FIRST
        self._probeleft = 0
        self._probesum = 0.0
        # a probe runs: begun, and not decided yet (a close of a probe
        # already decided, another thread's, is not learnt)
        self._probing = False
        # the running probe's closes so far, the fastest and the slowest,
        # and whether their CPU shares all agreed with the estimate (a
        # probe that may end early: learn_probe)
        self._probetaken = 0
        self._probefastest = self._probeslowest = 0.0
        self._probeagrees = True

    @property
    def mode(self):
        """what the closer does now: INLINE or BACKGROUND"""
        return BACKGROUND if self.background else INLINE

    def closes_cheap(self):
        """inline, with closes measured well below the threshold (or not
        measured, when told to close inline): threads would not pay"""
        return not self.background and self.estimate < self.threshold / 2

    @property
    def burning(self):
        """whether closes spend their time on the CPU"""
        return self.cpushare is not None and self.cpushare >= 0.5

    # inline closes -------------------------------------------------------

    def wants_cpu_time(self, probing):
        """whether to time the next inline close in CPU time too (a system
        call each time: not for closes that are cheap anyway, only once
        the estimate is half way to a switch, or after a slow close, which
        leaves a few closes to time before it)"""
        return probing or (
            self.policy == ADAPTIVE
            and (self.estimate * 2 > self.threshold or self._slowrun > 0)
        )

    def learn_cpu(self, duration, cpu):
        """a close timed inline took ``duration`` seconds, ``cpu`` of them
        on the closing thread's CPU"""
        if duration < self.threshold:
            # a cheap close says nothing of what slow ones spend their
            # time on: on tmpfs, or before a file system turns slow, every
            # close is CPU, and learning those would take the sleeping
            # closes that follow an onset for burning ones (a pool capped
            # at the cores, at a lower priority)
            return
        share = min(1.0, cpu / duration)
        if self._probing and (share >= 0.5) != self.burning:
            # a probe's close that says otherwise than the estimate did:
            # the probe takes all its closes, for the estimate to follow
            self._probeagrees = False
        if self.cpushare is None:
            self.cpushare = share
        else:
            self.cpushare += (share - self.cpushare) * self.CPU_SMOOTHING

    def learn_inline(self, duration):
        """adaptive mode: a close timed inline (not a probe) took
        ``duration`` seconds.  True when closing should go to the
        background now: then start threads, and call switch_to_background()
        if any runs."""
        # a run counts inline closes only: in the background, a file
        # object the C lane does not take is closed inline too, and its
        # run would be a stale one once closes come back inline
        slow = duration >= self.threshold and not self.background
        if not slow:
            self._slowrun = 0
        elif self._slowrun:
            self._slowrun += 1
            self._runfastest = min(self._runfastest, duration)
        else:
            self._slowrun = 1
            self._runfastest = duration
        # a close is counted at most OUTLIER times the threshold: a thread
        # preempted in the middle of one close (4 update workers on 2
        # cores) would otherwise switch on its own, as 1/32 of a few
        # milliseconds is above the threshold; a real latency still
        # switches, after SLOW_RUN closes in a row
        if duration > self._outlier:
            duration = self._outlier
        estimate = self.estimate
        estimate += (duration - estimate) * self.SMOOTHING
        self.estimate = estimate
        # closes a quarter of the way to a switch are each timed, and
        # those after a slow one: a file system slow from the first file is
        # then found in SLOW_RUN closes, their CPU share measured by all but
        # the first (wants_cpu_time), so that the pool starts sized for it
        self.sample_every = (
            1 if slow or estimate * 4 > self.threshold else self.sample
        )
        if estimate <= self.threshold and self._slowrun < self.SLOW_RUN:
            return False
        if self._retryat > 0:
            # the background did not pay last time: not yet
            self._retryat -= 1
            return False
        return not self.background and not self.threadless

    def switch_to_background(self, duration):
        """threads run: hand closes over from now on; ``duration`` is the
        close that decided it"""
        if self._slowrun:
            # it ends a run of slow closes: the fastest of them, as the
            # others may each hold a wait for a core (4 update workers on
            # 2 cores), which would size the pool for a latency the file
            # system does not have
            # (at least the threshold: another writer thread may have
            # begun a run meanwhile, unlocked)
            duration = max(self.threshold, min(duration, self._runfastest))
        self.background = True
        self.switches += 1
        self.reason = CLOSES_SLOW
        self._probeat = self._probeevery = self.PROBE_FIRST
        self._probeleft = 0
        # size the pool from the close just measured (or the run's
        # fastest): the smoothed estimate lags far behind a latency that is
        # high from the start
        self.latency = max(self.latency, duration)
        self._probing = False
        self._wincount = 0
        self._winstart = self._clock()

    # background ---------------------------------------------------------

    def take_probe(self):
        """background mode, for a file about to be handed over: True to
        close it inline instead, timed, for a probe"""
        if self._probeleft:
            self._probeleft -= 1
            return True
        return False

    def account(self, count=1):
        """count ``count`` files handed over; at the end of a sizing window,
        the mean interval between submissions in it (else None)"""
        interval = None
        self._wincount += count
        if self._wincount >= self.window:
            now = self._clock()
            interval = (now - self._winstart) / self._wincount
            self._winstart = now
            self._wincount = 0
        if self.policy == ADAPTIVE:
            before = self._probeat
            self._probeat -= count
            # as the count reaches zero only: files of another submitter
            # counted late, while a probe runs, do not start it again
            if before > 0 >= self._probeat:
                self._probeleft = self.PROBE_LENGTH
                self._probesum = 0.0
                self._probing = True
                self._probetaken = 0
                self._probeagrees = True
        return interval

    def routine_handovers(self):
        """background mode, once a file was handed over and counted: how
        many of the next hand-overs need no decision (no probe starts, no
        sizing window ends), and may be counted later, all at once, by
        ``account(count)`` before the next file that asks"""
        if not self.background:
            return 0
        left = self.window - self._wincount - 1
        if self.policy == ADAPTIVE:
            # not below zero until a probe is over
            left = min(left, self._probeat - 1)
        return max(0, left)

    def learn_handover(self, duration, files=1):
        """background mode: handing one file over took the submitter
        ``duration`` seconds; it stands for ``files`` hand-overs (those
        not timed since the last one that was)"""
        # waiting for room lasts until some thread finishes a close, a few
        # closes at most (longer when the threads' closes slow each other
        # down): a submitter preempted in the middle of a hand-over is not
        # a costly pool
        duration = min(duration, self.OUTLIER * self._outlier)
        if self.handover is None:
            self.handover = duration
        else:
            # as much as ``files`` hand-overs of that time would weigh
            weight = 1.0 - (1.0 - self.HANDOVER_SMOOTHING) ** max(1, files)
            self.handover += (duration - self.handover) * weight

    def learn_probe(self, duration):
        """one close of a probe took ``duration`` seconds, inline"""
        if not self._probing:
            return  # its probe was decided meanwhile
        self._probesum += duration
        self._probetaken += 1
        if self._probetaken == 1:
            self._probefastest = self._probeslowest = duration
        else:
            self._probefastest = min(self._probefastest, duration)
            self._probeslowest = max(self._probeslowest, duration)
        if self._probeleft:
            # each close of a probe costs the writer its whole latency: the
            # probe ends once the closes so far cost more than what would
            # send closes back inline over all PROBE_LENGTH (the others
            # could only add to it), the same outcome, if they also agree:
            # within twice each other (a close preempted in the middle does
            # not size the pool on its own), and their CPU share says what
            # the estimate said.  Its latency is then their mean
            bound = self.threshold / 2
            if self.handover is not None and self.handover > bound:
                bound = self.handover
            if (
                self._probetaken < self.PROBE_LEAST
                or self._probesum <= bound * self.PROBE_LENGTH
                or self._probeslowest > 2 * self._probefastest
                or not self._probeagrees
            ):
                return
            self._probeleft = 0
        self._probing = False
        mean = self._probesum / self._probetaken
        cheap = mean < self.threshold / 2
        if cheap or (self.handover is not None and mean <= self.handover):
            # closes became cheap, or the pool cannot keep up and the
            # writer waits as long for room as it would to close: handing
            # them over costs more than it saves.  The threads stay parked
            # until the closer finishes
            self.background = False
            self.switches += 1
            self.reason = CLOSES_CHEAP if cheap else HANDOVER_DEAR
            self.estimate = mean
            # closes back inline start a run of their own (one counted by
            # another writer thread as this one switched would be stale)
            self._slowrun = 0
            if cheap:
                self._retryat = 0
                self._retryevery = self.PROBE_FIRST
            else:
                self._retryat = self._retryevery
                self._retryevery = min(
                    self._retryevery * 2, self.PROBE_MOST
                )
            return
        self.latency = mean
        self._probeevery = min(self._probeevery * 2, self.PROBE_MOST)
        self._probeat = self._probeevery

    def threads_needed(self, interval, running, backlog):
        """how many threads keep closes of ``self.latency`` seconds up with
        one submission every ``interval`` seconds; ``backlog``: over half
        the queue is waiting"""
        if interval <= 0:
            interval = 1e-6
        need = math.ceil(self.latency / interval * 1.25) + 1
        if backlog:
            # the threads fall behind all the same: a quarter more (one at
            # least), so that a pool whose every file waits on round trips
            # reaches the size they need within a few windows
            need = max(need, running + max(1, running // 4))
        return min(need, self.thread_cap())

    def thread_cap(self):
        """the most threads worth running"""
        if self.burning:
            return min(self.maxthreads, self.cores)
        return self.maxthreads

    def refused(self, running):
        """the system started only ``running`` threads of those asked"""
        self.maxthreads = running
        if not running:
            self.threadless = True
            self.background = False
            self.reason = NO_THREAD

    def disown(self):
        """in a forked child: inline from now on, without threads"""
        self.threadless = True
        self.background = False
        self._probeleft = 0
        self._probing = False


class SkipSchedule:
    """when a seam leaves whole runs of files to core, untouched

    While closes are cheap, what is left of a session's cost is its
    wrapping, a few microseconds a file: so after each ``SAMPLE`` files
    the seam took through its own path, if closes measured cheap and the
    seam may leave files to core, the next ``SKIP`` files are left to core
    (``skip`` files, counted down by the seam), then another sample is
    taken.  Each sample after which files may be left to core again
    doubles the next skip, up to ``SKIP << DOUBLINGS`` files; any other
    sample starts over from ``SKIP``.  Where the session sees the skip's
    closes, one in ``SkipWatch.WINDOW`` is timed, and a file system that
    turns slow ends the skip within that many files.  Where it does not,
    a skip is ``UNWATCHED`` files at most: an onset is then noticed by the
    next sample, after at most ``UNWATCHED`` files and the sample's first
    timed close, and closes switch after ``Policy.SLOW_RUN`` slow ones.  (A
    stream's files are opened once each; a changegroup step counts
    revlogs, each opened two or three times, more when split.)
    """

    SAMPLE = 32
    SKIP = 1024
    # a sample takes its files through the session's own path, dearer
    # than core's: one file in 33 while each skip is 1,024 files, one in
    # 257 once skips are 8,192 (one in 8 where skips are UNWATCHED)
    DOUBLINGS = 3
    # skips whose closes no one times: with the sample's first timed close
    # and the rest of a slow run, under 256 stream files closed inline
    # after an onset (a changegroup counts revlogs, each closed two or
    # three times)
    UNWATCHED = 224

    def __init__(self):
        self._sampled = 0  # files of the current sample
        self._cheapsamples = 0  # samples in a row that found closes cheap

    def sampled_one(self):
        """one more file of the sample went through the seam: whether the
        sample is complete (then ask ``next_skip``)"""
        self._sampled += 1
        if self._sampled < self.SAMPLE:
            return False
        self._sampled = 0
        return True

    def next_skip(self, cheap, watched=True):
        """a sample is complete: how many files to leave to core now (0:
        none, take the next sample); ``cheap``: closes measured cheap and
        the seam may leave files to core; ``watched``: the seam times a
        skip's closes (SkipWatch)"""
        if not cheap:
            self._cheapsamples = 0
            return 0
        if not watched:
            return self.UNWATCHED
        skip = self.SKIP << min(self._cheapsamples, self.DOUBLINGS)
        self._cheapsamples += 1
        return skip


class SkipWatch:
    """while files are left to core, whether their closes became slow

    Where the session closes a skip's files itself (stream v2 from
    Mercurial 7.0 on, whose skips it writes; stream v1, whose files core
    hands back to close), one close in ``WINDOW`` is timed, two clock
    reads: one that takes the threshold or more ends the skip, and the
    sample that follows times closes and decides.  A file system that
    turns slow (a scanner that wakes up midway) is so noticed within
    ``WINDOW`` files, wherever in the skip it begins, whether or not a
    report times every close.  One close can be slow for other reasons (a
    preempted thread): the skip then ends early for nothing, and the next
    sample, finding closes cheap, begins the next one.  (The time a file
    takes as a whole would not do: it holds the wait for the stream,
    which a busy server makes longer by more than a slow close does.)
    Where the session does not see a skip's closes (stream v3, v2 before
    7.0, changegroups), skips are kept short instead (``SkipSchedule``).
    """

    WINDOW = 64
    MASK = WINDOW - 1

    def __init__(self, threshold):
        self._threshold = threshold
        # skips ended early, and the close that ended the last one
        self.ended = 0
        self.last = 0.0

    def timed(self, duration):
        """a close of a skip's file took ``duration`` seconds: True if the
        skip ends"""
        if duration < self._threshold:
            return False
        self.ended += 1
        self.last = duration
        return True
