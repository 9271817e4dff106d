# debugapply.py - debugapplystreamclonebundle for every stream format
#
# Copyright 2026 hg-backgroundclose contributors
#
# This software may be used and distributed according to the terms of the
# GNU General Public License version 2 or any later version.
"""``hg debugapplystreamclonebundle`` taking v1, v2 and v3 stream bundles.

Core only applies packed1 (v1) bundles here.  A bundle2 stream bundle is
applied the way ``hg unbundle`` applies it (lock, transaction, bundle2 part
handlers), so every check core makes on the way still applies.  Whatever the
format, the command then prints the timing report, unless
``worker.backgroundclosereport`` is set to false (and ``-T`` not given):
then nothing is timed either.
"""

from mercurial.i18n import _
from mercurial import (
    bundle2,
    error,
    exchange,
    pycompat,
    streamclone,
)

from ..shared import (
    compat,
    report as reportmod,
    settings,
)

# appended to core's one-line docstring: the blank line starts a paragraph
DOCSTRING = """

    With the backgroundclose extension, stream bundles of every format are
    accepted: packed1 (v1, from :hg:`debugcreatestreamclonebundle`) and
    bundle2 stream bundles (v2 and v3, from :hg:`bundle --type
    "none-v2;stream=v2"`).  A timing report follows the apply, unless
    ``worker.backgroundclosereport`` is set to false; use ``-T json`` for
    a machine-readable one.
"""


def _streamspec(ui, fname):
    """the bundle spec of a bundle2 file (headers only for stream bundles)"""
    fh = compat.open_path(ui, fname)
    try:
        return exchange.getbundlespec(ui, fh)
    finally:
        fh.close()


def _apply(ui, repo, orig, fname):
    fh = compat.open_path(ui, fname)
    try:
        gen = exchange.readbundle(ui, fh, fname)
        if isinstance(gen, streamclone.streamcloneapplier):
            fh.close()
            return orig(ui, repo, fname)  # v1: core's own command
        spec = None
        if isinstance(gen, bundle2.unbundle20):
            spec = _streamspec(ui, fname)
        if spec is None or b'stream=' not in spec:
            raise error.Abort(
                _(b'%s is not a stream clone bundle') % fname,
                hint=_(b'use "hg unbundle" to apply it'),
            )
        with repo.lock(), repo.transaction(b'unbundle') as tr:
            bundle2.applybundle(
                repo, gen, tr, source=b'unbundle', url=b'bundle:' + fname
            )
    finally:
        fh.close()


def debugapplystreamclonebundle(orig, ui, repo, fname, **opts):
    opts = pycompat.byteskwargs(opts)
    settings.validate(ui)
    if settings.report_declined(ui) and not opts.get(b'template'):
        # the apply alone, as core's command (nothing timed for a report)
        _apply(ui, repo, orig, fname)
        return
    style = settings.report(ui)
    if style != settings.REPORT_JSON:
        style = settings.REPORT_TEXT
    machine = bool(opts.get(b'template')) or style == settings.REPORT_JSON
    if machine:
        # keep stdout for the report alone: progress lines go to stderr
        ui.pushbuffer()
    try:
        with reportmod.collecting(repo) as reports:
            _apply(ui, repo, orig, fname)
    finally:
        if machine:
            ui.write_err(ui.popbuffer())
    reportmod.show(ui, reports, style, opts)
