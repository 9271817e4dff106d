# backgroundclose - close files on background threads when closing is slow
#
# Copyright 2026 hg-backgroundclose contributors
#
# This software may be used and distributed according to the terms of the
# GNU General Public License version 2 or any later version.
"""close files on background threads when closing a written file is slow

It helps where closing a file just written takes a millisecond or more
while writing it takes microseconds: NTFS with antivirus software that scans
each file on close, NFS (which flushes on close) and FUSE mounts such as
sshfs.  A clone writes one store file per revlog, some 230,000 for
mozilla-central: closed one after the other, minutes go in waiting.  Core
Mercurial closes on threads only in working-copy updates and for the
legacy stream v1 format, and only with ``worker.backgroundclose`` set.

With the extension, stream clones and bundles (v1, v2, v3, clone bundles)
and changegroups (pull, unbundle, clone without ``--stream``) hand their
closes to one closer, and updates write each file whole.  By default it
times closes: cheap, it closes on the applying thread as core does; slow,
on background threads (in C where they were built), as many as keep up.
Where making a file waits too (sshfs, NFS), writer threads write whole
files, and a changegroup's file revlogs are applied on threads, each
whole.  A failed close aborts and names the file; a failed or interrupted
stream apply removes what it wrote.  Repositories stay in core's format.

Enable it for one user in ``~/.hgrc``, or for every user in a ``.rc`` file
of an ``hgrc.d`` directory (``/etc/mercurial/hgrc.d`` on Unix,
``%PROGRAMDATA%\\Mercurial\\hgrc.d`` on Windows)::

  [extensions]
  backgroundclose =

Check it: :hg:`version -v` lists it, :hg:`debuginstall` says whether its C
close threads were built (else Python threads close files), and
:hg:`debugprobeclose` times closes where the repository lives and advises.

Disable it with ``backgroundclose = !`` in ``[extensions]``, or for one
command with ``--config extensions.backgroundclose=!``.

After every stream apply, changegroup step and update, one line goes to
Mercurial's log, the ``backgroundclose`` event (see :hg:`help -e
blackbox`): files, seconds, the close time spent on threads, and what the
closer decided.  ``--debug`` prints a line for each closer that started
threads, with the reason for its last switch.

Settings
--------

In the ``[worker]`` section; also in :hg:`help config.worker`.  A bad value
is a config error, as core's are, before anything is written.  Mercurial
without the extension ignores its settings and reads core's four as
always, so one hgrc serves machines with and without it.  What the policy
and ``backgroundclosewrites`` start (no writer threads: an update is
core's own):

  ==========  ======  =============  ===============
  policy      writes  close threads  writer threads
  ==========  ======  =============  ===============
  adaptive    unset   when slow      when opens wait
  background  unset   always         when opens wait
  inline      unset   none           none
  any         true    per policy     always
  any         false   per policy     none
  ==========  ======  =============  ===============

``backgroundclosepolicy``
  ``adaptive`` (or ``auto``) times closes and decides; ``background``
  always closes on threads; ``inline`` on the applying thread.  Unset,
  ``backgroundclose`` decides.  Set this, not ``backgroundclose``, to undo
  a ``true`` or ``false`` set system-wide.  :hg:`config worker.backgroundclosepolicy`
  says which policy is in effect and which setting chose it.

``backgroundclose``
  Core's boolean, read when ``backgroundclosepolicy`` is unset: ``true``
  is ``background``, ``false`` is ``inline``, unset is ``adaptive`` (core's
  default, true on Windows, does not apply).  ``auto`` is read as
  ``adaptive``, but Mercurial without the extension refuses it.

``backgroundclosethreadcount``
  Threads started when background closing begins, 1 to 256; set alone
  above ``backgroundclosemaxthreadcount``, it raises that. (default: 4)

``backgroundclosemaxthreadcount``
  Most threads the closer grows to when closes are slow, 1 to 256, and no
  more than the cores when closes burn CPU. (default: 64)

``backgroundclosemaxqueue``
  Most files handed over and not closed yet, 1 to 65536, and at most half
  the descriptors the process has left. (default: 384)

``backgroundcloseminfilecount``
  With ``background``, an apply that announces fewer files closes them
  inline; with ``adaptive``, only if set.  0 to 1000000000. (default: 2048)

``backgroundclosethreshold``
  Microseconds a close must take on average for ``adaptive`` to move
  closes to threads, 0 to 1000000. (default: 30)

``backgroundclosenative``
  Close on the C threads, which never wait for Python's lock, where they
  were built; ``false`` closes on Python threads. (default: true)

``backgroundclosewrites``
  Write whole stream and working-copy files on writer threads: unset, once
  making a file is measured to wait (100 microseconds or more on average),
  never with ``inline``; ``true`` always; ``false`` never.  At most 32 MB
  of file data wait in memory.  Likewise a changegroup's file revlogs,
  applied on threads: unset, where the store is on a network file system.

``backgroundclosejournal``
  Register each file a stream apply writes with its transaction, so that
  :hg:`recover` after a killed apply removes them, at a journal write a
  file.  A file the system refuses to remove is left, and named; after a
  kill, :hg:`recover` fails until it can be removed. (default: false)

``backgroundclosereport``
  After each stream apply and update, a timing table (``true``; not with
  ``-q``), or JSON on standard error (``json``): a row per operation with
  its count, total, mean and longest time, on the applying thread, the
  close threads and the writers.  Unset, only
  :hg:`debugapplystreamclonebundle` prints it; ``false``, not even that
  command, unless given ``-T``.
"""

from mercurial.i18n import _
from mercurial import (
    changegroup as changegroupmod,
    cmdutil,
    commands,
    exchange,
    extensions,
    merge as mergemod,
    pycompat,
    registrar,
    streamclone,
    util,
    vfs as vfsmod,
)

from . import engine
from .changegroup import revlogs as revlogwrite
from .checkout import (
    batchget,
    filecloser as workingcopy,
    summary as checkoutsummary,
    workers as updateworkers,
)
from .face import (
    confighelp,
    debugapply,
    probe,
)
from .shared import (
    compat,
    seams,
    settings,
)
from .stream import (
    apply as streamapply,
    malformed,
)

__version__ = '0.1.0'
# the releases make test-matrix runs: hg debugextensions compares the
# exact version, hg's crash report its first two numbers
# no address of the project's own is published: a crash report names the
# README's section on reporting bugs
buglink = (
    b'the hg-backgroundclose maintainers (see "Reporting a bug" in its '
    b'README)'
)
testedwith = b'6.5.3 6.6.3 6.7.4 6.8.2 6.9.5 7.0.3 7.1.2 7.2.4'
minimumhgversion = b'6.5'

configtable = {}
configitem = registrar.configitem(configtable)
cmdtable = {}
command = registrar.command(cmdtable)

configitem(b'worker', b'backgroundclosepolicy', default=None)
configitem(b'worker', b'backgroundclosemaxthreadcount', default=64)
configitem(b'worker', b'backgroundclosethreshold', default=30)
configitem(b'worker', b'backgroundclosereport', default=None)
configitem(b'worker', b'backgroundclosenative', default=True)
configitem(b'worker', b'backgroundclosewrites', default=None)
configitem(b'worker', b'backgroundclosejournal', default=False)


@command(
    b'debugprobeclose',
    cmdutil.formatteropts,
    _(b'[DIR]'),
    optionalrepo=True,
    helpcategory=command.CATEGORY_MAINTENANCE,
)
def debugprobeclose(ui, repo, dest=None, **opts):
    """time closing files here, and tell what the closer would do

    Writes a few hundred store-like files in the directory that holds the
    repository's store (for a share, that of the repository it shares), or
    in DIR, times them, and removes them again.  See :hg:`help -e
    backgroundclose`.
    """
    probe.run(ui, repo, dest, pycompat.byteskwargs(opts))


def debuginstall(ui, fm):
    """:hg:`debuginstall` calls this: say whether the C close threads were
    built (Python threads close files where they were not).  Never a
    problem: Windows has no C part."""
    built = engine.native_available()
    if built:
        fm.plain(_(b'checking backgroundclose C close threads (built)\n'))
    else:
        fm.plain(
            _(
                b'checking backgroundclose C close threads (missing: Python '
                b'threads close files)\n'
            )
        )
    fm.data(backgroundclosenative=built)
    return 0


def _process_wrappers():
    """the wrappers in place for the life of the process; the seams inside
    a stream apply or a changegroup step are wrapped while it runs
    (shared/seams.py).  Each finds its function when first called, so that a
    command loads only the modules of the seams it reaches (a stream
    clone never loads the checkout's)."""
    later = seams.when_called
    wrappers = [
        (streamclone, name, later(lambda fmt=fmt: streamapply.consumer(fmt)))
        for fmt, name in compat.STREAM_CONSUMERS
    ]
    checked = later(lambda: settings.checked)
    wrappers.extend(
        (container, name, checked)
        for container, name in (
            (exchange, 'pull'),
            (mergemod, '_update'),
        )
    )
    wrappers.append(
        (changegroupmod.cg1unpacker, 'apply',
         later(lambda: settings.checked_apply))
    )
    step = later(lambda: revlogwrite.step)
    wrappers.append((changegroupmod, '_addchangegroupfiles', step))
    wrappers.extend(
        (unpacker, '_unpackmanifests', step)
        for unpacker in compat.CHANGEGROUP_UNPACKERS
    )
    # (a stream apply wraps it again while it runs, around this one)
    wrappers.append(
        (vfsmod, 'backgroundfilecloser',
         later(lambda: workingcopy.backgroundfilecloser))
    )
    wrappers.append((streamclone, '_makemap', later(lambda: malformed.makemap)))
    owner = compat.batchget_owner()
    if owner is not None:
        wrappers.append((owner, 'batchget', later(lambda: batchget.batchget)))
        name = compat.applyupdates_name(owner)
        if name is not None:
            wrappers.append(
                (owner, name, later(lambda: checkoutsummary.applyupdates))
            )
            wrappers.append(
                (owner, name, later(lambda: updateworkers.applyupdates))
            )
    return wrappers


def extsetup(ui):
    missing = compat.missing_seams()
    if missing:
        # a Mercurial whose internals moved: stay out of the way, loudly
        tested = testedwith.split()
        ui.warn(
            _(b'backgroundclose %s is disabled: Mercurial %s lacks %s\n')
            % (
                pycompat.bytestr(__version__),
                util.version(),
                ', '.join(missing).encode('ascii'),
            )
        )
        ui.warn(
            _(
                b'(it was tested with Mercurial %s to %s: install a release '
                b'of it made for this Mercurial, or disable it with '
                b'"backgroundclose = !" in [extensions])\n'
            )
            % (tested[0], tested[-1])
        )
        return
    # all or nothing: a half set up extension (some seams wrapped, others
    # not) would behave like neither core nor the extension
    process = seams.installed(_process_wrappers()).install()
    try:
        entry = extensions.wrapcommand(
            compat.command_table(),
            b'debugapplystreamclonebundle',
            debugapply.debugapplystreamclonebundle,
            docstring=debugapply.DOCSTRING,
        )
    except BaseException:
        process.remove()
        raise
    entry[1].extend(cmdutil.formatteropts)
    # the settings in hg help config.worker: put in place as hg help or
    # hg serve (hgweb's help pages) runs, not at every command's start, for
    # Mercurial's help module is the costliest of all to load
    extensions.wrapcommand(
        commands.table,
        b'help',
        seams.when_called(lambda: confighelp.help_with_settings),
    )
    extensions.wrapcommand(
        commands.table,
        b'serve',
        seams.when_called(lambda: confighelp.serve_with_settings),
    )
    extensions.wrapcommand(
        commands.table,
        b'config',
        seams.when_called(lambda: confighelp.explain_policy),
    )
    handlers = compat.part_handlers()
    if b'stream2' in handlers:
        handlers[b'stream2'] = malformed.stream2_handler(handlers[b'stream2'])
