# backgroundclose - close files on background threads when closing is slow
#
# Copyright 2026 hg-backgroundclose contributors
#
# This software may be used and distributed according to the terms of the
# GNU General Public License version 2 or any later version.
"""close files on background threads when closing a written file is slow

On some file systems closing a file that was just written is expensive:
NTFS (often because antivirus software scans the file on close), network
file systems (NFS flushes the file's dirty data on close) and FUSE mounts
can take a millisecond or more per close, while writing the data takes a few
microseconds.  A stream clone writes one file per revlog, about 230,000 of
them for mozilla-central, so a clone that closes its files one after the
other on the main thread spends minutes waiting.

Mercurial 3.7 closed stream clone files on background threads, but today
only the legacy stream v1 format does, and only with ``[worker]
backgroundclose`` set.  Stream v2, which :hg:`clone --stream` and stream
clone bundles use, closes every file on the main thread.

With this extension enabled, every stream apply (v1, v2 and v3, including
the writer threads of ``worker.parallel-stream-bundle-processing``) hands
its closes to one closer:

- by default it measures how long closes take while it writes; when they
  are cheap it closes on the writing thread, which is fastest, and when
  they are slow it hands them to background threads, adding threads until
  the writing thread no longer waits for closes (no more threads than
  cores when closes burn CPU, as an antivirus scan does); the C close
  threads also write each small file (written in one piece of at most
  16 KB; at most 4 MB wait at once) before they close it;
- while closes and opens are measured cheap and no timing report is
  asked for, most files are written and closed as core does it and only a
  sample goes through the closer, so that a fast file system pays next to
  nothing (a v1 stream's files take the extension's own path there, which
  costs no more than core's, where its C part is built);
- at no time are more than ``worker.backgroundclosemaxqueue`` files waiting
  to be closed (fewer if the process's descriptor limit is low);
- where the system refuses to start a thread (a process limit in a
  container, little address space), the closer keeps the threads that
  started, or closes on the writing thread when none did, and the command
  goes on;
- a failed close is reported (``abort: error closing <file>: <reason>``) and
  the apply aborts, whichever thread the close ran on;
- a close that never returns on a background thread does not keep Ctrl-C
  from stopping hg: after an interrupt, hung closes are waited for at most
  5 seconds, then left to their threads (where every file system call
  hangs, as on a hard-mounted NFS server gone away, taking the apply back
  hangs too, as core would);
- a failed or interrupted apply removes the files it wrote to the store
  and the cache, so that the repository is left as it was;
- with ``worker.backgroundclosejournal``, each store file is registered
  with the apply's transaction, so that :hg:`recover` after a killed apply
  removes them;
- a stream that does not hold what its header declares (cut short, an
  unknown file source, counts that are not numbers) aborts with
  ``abort: malformed stream clone data: ...``.

The same closer serves the other two places that write many files:

- changegroups (:hg:`unbundle`, :hg:`pull`, :hg:`clone` without
  ``--stream``): the closes of the revlogs each changegroup writes.  These
  files are reopened (appended to, split from inline into index and data,
  read back, truncated by a rollback), so a file is flushed before its
  close is handed over, and any open, rename or unlink of a file whose
  close is still pending waits for it.  Every close is finished before the
  changegroup's hooks run and before its transaction ends or rolls back;
  a failed close aborts and names the file.  While closes are measured
  cheap, most files are left to core untouched and only a sample is timed;
- working-copy updates (:hg:`update`, and the update after :hg:`clone`):
  the files core writes with background closing, in each of Mercurial's
  forked update workers.  Each file is flushed before its close is handed
  over, so that the size and time the dirstate records are final.

For changegroups and updates, ``--debug`` prints a line per closer that
started threads, saying how many closes it handled and how many of them ran
on threads; what a stream apply's closer did is in its timing report
(``worker.backgroundclosereport``), and core's own "starting N threads for
background file closing" is not printed, as core's closer is not used.

Where it acts (Mercurial 6.5 to 7.2; "C threads" where the C part was
built, Python threads elsewhere, e.g. on Windows or with
``worker.backgroundclosenative=false``; inline while closes are cheap):

=============================================  ===========  ==============
command                                        format       closes on
=============================================  ===========  ==============
clone --stream, stream bundles, clone bundles  v1, v2, v3   C threads
pull, unbundle, clone, a push over ssh         changegroup  C threads
a push received by hg serve over http          changegroup  inline (core)
update, pull -u, the update after clone        files        C threads
updates by rebase, strip, histedit             files        C threads
bundles re-applied by strip, rebase, histedit  changegroup  C threads
everything else (commit, ...)                  -            core's closes
=============================================  ===========  ==============

Enable it with::

  [extensions]
  backgroundclose =

Timing report
-------------

:hg:`debugapplystreamclonebundle` accepts v1, v2 and v3 stream bundles with
this extension and prints, after the apply, the wall time, files, bytes,
throughput and a table of count, total, mean and maximum time for open,
write, mkdir and close; not if ``worker.backgroundclosereport`` is set to
false and ``-T`` is not given (then nothing is timed).  Times are those of
the writing threads: the write of a small file the close threads write
counts with no time.  Close has two rows: the time the writing threads
spent closing or waiting for the closer ("waited"), and the time
background threads spent closing ("threads").  ``-T json`` prints a list
with one object per apply holding ``format``, ``files``, ``bytes``,
``seconds``, ``ops`` and ``closer``.

The same report is printed after :hg:`clone --stream` and :hg:`unbundle` of
a stream bundle when ``worker.backgroundclosereport`` asks for it.  It is
not printed in verbose mode without it: the extension adds nothing to
core's output unless asked.

Does my file system need it?
----------------------------

:hg:`debugprobeclose` writes a few hundred store-like files in the
directory that holds the repository's store (for a share, that of the
repository it shares; or in the directory given), times mkdir, open, write,
close, and fsync followed by close, removes them again (also after an error
or an interrupt), and tells what the closer would do there with the current
settings: close inline, or on how many background threads, and how much
time that saves per 100,000 files at most.  It also tells closes that wait
(a flush, a network round trip) from closes that burn CPU (an antivirus
scan), for which the threads stop at the core count.  ``-T json`` gives the
same figures.

Settings
--------

All settings live in the ``[worker]`` section.  Core Mercurial's four keep
their meaning:

``backgroundclose``
  Left unset, the extension decides while applying (adaptive).  ``true``
  always closes on background threads; ``false`` always closes on the
  writing thread (the timing report is still collected).

``backgroundclosethreadcount``
  Number of background threads started when background closing begins.
  (default: 4)

``backgroundclosemaxqueue``
  Most files handed to the closer and not closed yet; this bounds how many
  files are open at once.  It is also clamped to half the descriptors the
  process has left. (default: 384)

``backgroundcloseminfilecount``
  Applies that announce fewer files than this close them on the writing
  thread and start no thread. (default: 2048 when ``backgroundclose`` is
  true; in the adaptive mode only a value you set applies, since that mode
  starts no thread unless it measured closes to be slow)

The extension adds:

``backgroundclosemaxthreadcount``
  Most background threads the closer grows to when closes are slow. The
  pool starts at ``backgroundclosethreadcount`` and grows to match the
  measured close latency to the rate files are written. (default: 64)

``backgroundclosethreshold``
  Close time, in microseconds, above which the adaptive mode switches to
  background closing.  It compares a smoothed mean of recent closes, so one
  slow close among cheap ones does not switch it; four slow closes in a row
  switch it at once.  Now and then a few closes are timed inline again: it
  switches back when they take less than half of it, or no longer than
  handing a file to the threads took the writer meanwhile (the threads
  cannot keep up). (default: 30)

``backgroundclosenative``
  Close files on threads written in C, which never wait for Python's
  global lock: the files of every stream format, the revlogs a changegroup
  writes, and working-copy files.  A Python thread takes that lock back
  after every close, and at a few hundred microseconds per close those
  hand-offs cost the writing thread more than they save.  Where the C part
  could not be built (no compiler when installing, or not a POSIX system),
  on a free-threaded Python (the C part refuses to load there), or with
  ``false``, Python threads close them. (default: true)

``backgroundclosewrites``
  Write whole files on writer threads during a stream apply (every stream
  format), not only close them there.  Left unset, the extension times a
  few opens and starts writers when opening a file, with its directories,
  waits on the file system (a network file system: sshfs, NFS) for 100
  microseconds or more on average; an open that only waited for a busy
  CPU does not count.  The data of files not written yet is held in
  memory, 32 MB at most; a file that does not fit is written by the
  reading thread.  ``true`` uses writers from the first file, ``false``
  never.

``backgroundclosejournal``
  Register each store file a stream apply writes with the apply's
  transaction, as a pull registers its revlogs (core registers none): after
  a killed apply (``kill -9``), :hg:`recover` removes them (those being
  opened at that moment may be left, empty), and :hg:`rollback` right
  after an apply removes them too.  A failed apply then prints core's
  "transaction abort!" and "rollback completed".  It costs about 12
  microseconds a file (core writes the journal for each), some 3 seconds
  of a 230,000-file apply. (default: false)

``backgroundclosereport``
  Print the timing report after every stream apply: ``true`` for the table,
  ``json`` for JSON, ``false`` for never.  Unset: never, but
  :hg:`debugapplystreamclonebundle` prints it (set to false, that command
  prints it only with ``-T``).

Settings are checked before anything is written, when a pull, clone,
update, merge or changegroup apply (:hg:`unbundle`, a push on the server)
begins; a bad value aborts with a message naming the setting.  Without the extension, core Mercurial ignores
the added settings.
"""

from mercurial.i18n import _
from mercurial import (
    changegroup,
    cmdutil,
    exchange,
    extensions,
    merge as mergemod,
    pycompat,
    registrar,
    streamclone,
    vfs as vfsmod,
)

from . import (
    compat,
    debugapply,
    malformed,
    probe,
    revlogwrite,
    seams,
    settings,
    streamapply,
    workingcopy,
)

__version__ = b'0.1.0'
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


def _process_wrappers():
    """the wrappers in place for the life of the process; the seams inside
    a stream apply or a changegroup step are wrapped while it runs
    (seams.py)"""
    wrappers = [
        (streamclone, name, streamapply.consumer(fmt))
        for fmt, name in compat.STREAM_CONSUMERS
    ]
    wrappers.extend(
        (container, name, settings.checked)
        for container, name in (
            (exchange, 'pull'),
            (mergemod, '_update'),
        )
    )
    wrappers.append(
        (changegroup.cg1unpacker, 'apply', settings.checked_apply)
    )
    wrappers.append(
        (changegroup, '_addchangegroupfiles', revlogwrite.step)
    )
    wrappers.extend(
        (unpacker, '_unpackmanifests', revlogwrite.step)
        for unpacker in compat.CHANGEGROUP_UNPACKERS
    )
    # (a stream apply wraps it again while it runs, around this one)
    wrappers.append(
        (vfsmod, 'backgroundfilecloser', workingcopy.backgroundfilecloser)
    )
    wrappers.append((streamclone, '_makemap', malformed.makemap))
    return wrappers


def extsetup(ui):
    missing = compat.missing_seams()
    if missing:
        # a Mercurial whose internals moved: stay out of the way, loudly
        ui.warn(
            b'backgroundclose: disabled, this Mercurial lacks %s\n'
            % ', '.join(missing).encode('ascii')
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
    handlers = compat.part_handlers()
    if b'stream2' in handlers:
        handlers[b'stream2'] = malformed.stream2_handler(handlers[b'stream2'])
