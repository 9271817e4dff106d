# inspectext.py - a test extension: what the backgroundclose extension
# leaves behind in a long-lived process (the command server)
#
# Copyright 2026 hg-backgroundclose contributors
#
# This software may be used and distributed according to the terms of the
# GNU General Public License version 2 or any later version.
"""``hg debugleftovers`` prints, as JSON: the threads alive besides the
main one, the closers alive, the descriptors open, and the seams the
extension wraps only during an apply that are wrapped now.  Load it after
backgroundclose: the seams are remembered as they are when it loads."""

import faulthandler
import gc
import json
import os
import signal
import threading

from mercurial import (
    changegroup,
    registrar,
    streamclone,
    transaction,
    util,
    vfs as vfsmod,
)

cmdtable = {}
command = registrar.command(cmdtable)
configtable = {}
configitem = registrar.configitem(configtable)
configitem(b'inspect', b'grace', default=None)
configitem(b'inspect', b'stacks', default=None)

# the seams wrapped only while a stream apply, a changegroup step or an
# update with closes on the C threads runs
_SEAMS = [
    (vfsmod.vfs, '__call__'),
    (util, 'posixfile'),
    (vfsmod.abstractvfs, 'unlink'),
    (vfsmod.abstractvfs, 'tryunlink'),
    (vfsmod.abstractvfs, 'unlinkpath'),
    (vfsmod.abstractvfs, 'rename'),
    (transaction.transaction, 'addbackup'),
    (changegroup.cg1unpacker, 'filelogheader'),
    (streamclone, '_write_files'),
    (vfsmod.abstractvfs, 'prepare_streamed_file'),
    # stream v2 with the report shown (stream/v2.py's MKDIR_SEAM)
    (util, 'makedirs'),
]

_original = {}
# the file [inspect] stacks names, open for faulthandler while the process
# lives
_stacks = []


def extsetup(ui):
    # [inspect] grace: how long a closer waits for hung closes after an
    # interrupt (Closer.GRACE), for tests that interrupt many of them
    grace = ui.config(b'inspect', b'grace')
    if grace is not None:
        from hgext3rd.backgroundclose.engine import closer

        closer.Closer.GRACE = float(grace)
    # [inspect] stacks: SIGUSR2 appends every thread's stack to this file,
    # for a test to say where a command that should have ended waits
    stacks = ui.config(b'inspect', b'stacks')
    if stacks is not None and not _stacks:
        _stacks.append(open(stacks, 'a'))
        faulthandler.register(signal.SIGUSR2, file=_stacks[0],
                              all_threads=True)
    for owner, name in _SEAMS:
        if hasattr(owner, name):
            _original[(owner, name)] = getattr(owner, name)


def _descriptors():
    """what each open descriptor refers to; the one listing them left out"""
    found = []
    for fd in os.listdir('/proc/self/fd'):
        try:
            found.append('%s %s' % (fd, os.readlink('/proc/self/fd/' + fd)))
        except OSError:  # the listing's own descriptor, closed meanwhile
            pass
    return found


@command(b'debugleftovers', [], norepo=True)
def debugleftovers(ui):
    from hgext3rd.backgroundclose.engine import closer

    gc.collect()  # a closer only a cycle still refers to is not alive
    wrapped = [
        '%s.%s' % (getattr(owner, '__name__', owner), name)
        for (owner, name), original in sorted(
            _original.items(), key=lambda item: item[0][1]
        )
        if getattr(owner, name) is not original
    ]
    state = {
        'threads': sorted(
            t.name for t in threading.enumerate()
            if t is not threading.main_thread()
        ),
        'os_threads': len(os.listdir('/proc/self/task')),
        'closers': len(closer._live),
        'descriptors': sorted(_descriptors()),
        'wrapped': wrapped,
    }
    ui.write(json.dumps(state).encode('ascii') + b'\n')
