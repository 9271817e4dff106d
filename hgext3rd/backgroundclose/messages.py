# messages.py - what the user reads when writing or closing a file failed
#
# Copyright 2026 hg-backgroundclose contributors
#
# This software may be used and distributed according to the terms of the
# GNU General Public License version 2 or any later version.
"""One wording for every failed write or close, whichever seam saw it, and
for the debug line that tells what a closer did."""

from mercurial.i18n import _
from mercurial import error
from mercurial.utils import stringutil


def file_abort(exc, name):
    """the error.Abort that stands for ``exc`` (a closer.FileError) on the
    file the user knows as ``name`` (bytes)"""
    if isinstance(name, str):
        name = name.encode('utf-8', 'surrogateescape')
    return error.Abort(
        _(b'error %s %s: %s')
        % (
            exc.action.encode('ascii'),
            stringutil.escapestr(name or b'?'),
            stringutil.forcebytestr(exc.reason),
        )
    )


def debug_summary(ui, closer, what, extra=b''):
    """with ``--debug``, after a closer that started threads: one line on
    what it did (``what``, bytes, names the files).  Like core, which says
    "starting N threads for background file closing" only when it does, a
    closer that closed everything inline prints nothing."""
    if closer.threadcount:
        ui.debug(closer_summary(closer, what, extra))


def closer_summary(closer, what, extra=b''):
    """the ``--debug`` line after a closer is done: ``what`` (bytes) names
    the files"""
    stats = closer.stats()
    line = (
        b'backgroundclose: %d %s closes (%d on threads), %s mode, '
        b'%d%s threads, %d switches%s\n'
    )
    return line % (
        stats['close'].count,
        what,
        stats['close-background'].count,
        closer.mode.encode('ascii'),
        closer.threadcount,
        b' native' if closer.native and closer.threadcount else b'',
        closer.decisions.switches,
        extra,
    )
