# malformed.py - clear aborts for malformed stream clone data
#
# Copyright 2026 hg-backgroundclose contributors
#
# This software may be used and distributed according to the terms of the
# GNU General Public License version 2 or any later version.
"""Where core Mercurial meets malformed stream data with a traceback, turn
it into ``abort: malformed stream clone data: ...`` (exit 255).

A stream comes from a bundle file or from a server: both may be damaged or
hostile.  Core checks most of it (path audit, store encoding, truncation
inside a file header), but a few places raise Python errors instead:

- a ``stream2`` bundle2 part whose ``filecount`` or ``bytecount`` is not a
  number (``int()`` in the part handler: ValueError);
- a file whose source byte is neither store nor cache (``vfsmap[src]``:
  KeyError);
- a file name holding a NUL byte (ValueError from the operating system
  call, see stream/apply.py).
"""

from mercurial.i18n import _
from mercurial import error
from mercurial.utils import stringutil

HINT = _(b'the bundle or the stream from the server is damaged')

_NUMBERS = (b'filecount', b'bytecount')


def abort(message):
    """the error.Abort for malformed stream data"""
    return error.Abort(
        _(b'malformed stream clone data: %s') % message, hint=HINT
    )


class SourceMap(dict):
    """streamclone's map from a file's source byte to its vfs, with a clear
    error for a source byte the stream should not hold"""

    def __missing__(self, key):
        raise abort(_(b'unknown file source %s') % stringutil.pprint(key))


def makemap(orig, repo, *args, **kwargs):
    return SourceMap(orig(repo, *args, **kwargs))


def stream2_handler(orig):
    """a bundle2 part handler for stream2 that checks the numbers first"""

    def handler(op, part):
        for name in _NUMBERS:
            value = part.params.get(name, b'')
            if not value.isdigit():
                raise abort(
                    _(b'%s is not a number: %s')
                    % (name, stringutil.pprint(value))
                )
        return orig(op, part)

    # bundle2 reads the mandatory parameters it knows from the function
    handler.params = orig.params
    handler.__doc__ = orig.__doc__
    return handler
