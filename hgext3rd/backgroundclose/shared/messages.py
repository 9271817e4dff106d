# messages.py - what the user reads when writing or closing a file failed
#
# Copyright 2026 hg-backgroundclose contributors
#
# This software may be used and distributed according to the terms of the
# GNU General Public License version 2 or any later version.
"""One wording for every failed write or close, whichever seam saw it, and
for the debug line that tells what a closer did."""

from mercurial.i18n import _
from mercurial import error, util
from mercurial.utils import stringutil

from ..engine import descriptors, policy as policymod

# one whole sentence per action, so that a translation can word each
_FILE_ERRORS = {
    'opening': _(b'error opening %s: %s'),
    'writing': _(b'error writing %s: %s'),
    'closing': _(b'error closing %s: %s'),
}


def file_abort(exc, name):
    """the error.Abort that stands for ``exc`` (a closer.FileError) on the
    file the user knows as ``name`` (bytes)"""
    if isinstance(name, str):
        name = name.encode('utf-8', 'surrogateescape')
    return error.Abort(
        _FILE_ERRORS[exc.action]
        % (
            stringutil.escapestr(name or b'?'),
            stringutil.forcebytestr(exc.reason),
        )
    )


# the closer's reasons (engine/policy.py, engine/closer.py), as the user
# reads them; the ui.log line and JSON keep the engine's words
_REASONS = {
    policymod.CLOSES_SLOW: _(b'closes measured slow'),
    policymod.CLOSES_CHEAP: _(b'closes measured cheap again'),
    policymod.HANDOVER_DEAR: _(
        b'handing files over cost as much as closing them'
    ),
    policymod.FEW_FILES: _(
        b'fewer files than worker.backgroundcloseminfilecount'
    ),
    policymod.NO_THREAD: _(b'no thread could be started'),
    policymod.HUNG_LEFT: _(b'closes still hanging were left to their threads'),
}


# the closer's policies and modes (engine/policy.py), as the user reads
# them
_WORDS = {
    policymod.ADAPTIVE: _(b'adaptive'),
    policymod.BACKGROUND: _(b'background'),
    policymod.INLINE: _(b'inline'),
}


def word(text):
    """a policy or a mode of the closer (str), for the user, in bytes"""
    return _WORDS.get(text) or text.encode('ascii')


def reason(text):
    """the closer's reason ``text`` (str) for the user, in bytes"""
    return _REASONS.get(text) or text.encode('ascii')


def summarize(ui, closer, what, label, unit, seconds, extra=b''):
    """after a closer of a changegroup step or an update is done: with
    ``--debug``, a line if it started threads (``what``, bytes, names the
    files); like core, which says "starting N threads for background file
    closing" only when it does, a closer that closed everything inline
    prints nothing.  And in any case the ``ui.log`` line (``label``; its
    count is of closes, in ``unit``)."""
    stats = closer.stats()
    if closer.threadcount:
        ui.debug(closer_summary(closer, what, extra, stats))
    report_unowned(ui)
    log_summary(
        ui, label, stats['close'].count, unit, seconds, closer, stats, extra
    )


def summarize_stream(ui, fmt, files, seconds, closer, stats, writers, watch,
                     dirthreads=0):
    """after a stream apply (format ``fmt``) of ``files`` files: with
    ``--debug``, what the closer decided, if it did anything but close
    inline: threads, switches, ``writers``, ``dirthreads`` (the threads
    that made directories ahead of them; Mercurial's own tests read the
    debug output of stream clones that need none of them; a skip ended
    early alone, by a close preempted on a busy machine, is no decision);
    and in any case the ``ui.log`` line"""
    extra = b''
    if watch.ended:
        extra += b', %d skips ended early (the last by a %s close)' % (
            watch.ended,
            util.timecount(watch.last),
        )
    if writers:
        extra += b', %d writer threads' % writers
    if dirthreads:
        extra += b', directories made ahead by %d threads' % dirthreads
    if closer.threadcount or closer.decisions.switches or writers:
        ui.debug(closer_summary(closer, b'stream', extra, stats))
    report_unowned(ui)
    log_summary(
        ui,
        b'stream %s apply' % fmt,
        files,
        b'files',
        seconds,
        closer,
        stats,
        b'; %d writer threads' % writers if writers else b'',
    )


def summarize_filelogs(ui, revlogs, threads, here, seconds):
    """after a changegroup's file revlogs were applied on threads
    (changegroup/filelogs.py): with ``--debug``, a line, and in any case
    the ``ui.log`` line"""
    line = (b'backgroundclose: changegroup files: %d file revlogs in '
            b'%.2f s, applied by %d threads, %d too large to hold applied '
            b'on the applying thread\n')
    args = (revlogs, seconds, threads, here)
    ui.debug(line % args)
    _log(
        ui,
        line,
        args,
        dict(
            backgroundclose_count=revlogs,
            backgroundclose_unit=b'revlogs',
            backgroundclose_seconds=seconds,
            backgroundclose_threads=threads,
        ),
    )


def report_unowned(ui):
    """with ``--debug``, once: the descriptors a caller asked to close
    without owning them, left open (engine/descriptors.py); a bug"""
    unowned = descriptors.take_unowned()
    if unowned:
        ui.debug(
            b'backgroundclose: %d descriptors were to be closed by code '
            b'that did not own them, and were left open (a bug of the '
            b'extension: please report it)\n' % len(unowned)
        )


def closer_summary(closer, what, extra, stats):
    """the ``--debug`` line after a closer is done: ``what`` (bytes) names
    the files, ``stats`` are the closer's"""
    line = (
        b'backgroundclose: %d %s closes (%d on threads), %s mode, '
        b'%d%s threads, %d switches%s%s%s\n'
    )
    reason = closer.decisions.reason
    return line % (
        stats['close'].count,
        what,
        stats['close-background'].count,
        closer.mode.encode('ascii'),
        closer.threadcount,
        b' native' if closer.native and closer.threadcount else b'',
        closer.decisions.switches,
        b' (%s)' % reason.encode('ascii') if reason else b'',
        # after the counts: Mercurial's own tests glob them
        b', threads at a lower priority' if closer.lowered else b'',
        extra,
    )


def log_summary(ui, label, count, unit, seconds, closer, stats, extra=b''):
    """one line to ``ui.log`` under the event ``backgroundclose`` (the
    blackbox extension, a server's logger): what was written (``count``
    ``unit``: files, or closes of revlogs, some reopened), how long it
    took, the close time the threads took off the applying thread, and
    what the closer decided.  Untranslated, as core's own log lines are:
    it is read by tools as much as by people.  The same figures go to
    the loggers as keywords.  Never raises: it runs where the work is
    done, inside the command's transaction, and a logger's failure must
    not undo that work."""
    decisions = closer.decisions
    hidden = stats['close-background'].seconds
    reason = decisions.reason or ''
    requested = decisions.requested.encode('ascii')
    mode = closer.mode.encode('ascii')
    _log(
        ui,
        b'backgroundclose: %s: %d %s in %.2f s; closes on %d threads '
        b'took %.2f s; policy %s, ended %s, %d switches%s%s\n',
        (
            label,
            count,
            unit,
            seconds,
            closer.threadcount,
            hidden,
            requested,
            mode,
            decisions.switches,
            b' (%s)' % reason.encode('ascii') if reason else b'',
            extra,
        ),
        dict(
            backgroundclose_count=count,
            backgroundclose_unit=unit,
            backgroundclose_seconds=seconds,
            backgroundclose_hidden_seconds=hidden,
            backgroundclose_threads=closer.threadcount,
            backgroundclose_policy=requested,
            backgroundclose_mode=mode,
        ),
    )


def summarize_checkout(ui, figures):
    """after a checkout (checkout/batchget.py, its ``figures`` summed over the
    update's workers): with ``--debug``, a line if writers started, and in
    any case the ``ui.log`` line"""
    threads = figures.threads
    written = figures.ops['close-written'].count
    extra = b''
    if figures.workers > 1:
        extra += b' in %d workers' % figures.workers
    if figures.declined:
        extra += b', %d files left to core' % figures.declined
    if threads or figures.readers:
        readers = b''
        if figures.readers:
            readers = b', the store read ahead by %d threads' % (
                figures.readers)
        if figures.dirthreads:
            readers += b', directories made ahead by %d threads' % (
                figures.dirthreads)
        ui.debug(
            b'backgroundclose: %d checkout files, %d written by %d '
            b'writer threads%s%s; in flight on average: %s\n' % (
                figures.files, written, threads, readers, extra,
                b', '.join(b'%.1f %s' % (count, name.encode('ascii'))
                           for name, count in figures.in_flight()),
            )
        )
    report_unowned(ui)
    _log(
        ui,
        b'backgroundclose: checkout: %d files in %.2f s; %d written by '
        b'%d writer threads%s\n',
        (figures.files, figures.seconds, written, threads, extra),
        dict(
            backgroundclose_count=figures.files,
            backgroundclose_unit=b'files',
            backgroundclose_seconds=figures.seconds,
            backgroundclose_threads=threads,
            backgroundclose_written=written,
            backgroundclose_workers=figures.workers,
            backgroundclose_declined=figures.declined,
        ),
    )


def _log(ui, line, args, keywords):
    """``ui.log`` under the event ``backgroundclose``, guarded: see
    log_summary"""
    try:
        ui.log(b'backgroundclose', line, *args, **keywords)
    except Exception as exc:
        try:
            # ui.debug logs too, to the same loggers
            ui.debug(
                b'backgroundclose: logging the summary failed: %s\n'
                % stringutil.forcebytestr(exc)
            )
        except Exception:
            pass
