# report.py - the timing report of a stream apply
#
# Copyright 2026 hg-backgroundclose contributors
#
# This software may be used and distributed according to the terms of the
# GNU General Public License version 2 or any later version.
"""Collect and print what a stream apply spent its time on.

The table follows the system-call table of the 2015 mercurial-devel post
"Excessive time spent in CloseFile on Windows": one row per operation with
its count, total, mean and maximum.  Closing has up to three rows: the
time the applying thread spent closing files itself or waiting for the
close threads ("close, applier"), the time the close threads spent
("close, threads": what they took off the applying thread), and the files
writer threads wrote and closed whole ("close, writers").

After an apply inside another command (clone, pull, unbundle), the table
is status output, which ``-q`` silences; JSON goes to standard error, so
that standard output stays the command's: one line, one JSON object, per
stream apply and per checkout, each with its ``kind`` (``stream``,
``checkout``).  An operation's JSON key is its row's label as a key
(``close-applier`` for "close, applier").
"""

from mercurial.i18n import _
from mercurial import templatefilters, util

from . import messages, settings

# the repository attribute that holds the list the applies inside a
# ``collecting`` block append their reports to
_COLLECTED = '_backgroundclose_reports'

# operations timed by the stream wrappers, in table order
OPERATIONS = ('open', 'write', 'mkdir')
CLOSE_OPERATIONS = ('close', 'close-background')
# files written whole by writer threads (deferredwrite.py): closed there
WRITER_OPERATIONS = ('close-written',)

# an operation's key in JSON: its row's label, as a key
_KEYS = {
    'close': 'close-applier',
    'close-background': 'close-threads',
    'close-written': 'close-writers',
    'core': 'core-steps',
}

_LABELS = {
    'stat': _(b'stat'),
    'core': _(b"core's steps"),
    'open': _(b'open'),
    'write': _(b'write'),
    'mkdir': _(b'mkdir'),
    'close-written': _(b'close, writers'),
    'close': _(b'close, applier'),
    'close-background': _(b'close, threads'),
    'read': _(b'store read'),
    'read-wait': _(b'read wait'),
}


class ApplyReport:
    """the figures of one stream apply"""

    def __init__(self, fmt, seconds, ops, closer):
        self.format = fmt  # b'v1', b'v2' or b'v3'
        self.seconds = seconds
        self.ops = ops  # name -> closer.OpStat
        # closed by the closer, or by the writer threads that wrote them
        self.files = ops['close'].count + ops['close-written'].count
        self.bytes = ops['write'].bytes
        self.closer = closer  # bytes key -> value, see stream/apply.py

    def todict(self):
        """the report as bytes-keyed data for a formatter"""
        ops = _ops_dict(
            (name, self.ops[name])
            for name in OPERATIONS + CLOSE_OPERATIONS + WRITER_OPERATIONS
        )
        return {
            b'kind': b'stream',
            b'format': self.format,
            b'files': self.files,
            b'bytes': self.bytes,
            b'seconds': self.seconds,
            b'ops': ops,
            b'closer': dict(self.closer),
        }


def _ops_dict(stats):
    """(name, OpStat) pairs as bytes-keyed data for a formatter"""
    return {
        _KEYS.get(name, name).encode('ascii'): {
            b'count': stat.count,
            b'seconds': stat.seconds,
            b'mean': stat.mean,
            b'max': stat.max,
        }
        for name, stat in stats
    }


def _rate(amount, seconds):
    return amount / seconds if seconds > 0 else 0.0


def write_text(ui, report):
    """print one report as a human-readable table"""
    ui.write(
        _(b'stream apply (%s): %d files, %s in %s (%s/s, %d files/s)\n')
        % (
            report.format,
            report.files,
            util.bytecount(report.bytes),
            util.timecount(report.seconds),
            util.bytecount(int(_rate(report.bytes, report.seconds))),
            _rate(report.files, report.seconds),
        )
    )
    write_optable(
        ui,
        [
            (_LABELS[name], report.ops[name])
            for name in OPERATIONS + CLOSE_OPERATIONS + WRITER_OPERATIONS
            # the writers' row only where they ran
            if name not in WRITER_OPERATIONS or report.ops[name].count
        ],
    )
    closer = report.closer
    if closer.get(b'dirs-made') or closer.get(b'dirs-existing'):
        write_directories(
            ui, closer[b'dirs-made'], closer[b'dirs-existing'],
            closer.get(b'dirs-ahead', 0), closer.get(b'dir-threads', 0),
        )
    if closer.get(b'writers'):
        ui.write(
            _(b'  writers: %d threads wrote %d files whole (at most %s held)\n')
            % (
                closer[b'writers'],
                closer[b'written-by-writers'],
                util.bytecount(closer[b'peak-held']),
            )
        )
    policy = messages.word(closer[b'policy'].decode('ascii'))
    mode = messages.word(closer[b'mode'].decode('ascii'))
    if closer.get(b'lowered'):
        # closes burned CPU: the threads gave the applying thread a core
        # first (engine/sizing.py)
        peak = _(b'peak %d; threads at a lower priority') % closer[
            b'peak-queued']
    else:
        peak = _(b'peak %d') % closer[b'peak-queued']
    counts = (closer[b'threads'], closer[b'max-queued'], peak)
    if closer[b'reason']:
        reason = messages.reason(closer[b'reason'].decode('ascii'))
        ui.write(
            _(b'  closer: %s, %s (%s), %d threads, at most %d files queued '
              b'(%s)\n')
            % ((policy, mode, reason) + counts)
        )
    else:
        ui.write(
            _(b'  closer: %s, %s, %d threads, at most %d files queued '
              b'(%s)\n')
            % ((policy, mode) + counts)
        )


def write_directories(ui, made, existing, ahead, threads):
    """the report's line on directories: ``ahead`` of those made, made
    ahead of the writers on ``threads`` threads (dirmaker.py)"""
    if ahead:
        ui.write(
            _(b'  directories: %d made (%d ahead of the writers, on %d '
              b'threads), %d found existing\n')
            % (made, ahead, threads, existing)
        )
    else:
        ui.write(
            _(b'  directories: %d made, %d found existing\n')
            % (made, existing)
        )


def write_optable(ui, rows):
    """print (label, closer.OpStat) rows: count, total, mean, maximum; the
    times of an operation counted but not timed (a report's clock off
    for it) as not known, never as zero"""
    ui.write(
        b'  %-17s %9s %11s %11s %11s\n'
        % (_(b'operation'), _(b'count'), _(b'total'), _(b'mean'), _(b'max'))
    )
    for label, stat in rows:
        timed = stat.count and stat.seconds > 0
        ui.write(
            b'  %-17s %9d %11s %11s %11s\n'
            % (
                label,
                stat.count,
                util.timecount(stat.seconds) if timed else b'-',
                util.timecount(stat.mean) if timed else b'-',
                util.timecount(stat.max) if timed else b'-',
            )
        )


# the checkout's rows (checkout/summary.py), in table order; core's steps
# only where a file took them, the waits for a read ahead only where
# readers started
CHECKOUT_OPERATIONS = ('read', 'read-wait', 'mkdir', 'open', 'write',
                       'close', 'close-written', 'stat', 'core')


def write_checkout_text(ui, figures):
    """print a checkout's figures (checkout/summary.py's Figures) as a table"""
    ui.write(
        _(b'checkout: %d files, %s in %s (%s/s, %d files/s)\n')
        % (
            figures.files,
            util.bytecount(figures.bytes),
            util.timecount(figures.seconds),
            util.bytecount(int(_rate(figures.bytes, figures.seconds))),
            _rate(figures.files, figures.seconds),
        )
    )
    ops = figures.ops
    write_optable(
        ui,
        [
            (_LABELS[name], ops[name])
            for name in CHECKOUT_OPERATIONS
            if (name != 'core' or ops[name].count)
            and (name != 'read-wait' or figures.readers)
        ],
    )
    if any(ops[name].seconds for name in CHECKOUT_OPERATIONS):
        ui.write(
            _(b'  in flight on average: %s\n')
            % b', '.join(
                b'%.1f %s' % (count, _IN_FLIGHT_LABELS[name])
                for name, count in figures.in_flight()
            )
        )
    if figures.readers:
        ui.write(
            _(b'  readers: %d threads read the store ahead (at most %s '
              b'held)\n')
            % (figures.readers, util.bytecount(figures.peakread))
        )
    if figures.dirs_created or figures.dirs_existing:
        write_directories(
            ui, figures.dirs_created, figures.dirs_existing,
            figures.dirs_ahead, figures.dirthreads,
        )
    if figures.declined:
        ui.write(
            _(b"  left to core's own update: %d files\n") % figures.declined
        )
    workers = b''
    if figures.workers > 1:
        workers = _(b' in %d workers') % figures.workers
    if figures.threads:
        ui.write(
            _(b'  writers: %d threads%s wrote %d files whole (at most %s '
              b'held)\n')
            % (
                figures.threads,
                workers,
                ops['close-written'].count,
                util.bytecount(figures.peakheld),
            )
        )
    else:
        ui.write(
            _(b'  writers: none started%s: every file written by the '
              b'applying thread\n') % workers
        )


def _checkout_dict(figures):
    return {
        b'kind': b'checkout',
        b'files': figures.files,
        b'bytes': figures.bytes,
        b'seconds': figures.seconds,
        b'workers': figures.workers,
        b'left-to-core': figures.declined,
        b'writers': figures.threads,
        b'readers': figures.readers,
        b'in-flight': {
            name.encode('ascii'): count
            for name, count in figures.in_flight()
        },
        b'written-by-writers': figures.ops['close-written'].count,
        b'peak-held': figures.peakheld,
        b'dirs-made': figures.dirs_created,
        b'dirs-existing': figures.dirs_existing,
        b'dirs-ahead': figures.dirs_ahead,
        b'dir-threads': figures.dirthreads,
        b'ops': _ops_dict(figures.ops.items()),
    }


_IN_FLIGHT_LABELS = {
    'reads': _(b'store reads'),
    'directories': _(b'directories'),
    'files': _(b'files'),
}


def show_checkout(ui, figures):
    """after an update's checkout, as ``worker.backgroundclosereport``
    asks: the table as status output (not with ``-q``), or JSON on
    standard error"""
    style = settings.report(ui)
    if style == settings.REPORT_JSON:
        _json_line(ui, _checkout_dict(figures))
    elif style != settings.REPORT_OFF and not ui.quiet:
        write_checkout_text(ui, figures)


def _json_line(ui, data):
    """bytes-keyed ``data`` as one JSON object on one line of standard
    error: a script reads a clone's stream apply and its checkout line by
    line, told apart by their ``kind``"""
    ui.write_err(templatefilters.json(data) + b'\n')


def show_after_apply(ui, report, style):
    """print ``report`` after an apply inside another command: the table
    as status output (not with ``-q``); JSON, asked for by a script, on
    standard error whatever ``-q`` says, since standard output is the
    command's"""
    if style == b'json':
        _json_line(ui, report.todict())
    elif not ui.quiet:
        show(ui, [report], style)


def show(ui, reports, style, opts=None):
    """print ``reports``: ``style`` is b'text' or b'json', ``opts`` are
    formatter options (``-T``) that override it"""
    opts = dict(opts or {})
    if not opts.get(b'template') and style == b'json':
        opts[b'template'] = b'json'
    with ui.formatter(b'backgroundclose', opts) as fm:
        _fill(fm, ui, reports)


def _fill(fm, ui, reports):
    for report in reports:
        if fm.isplain():
            fm.startitem()
            write_text(ui, report)
        else:
            _item(fm, report.todict())


def _item(fm, data):
    """one item of bytes-keyed ``data`` for a formatter"""
    fm.startitem()
    fm.data(**{k.decode('ascii'): v for k, v in data.items()})


def collector(repo):
    """the list a stream apply into ``repo`` appends its report to instead
    of printing it, or None"""
    return getattr(repo.unfiltered(), _COLLECTED, None)


class collecting:
    """``with collecting(repo) as reports:`` the applies into ``repo``
    inside the block append their reports to ``reports`` instead of
    printing them (debugapplystreamclonebundle prints them itself)"""

    def __init__(self, repo):
        self._repo = repo.unfiltered()

    def __enter__(self):
        self._saved = collector(self._repo)
        reports = []
        setattr(self._repo, _COLLECTED, reports)
        return reports

    def __exit__(self, exc_type, exc_value, exc_tb):
        if self._saved is None:
            # delattr, not through its __dict__: the extension touches no
            # Mercurial object's __dict__ (seams.attached)
            try:
                delattr(self._repo, _COLLECTED)
            except AttributeError:
                pass
        else:
            setattr(self._repo, _COLLECTED, self._saved)
        return False
