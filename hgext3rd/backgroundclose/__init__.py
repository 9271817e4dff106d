# backgroundclose - close files on background threads when closing is slow
#
# Copyright 2026 hg-backgroundclose contributors
#
# This software may be used and distributed according to the terms of the
# GNU General Public License version 2 or any later version.
"""close files on background threads when closing a written file is slow

It helps where closing a file that was just written takes a millisecond or
more while writing it takes microseconds: NTFS with antivirus software that
scans each file on close, NFS (which flushes on close) and FUSE mounts such
as sshfs.  A clone writes one store file per revlog, some 230,000 for
mozilla-central: closed one after the other, minutes go in waiting.  Core
Mercurial closes on threads only in working-copy updates and for the legacy
stream v1 format, and only with ``worker.backgroundclose`` set (its default
on Windows only).

With the extension, stream clones and stream bundles (v1, v2, v3, clone
bundles) and changegroups (pull, unbundle, clone without ``--stream``)
hand their closes to one closer, and working-copy updates write each file
whole.  By default it times
closes as it goes: cheap, it closes on the applying thread as core does;
slow, on background threads (in C where they were built), as many as keep
up, and no more than the cores, at a lower priority, when closes burn CPU.
Where making a file waits too (sshfs, NFS), writer threads write whole
stream files and working-copy files.  A failed close aborts and names the file; a failed or
interrupted stream apply removes what it wrote.  Repositories stay in
core's format.

Enable it for one user in ``~/.hgrc``, or for every user in a ``.rc`` file
of an ``hgrc.d`` directory (``/etc/mercurial/hgrc.d`` on Unix,
``%PROGRAMDATA%\\Mercurial\\hgrc.d`` on Windows)::

  [extensions]
  backgroundclose =

Check it: :hg:`version -v` lists it with its version, and
:hg:`debuginstall` says whether its C close threads were built (where they
were not, as on Windows, Python threads close files).
:hg:`debugprobeclose` times closes where the repository lives and says what
the closer would do there.

Disable it with ``backgroundclose = !`` in ``[extensions]``, or for one
command with ``--config extensions.backgroundclose=!``.

After every stream apply, changegroup step and update, one line goes to
Mercurial's log, the ``backgroundclose`` event (see :hg:`help -e
blackbox`): files, seconds, the close time spent on threads, and what the
closer decided.  ``--debug`` prints a line for each closer that started
threads, with the reason for its last switch.

The timing report (``backgroundclosereport``) has a row per operation with
its count, total, mean and longest time: "close, applier" is the time the
applying thread spent closing or waiting for the close threads, "close,
threads" the time the close threads took off it, and "close, writers" the
files writer threads wrote and closed whole.  After an update, one table
for its checkout, from all its worker processes: the time to make, write,
close and stat the files, on the applying threads and on the writers.

Settings
--------

In the ``[worker]`` section; also listed in :hg:`help config.worker`.  A bad
value aborts before anything is written.

``backgroundclose``
  Unset or ``auto``, the closer times closes and decides; ``true`` always
  closes on threads, ``false`` on the applying thread.  ``auto`` overrides
  a ``true`` or ``false`` set system-wide (core Mercurial refuses it).
  Core's default (true on Windows only) does not apply while the extension
  is loaded.

``backgroundclosethreadcount``
  Threads started when background closing begins. (default: 4)

``backgroundclosemaxthreadcount``
  Most threads the closer grows to when closes are slow, and no more than
  the cores when closes burn CPU. (default: 64)

``backgroundclosemaxqueue``
  Most files handed over and not closed yet, and at most half the
  descriptors the process has left. (default: 384)

``backgroundcloseminfilecount``
  With ``backgroundclose`` true, an apply that announces fewer files closes
  them on the applying thread.  With ``backgroundclose`` unset, threads
  start only for slow closes, and this applies only if set. (default: 2048)

``backgroundclosethreshold``
  Microseconds a close must take, on average over recent closes, for the
  closer to move closes to threads when ``backgroundclose`` is unset.
  (default: 30)

``backgroundclosenative``
  Close on the C threads, which never wait for Python's lock, where they
  were built; ``false`` closes on Python threads. (default: true)

``backgroundclosewrites``
  Write whole stream and working-copy files on writer threads: unset, once
  making a file is measured to wait on the file system (100 microseconds
  or more on average); ``true`` always; ``false`` never (an update is then
  core's own).  At most 32 MB of file data wait in memory.

``backgroundclosejournal``
  Register each file a stream apply writes with its transaction, so that
  :hg:`recover` after a killed apply removes them; it costs a little time
  a file, as core writes the journal for each. (default: false)

``backgroundclosereport``
  After each stream apply and each update, print a timing table (``true``; not with
  ``-q``), or JSON on standard error (``json``).  Unset, only
  :hg:`debugapplystreamclonebundle` prints it; ``false``, not even that
  command, unless given ``-T``.
"""

from mercurial.i18n import _
from mercurial import (
    changegroup,
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

from . import (
    checkout,
    checkoutsummary,
    compat,
    confighelp,
    debugapply,
    engine,
    malformed,
    probe,
    revlogwrite,
    seams,
    settings,
    streamapply,
    updateworkers,
    workingcopy,
)

__version__ = '0.1.0'
# the releases make test-matrix runs: hg debugextensions compares the
# exact version, hg's crash report its first two numbers
testedwith = b'6.5.3 6.6.3 6.7.4 6.8.2 6.9.5 7.0.3 7.1.2 7.2.4'
minimumhgversion = b'6.5'

configtable = {}
configitem = registrar.configitem(configtable)
cmdtable = {}
command = registrar.command(cmdtable)

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
    (seams.py).  Each finds its function when first called, so that a
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
        (changegroup.cg1unpacker, 'apply',
         later(lambda: settings.checked_apply))
    )
    step = later(lambda: revlogwrite.step)
    wrappers.append((changegroup, '_addchangegroupfiles', step))
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
        wrappers.append((owner, 'batchget', later(lambda: checkout.batchget)))
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
        seams.when_called(lambda: confighelp.explain_unset),
    )
    handlers = compat.part_handlers()
    if b'stream2' in handlers:
        handlers[b'stream2'] = malformed.stream2_handler(handlers[b'stream2'])
