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
format, the command then prints the timing report.
"""

from mercurial.i18n import _
from mercurial import (
    bundle2,
    error,
    exchange,
    pycompat,
)

from . import (
    compat,
    report as reportmod,
    settings,
    streamapply,
)

DOCSTRING = """
    With the backgroundclose extension, stream bundles of every format are
    accepted: packed1 (v1, from :hg:`debugcreatestreamclonebundle`) and
    bundle2 stream bundles (v2 and v3, from :hg:`bundle --type
    "none-v2;stream=v2"`).  A timing report follows the apply; use
    ``-T json`` for a machine-readable one.
"""


def _bundlespec(ui, fname):
    fh = compat.open_path(ui, fname)
    try:
        return exchange.getbundlespec(ui, fh)
    finally:
        fh.close()


def debugapplystreamclonebundle(orig, ui, repo, fname, **opts):
    opts = pycompat.byteskwargs(opts)
    spec = _bundlespec(ui, fname)
    with streamapply.collecting() as reports:
        if spec.startswith(b'none-packed1'):
            orig(ui, repo, fname)
        elif b'stream=' in spec:
            fh = compat.open_path(ui, fname)
            try:
                gen = exchange.readbundle(ui, fh, fname)
                if not isinstance(gen, bundle2.unbundle20):
                    raise error.Abort(_(b'%s: unexpected bundle type') % fname)
                with repo.lock(), repo.transaction(b'unbundle') as tr:
                    bundle2.applybundle(
                        repo, gen, tr, source=b'unbundle', url=b'bundle:' + fname
                    )
            finally:
                fh.close()
        else:
            raise error.Abort(
                _(b'%s is not a stream clone bundle (%s)') % (fname, spec),
                hint=_(b'use "hg unbundle" to apply it'),
            )
    style = settings.report(ui)
    if style != settings.REPORT_JSON:
        style = settings.REPORT_TEXT
    reportmod.show(ui, reports, style, opts)
