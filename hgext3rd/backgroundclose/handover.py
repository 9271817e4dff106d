# handover.py - files opened through a vfs and closed by the closer
#
# Copyright 2026 hg-backgroundclose contributors
#
# This software may be used and distributed according to the terms of the
# GNU General Public License version 2 or any later version.
"""How a seam hands the files a vfs opened for it over to the closer.

All three seams (stream apply, changegroup step, working-copy update) let
a vfs open the files they write, so that path audit, store encoding, parent
directories and file modes stay core's.  What the seam gives back to core
is a ``HandedOverFile``: writes go to the file object behind it, and its
``close()`` flushes that file object on the writing thread, then hands the
file to the closer.

Where the closer has the C lane, the lane closes descriptors, not file
objects.  While a vfs opens a file for the seam (``OwnedFiles.open_through``),
the ``util.posixfile`` wrapper below opens the descriptor with ``os.open``,
into the closer's owned set in the same step.  What the vfs then gets is
either

- a ``DescriptorFile``, for a file opened only to be written from start to
  end (``'wb'``, and the seam asked for it: stream applies and working-copy
  updates).  Its writes go straight into the descriptor, so nothing is ever
  buffered above it, and its ``close()`` hands the descriptor over.  It
  spares each file a Python file object and a proxy, which cost as much
  as the rest of the seam together.  A stream's small file, written in
  one piece while the lane takes descriptors, is held whole instead and
  handed over with its descriptor in the same step, for the lane's
  thread to write before closing it; or
- a file object over the descriptor that does not own it
  (``closefd=False``), for other modes (a revlog appended to).  Closing
  the proxy flushes and closes that file object (which leaves the
  descriptor open), then hands the bare descriptor over.  Where the seam
  asks for it (``open_through(handing=...)``: changegroups' revlogs),
  that file object is itself a ``HandingOverRandom`` or
  ``HandingOverWriter``, which hands its descriptor over as it closes:
  no proxy in between, whose creation, finalizer and forwarded calls
  cost a revlog more than the rest of the seam.

Either way the lane never closes a descriptor with anything buffered above
it, and nothing is written after the lane closed it.

Ownership: a descriptor is the session's while it is in ``owned``; the
lane takes it out of that set in the same step as it queues it, and an
inline close in the same step as it closes it.  After a failure,
``OwnedFiles.release()`` closes what is left, each once, and first makes
the file object over it forget what it still buffers.
"""

import io
import os
import weakref

from mercurial import (
    util,
    vfs as vfsmod,
)

from . import (
    engine,
    seams,
)

# open()'s modes as os.open() flags, for the descriptors opened for the lane
_FLAGS = {
    'w': os.O_WRONLY | os.O_CREAT | os.O_TRUNC,
    'w+': os.O_RDWR | os.O_CREAT | os.O_TRUNC,
    'a': os.O_WRONLY | os.O_CREAT | os.O_APPEND,
    'a+': os.O_RDWR | os.O_CREAT | os.O_APPEND,
    'r+': os.O_RDWR,
}


def _open_modes(kind):
    """every spelling of those modes posixfile() may be given (``kind``:
    str or bytes, ``b`` anywhere) -> (the str mode, its flags): one lookup
    an open, for the revlog opens of a changegroup.  A table per kind: a
    str and a bytes key of equal hash would be compared on each lookup
    (and warn under ``python -b``)."""
    modes = {}
    for base, flags in _FLAGS.items():
        for spelling in (
            base,
            base + 'b',
            'b' + base,
            base[0] + 'b' + base[1:],
        ):
            key = spelling if kind is str else spelling.encode('ascii')
            modes[key] = (spelling, flags)
    return modes


_OPEN_MODES = {str: _open_modes(str), bytes: _open_modes(bytes)}

class OwnedFiles:
    """one session's descriptors opened for the lane and not handed over
    yet (``closer.owned``), and the file object over each"""

    def __init__(self, closer):
        self.closer = closer
        self.fds = closer.owned
        self._native = closer.native
        self._decisions = closer.decisions
        # descriptor -> the file object over it, or its DescriptorFile
        # (held weakly once the caller has it)
        self._files = {}
        # HandedOverFiles over file objects of their own (no descriptor for
        # the lane) not handed over yet, for release(): an interrupt
        # between core's open and its close would leave those to the
        # garbage collector, late where a traceback holds them (weak: on
        # success nothing is kept open longer than core keeps it)
        self._proxies = weakref.WeakSet()
        # what the vfs is opening for us, while it does (main thread only:
        # every seam opens through a vfs on the main thread)
        self._path = None
        self._opened = None  # the descriptor posixfile() opened for it
        # the posixfile wrapper, once a file was opened for the lane: it
        # costs every file the process opens a call, so only from then on
        self._seam = None
        # while a vfs opens a file for open_through(direct=...): what makes
        # the DescriptorFile of a file opened 'wb'
        self._direct = None
        # while a vfs opens a file for open_through(handing=...): the
        # file's name in messages and what its close calls after handing
        # over, for a file object that hands itself over
        self._handing = None
        # vfs -> what its join() puts before a relative name (prefix())
        self._prefixes = {}
        # whether vfs.join is core's alone, so that a prefix stands for it
        self._corejoin = seams.core_s_own(vfsmod.vfs, 'join') is not None
        # core's own vfs.__call__, where a seam may open a file written
        # from start to end itself (open_direct) instead: the C module is
        # built, and no other extension wraps it (it would miss the file)
        self.corecall = (
            seams.core_s_own(vfsmod.vfs, '__call__') if self._native
            else None
        )

    def takes_descriptors(self):
        """whether files are opened for the lane now: only once closes go
        there, as opening a descriptor for it and a file object over it
        costs more than core's open(), and a file object handed over is
        closed inline all the same.  A DescriptorFile costs less than
        core's file: see ``writes_direct``."""
        return self._native and self._decisions.background

    def writes_direct(self):
        """whether ``open_through(direct=...)`` makes DescriptorFiles,
        whether the closer closes in the background or inline: wherever
        the C module is built"""
        return self._native

    def wraps_posixfile(self):
        """whether util.posixfile is wrapped for the lane (by an
        open_through() that opened a file for it, until unwrap() or
        unwrap_between_opens())"""
        return self._seam is not None

    def open_through(self, orig, vfs, path, mode, kwargs, joined=None,
                     direct=None, handing=None):
        """``orig(vfs, path, mode, **kwargs)``, core's vfs open, with the
        file's descriptor opened for the lane if it takes descriptors now
        (or if ``direct`` is given and ``writes_direct()``):
        ``(fp, fd)``, where fd is None if core opened the file itself (not
        for the lane, or a mode posixfile leaves).  ``joined`` is
        ``vfs.join(path)``, the name the vfs opens, if the caller has it.

        ``direct(fd, name)``, if given, makes the DescriptorFile the vfs
        returns for a file opened ``'wb'``; fp is then that DescriptorFile
        (the caller wraps nothing around it).

        ``handing``, if given, is ``(name, onclose)``: a file opened for
        the lane in another mode, buffered as core's would be, is then a
        ``HandingOverRandom`` or ``HandingOverWriter`` that hands its
        descriptor over under ``name`` as it closes, then calls
        ``onclose`` (if not None); the caller wraps nothing around it
        either (``hands_itself_over(fp)``), unless the vfs returned another
        file object around it: that one the caller hands over, as any
        other."""
        # takes_descriptors(), or direct and writes_direct(), read in place:
        # this runs for every file opened
        if not self._native or (
            direct is None and not self._decisions.background
        ):
            return orig(vfs, path, mode, **kwargs), None
        if self._seam is None:
            self._seam = seams.installed(
                seams.bound(self, [POSIXFILE_SEAM])
            ).install()
        # only this path: the vfs may open others meanwhile (the temporary
        # copy that breaks a hardlink), and those own their descriptors
        self._opened = None
        try:
            self._path = self.join(vfs, path) if joined is None else joined
            self._direct = direct
            self._handing = handing
            fp = orig(vfs, path, mode, **kwargs)
        except BaseException:
            # opened, then the vfs failed (fixing the file's mode); an
            # interrupt before the discard leaves fd owned, for release()
            fd, self._opened = self._opened, None
            if fd is not None:
                self.discard(fd)
            raise
        finally:
            self._path = self._direct = self._handing = None
        fd, self._opened = self._opened, None
        if fd is not None:
            made = self._files.get(fd)
            if type(made) in _HANDING and fp is not made:
                # the vfs returned another file object around it (core's
                # for backgroundclose=True, another extension's wrapper):
                # a buffered file like open()'s from here on, the caller's
                # proxy hands fd over (handing it over here too would
                # close the number twice)
                made._fd = None
                made._armed = True
            elif type(made) in _ARMED_BY_OPEN:
                # the caller's from here on: if core drops it unclosed, its
                # finalizer closes fd.  Armed first, then held weakly: an
                # interrupt in between leaves it held, for release()
                made._armed = True
                self._files[fd] = weakref.ref(made)
        return fp, fd

    def open_direct(self, name, make):
        """open ``name`` (what a vfs joined, audited already) from start to
        end, ``'wb'``, for the lane: the DescriptorFile ``make(fd, name)``
        made over its descriptor, without core's open.  The descriptor is
        owned from the step that opens it; the file is the caller's once
        this returns (its finalizer closes fd if core drops it unclosed).
        Raises what ``os.open`` raises (a NUL byte: ValueError)."""
        fd = engine.open_owned(name, _FLAGS['w'], self.fds)
        try:
            fp = make(fd, name)
        except BaseException:
            self.discard(fd)
            raise
        # held weakly, for release() to tell it the descriptor was closed;
        # an interrupt before it is armed leaves fd owned, for release()
        self._files[fd] = weakref.ref(fp)
        fp._armed = True
        return fp

    def join(self, vfs, path):
        """``vfs.join(path)``, without its call for the relative names
        the seams open where no other extension wraps it (1.5 us a file):
        each is the vfs's prefix and the name.  Were it ever not what the
        vfs opens, posixfile() would only leave that open to core."""
        if (
            not self._corejoin
            or not path
            or path[:1] in (b'/', b'\\')
            or b':' in path
        ):
            return vfs.join(path)
        prefix = self._prefixes.get(vfs)
        if prefix is None:
            prefix = self.prefix(vfs)
        return prefix + path

    def prefix(self, vfs):
        """what ``vfs.join()`` puts before a relative name"""
        prefix = self._prefixes.get(vfs)
        if prefix is None:
            prefix = self._prefixes[vfs] = vfs.join(b'x')[:-1]
        return prefix

    def _open_raw(self, name, mode, buffering, flags):
        # like open(): mode 0o666 less the umask, not inherited by child
        # processes; into ``owned`` in the same step
        fd = engine.open_owned(name, flags, self.closer.owned)
        if self._direct is not None and mode == 'wb':
            # from here on open_through's failing path closes fd, and
            # nothing else: the file is made with its finalizer unarmed,
            # and held here until open_through hands it to the caller
            self._opened = fd
            fp = self._direct(fd, name)
            self._files[fd] = fp
            return fp
        try:
            if self._handing is not None and buffering == -1:
                fp = _handing_file(fd, name, mode, self, *self._handing)
            else:
                fp = open(fd, mode, buffering, closefd=False)
                # what open(name) would say; unbuffered, fp is the FileIO
                getattr(fp, 'raw', fp).name = name
        except BaseException:
            self.closer.close_quietly(fd)
            raise
        # a file that hands itself over is held here until open_through
        # arms it, as a DescriptorFile is
        self._files[fd] = fp
        self._opened = fd
        return fp

    def unwrap(self):
        """remove the posixfile wrapper, if a file was opened for the lane;
        the owner calls it once no file is opened for it any more (the
        session when it ends, or when it leaves files to core)"""
        if self._seam is not None:
            self._seam.remove()
            self._seam = None

    def unwrap_between_opens(self):
        """``unwrap()``, unless a vfs is opening a file for the lane now:
        the next ``open_through()`` that needs the wrapper puts it back"""
        if self._path is None:
            self.unwrap()

    def handing_over(self, fd):
        """what was over ``fd`` holds nothing any more (a file object
        flushed and closed, a DescriptorFile marked closed): from here on
        the descriptor alone is handed over"""
        self._files.pop(fd, None)

    def discard(self, fd):
        """on a failing path: close ``fd``, but first make the file object
        over it forget what it still buffers.  Closing only the number
        would leave that file object to flush its buffer, whenever it is
        finalized, into whatever file has the number by then."""
        fp = self._files.get(fd)
        if fp is not None:
            # forgotten only once marked closed: an interrupt in between
            # leaves it here for release()
            _mark_closed(fp)
            self._files.pop(fd, None)
        self.closer.close_quietly(fd)

    def track(self, proxy):
        """``proxy`` (a HandedOverFile over a file object of its own) is
        open: release() closes it unless it was handed over"""
        self._proxies.add(proxy)

    def untrack(self, proxy):
        self._proxies.discard(proxy)

    def release(self):
        """after a failure, once every close handed over is done: close
        what an interrupt or an error kept from the closer.  If the closer
        left hung closes to its threads, closing here could hang as well:
        the descriptors then go to a thread of their own, which closes
        them (engine.close_elsewhere), and the file objects over them
        are marked closed; the file objects of their own are left to the
        garbage collector."""
        proxies = self._proxies
        if self.closer.abandoned:
            proxies.clear()
        for proxy in list(proxies):
            # one the closer still holds is closed by its thread; forgotten
            # once closed (_close_here), so that an interrupt in between
            # leaves it here
            if not self.closer.holds(proxy._fp):
                proxy._close_here()
            proxies.discard(proxy)
        if self.closer.abandoned:
            for fd in list(self.fds):
                fp = self._files.pop(fd, None)
                if fp is not None:
                    _mark_closed(fp)
            left = list(self.fds)
            # from here on the thread's (an interrupt before the thread
            # starts leaks them, as a hung close would)
            self.fds.clear()
            engine.close_elsewhere(left)
            return
        for fd in list(self.fds):
            self.discard(fd)


def _mark_closed(fp):
    """make what is over a descriptor (in ``OwnedFiles._files``) never
    write into it again: a file object with closefd=False is closed (a
    closed buffered file never flushes again; closing only its raw file
    leaves nothing to flush, and calls no close() of ours), a
    DescriptorFile told so"""
    if type(fp) is weakref.ref:
        fp = fp()
        if fp is None:
            return
    if type(fp) is DescriptorFile:
        fp.forget()
    else:
        engine.close_quietly(getattr(fp, 'raw', fp))


def posixfile(files, orig, name, mode=b'r', buffering=-1, *args, **kwargs):
    """``util.posixfile`` while a session runs with the C lane: the file a
    vfs opens for ``files`` (OwnedFiles) gets a descriptor the closer will
    close"""
    if (
        files._path is None
        or name != files._path
        or files._opened is not None
        or args
        or kwargs
    ):
        return orig(name, mode, buffering, *args, **kwargs)
    table = _OPEN_MODES.get(type(mode))
    known = None if table is None else table.get(mode)
    if known is None:
        return orig(name, mode, buffering)
    return files._open_raw(name, known[0], buffering, known[1])


# wrapped by OwnedFiles.open_through() once files are opened for the lane
POSIXFILE_SEAM = (util, 'posixfile', posixfile)


class _WithBlock:
    """leaving a ``with`` block over a file the session hands over closes
    it (hands it over); leaving on an error closes it here instead, so
    that the first error wins"""

    __slots__ = ()

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc_value, exc_tb):
        if exc_type is None:
            self.close()
        elif not self._closed:
            self._close_here()
        return False


# the bytes files may hold for the lane at once, and the most one file holds
HOLD_TOTAL = 4 * 1024 * 1024
HOLD_MOST = 16 * 1024


def hold_limit(maxqueue):
    """the largest file a DescriptorFile holds for a lane whose queue takes
    ``maxqueue`` files: at most HOLD_TOTAL bytes wait at once"""
    return min(HOLD_MOST, HOLD_TOTAL // max(1, maxqueue))


class DescriptorFile(_WithBlock):
    """a file written from start to end straight into its descriptor,
    which the session owns (in ``files.fds``) until ``close()`` hands it to
    the closer

    What core asks of such a file is ``write()`` and a ``with`` block; the
    few other file methods are here for the rest of core.  With
    ``writestat`` the bytes are counted there (and timed, if ``timed``)
    and a failed write raises a FileError naming the file; without, the
    OSError a file object would raise.  ``onclose`` is called after the
    hand-over.  Leaving a failing ``with`` block closes the descriptor
    here, so that the first error wins.

    Its finalizer closes the descriptor of a file core dropped unclosed,
    once armed by ``OwnedFiles.open_through``, which made it: until then
    the opening closes the descriptor if it fails.

    With ``hold`` (a stream's files, while the C lane takes descriptors:
    ``hold_limit()``), a file written in one piece of bytes of at most
    ``hold`` bytes is not written here: its bytes go to the closer with the
    descriptor, and the lane's thread writes them before closing it.  The
    writing thread then only opens files, and the write's system call runs
    on another core.  Nothing
    reads such a file before the stream's closes are done (core's rule
    for ``backgroundclosing``); ``flush()``, ``fileno()`` and a second
    write write them here first.
    """

    __slots__ = (
        'name', '_fd', '_closer', '_files', '_writestat', '_onclose',
        '_timed', '_closed', '_offset', '_armed', '_hold', '_held',
        '__weakref__',
    )

    mode = 'wb'

    def __init__(self, fd, name, closer, files, writestat=None,
                 onclose=None, timed=False, hold=0):
        self.name = name
        self._fd = fd
        self._closer = closer
        self._files = files
        self._writestat = writestat
        self._onclose = onclose
        self._timed = timed
        self._closed = False
        self._offset = 0
        self._armed = False
        self._hold = hold
        self._held = None  # bytes written by the closer, or None

    def write(self, data):
        if self._closed:
            raise ValueError('write to closed file')
        stat = self._writestat
        if (
            self._hold
            and not self._offset
            and type(data) is bytes
            and len(data) <= self._hold
        ):
            # the whole file, maybe: held for the closer
            self._hold = 0
            self._held = data
            size = self._offset = len(data)
            if stat is not None:
                if self._timed:
                    stat.add(0.0, size)  # it costs this thread nothing
                else:
                    stat.bytes += size
            return size
        self._hold = 0
        if self._held is not None:
            self._write_held()
        start = engine.stat_clock() if self._timed else None
        size = self._write(data)
        self._offset += size
        if stat is not None:
            if start is None:
                stat.bytes += size
            else:
                stat.since(start, size)
        return size

    def _write(self, data):
        try:
            return engine.write_all(self._fd, data)
        except OSError as exc:
            if self._writestat is None:
                raise  # what a file object would raise
            raise engine.FileError(self.name, exc, 'writing') from exc

    def _write_held(self):
        """write the bytes held for the closer here after all (their size
        was counted when they were written)"""
        held, self._held = self._held, None
        self._write(held)

    def writelines(self, lines):
        for line in lines:
            self.write(line)

    def flush(self):
        self._check_open()
        if self._held is not None:
            self._write_held()

    def tell(self):
        self._check_open()
        return self._offset

    def fileno(self):
        # whoever takes the number may read or write through it
        self.flush()
        self._hold = 0
        return self._fd

    def writable(self):
        self._check_open()
        return True

    def readable(self):
        self._check_open()
        return False

    def seekable(self):
        self._check_open()
        return False

    def _check_open(self):
        if self._closed:
            raise ValueError('I/O operation on closed file')

    @property
    def closed(self):
        return self._closed

    def close(self):
        if self._closed:
            return
        fd = self._fd
        # an interrupt from here on leaves fd in the owned set, for
        # release(); the closer takes it out in the step that queues it
        self._closed = True
        held, self._held = self._held, None
        self._files.handing_over(fd)
        self._closer.close(fd, self.name, held)
        if self._onclose is not None:
            self._onclose()

    def forget(self):
        """the session closed the descriptor (after a failure): never
        write into that number again"""
        self._closed = True
        self._held = None

    def _close_here(self):
        """close on this thread, on a path that is already failing"""
        self._closed = True
        self._held = None
        self._files.discard(self._fd)

    def __del__(self):
        # left to the garbage collector by core: closed here, unless the
        # session did after a failure (then it is not owned any more), or
        # it never reached the caller (see the class doc)
        try:
            if (
                self._armed
                and not self._closed
                and self._fd in self._files.fds
            ):
                held, self._held = self._held, None
                if held is not None:
                    # written, as a file object left to the collector
                    # flushes; its error is lost, as that flush's would be
                    try:
                        engine.write_all(self._fd, held)
                    except OSError:
                        pass
                self._close_here()
        except BaseException:  # noqa: B902
            # see HandedOverFile.__del__
            pass


class _HandsItselfOver:
    """what ``HandingOverRandom`` and ``HandingOverWriter`` add to core's
    buffered file over a descriptor it does not own (``closefd=False``),
    for ``OwnedFiles.open_through(handing=...)``

    ``close()`` flushes into the descriptor on this thread, closes the
    file object (which leaves the descriptor open), then hands the
    descriptor to the closer and calls ``onclose``.  A failed flush
    closes the descriptor here and raises a FileError naming the file.
    Leaving a failing ``with`` block closes it here too, so that the first
    error wins.  Its finalizer closes the descriptor of a file core
    dropped unclosed, once armed by ``open_through``; until then the
    opening closes the descriptor if it fails.

    Everything else is the buffered file's own, in C: a revlog seeks,
    tells and writes without a Python call in between.
    """

    __slots__ = ()

    def close(self):
        fd = self._fd
        if fd is None:
            # under another file object, which hands fd over: a buffered
            # file like any (see open_through)
            return super().close()
        if self.closed:
            return
        try:
            # the raw file is closed even if the flush fails, so nothing
            # is written after the descriptor is closed, whoever closes it
            super().close()
        except BaseException as exc:
            # failed or interrupted while flushing: fd is closed here
            # (discard), an interrupt before that leaves it to release()
            self._files.discard(fd)
            if isinstance(exc, OSError):
                raise engine.FileError(
                    self._name, exc, 'writing'
                ) from exc
            raise
        # fd alone from here on: still in the owned set, for release() if
        # an interrupt keeps it from the closer
        files = self._files
        files.handing_over(fd)
        files.closer.close(fd, self._name)
        if self._onclose is not None:
            self._onclose()

    def __exit__(self, exc_type, exc_value, exc_tb):
        if exc_type is None or self._fd is None:
            self.close()
        elif not self.closed:
            self._close_here()
        return False

    def _close_here(self):
        """close on this thread, on a path that is already failing: what
        is buffered is written first, as a file object's close would"""
        try:
            super().close()
        except Exception:
            pass  # the error on its way is the first one
        finally:
            self._files.discard(self._fd)

    def __del__(self):
        # left to the garbage collector by core: closed here, unless the
        # session did after a failure (then it is not owned any more), or
        # it never reached the caller (see the class doc)
        try:
            if self._armed and not self.closed:
                if self._fd is None:
                    # under another file object: flushed and closed as
                    # IOBase's finalizer would (fd is that one's)
                    super().close()
                elif self._fd in self._files.fds:
                    self._close_here()
        except BaseException:  # noqa: B902
            # see HandedOverFile.__del__
            pass


class HandingOverRandom(_HandsItselfOver, io.BufferedRandom):
    """a file opened for reading and writing that hands its descriptor
    over as it closes (``_HandsItselfOver``)"""

    __slots__ = ('_fd', '_name', '_files', '_onclose', '_armed')


class HandingOverWriter(_HandsItselfOver, io.BufferedWriter):
    """a file opened for writing only that hands its descriptor over as
    it closes (``_HandsItselfOver``)"""

    __slots__ = ('_fd', '_name', '_files', '_onclose', '_armed')


# made over a descriptor by OwnedFiles, armed by open_through
_ARMED_BY_OPEN = (DescriptorFile, HandingOverRandom, HandingOverWriter)
_HANDING = (HandingOverRandom, HandingOverWriter)


def hands_itself_over(fp):
    """whether ``fp`` is a file ``open_through(handing=...)`` made, which
    hands its descriptor over itself"""
    return type(fp) in _HANDING


def _handing_file(fd, name, mode, files, label, onclose):
    """the file object ``open(fd, mode, closefd=False)`` would make, named
    ``name``, as a HandingOverRandom (``+`` in ``mode``) or
    HandingOverWriter that hands ``fd`` over under ``label``.  Buffered by
    the raw file's block size, as open() buffers it up to Python 3.13 at
    least, without open()'s isatty() system call, which a binary file
    never needs."""
    raw = io.FileIO(fd, mode, closefd=False)
    raw.name = name
    size = getattr(raw, '_blksize', 0)
    if size <= 1:
        size = io.DEFAULT_BUFFER_SIZE
    kind = HandingOverRandom if '+' in mode else HandingOverWriter
    fp = kind(raw, size)
    fp._fd = fd
    fp._name = label
    fp._files = files
    fp._onclose = onclose
    # set by open_through once the vfs returned it
    fp._armed = False
    return fp


class HandedOverFile(_WithBlock):
    """a file a seam opened through a vfs; ``close()`` flushes it here and
    hands it to the closer

    With ``fd`` (opened for the lane, see the module doc), ``fp`` does not
    own the descriptor: closing hands ``fd`` over.  Without, ``fp`` itself
    is handed over.  With ``writestat``, writes are counted into it (and
    timed, if ``timed``) and a failed write raises a FileError naming the
    file.  ``onclose`` is
    called after each hand-over.  Leaving a failing ``with`` block closes
    the file here, so that the first error wins.
    """

    def __init__(
        self, fp, closer, name, fd=None, files=None, writestat=None,
        onclose=None, timed=True,
    ):
        self._fp = fp
        self._closer = closer
        self._name = name
        self._fd = fd
        self._files = files
        self._writestat = writestat
        self._onclose = onclose
        self._closed = False
        if fd is None and files is not None:
            files.track(self)
        if writestat is None:
            self.write = fp.write  # no wrapper in the way of each write
        elif not timed:
            self.write = self._write_counted
        if fd is not None:
            # a revlog seeks and tells at every write: bound once, here,
            # instead of by __getattr__ on each new file
            self.seek = fp.seek
            self.tell = fp.tell

    def _write_counted(self, data):
        try:
            result = self._fp.write(data)
        except OSError as exc:
            raise engine.FileError(self._name, exc, 'writing') from exc
        self._writestat.bytes += len(data)
        return result

    def write(self, data):
        start = engine.stat_clock()
        try:
            result = self._fp.write(data)
        except OSError as exc:
            raise engine.FileError(self._name, exc, 'writing') from exc
        self._writestat.since(start, len(data))
        return result

    def close(self):
        if self._closed:
            return
        fp = self._fp
        name = self._name
        fd = self._fd
        if fd is None:
            try:
                engine.flush_for_handover(fp, name)
            except engine.FileError:
                self._closed = True  # closed by flush_for_handover
                if self._files is not None:
                    self._files.untrack(self)
                raise
            try:
                # an interrupt before this leaves it to _close_here()
                self._closed = True
                self._closer.close(fp, name)
            except engine.FileError:
                raise  # closed, or its close failed: not tried again
            except BaseException:
                # an interrupt as close() began can come before the closer
                # took fp, which would leave it to the garbage collector.
                # Closed here unless the closer holds it: a file object
                # closed twice closes its descriptor once, but would wait
                # here for a thread's close that hangs
                if not self._closer.holds(fp):
                    engine.close_quietly(fp)
                raise
            finally:
                # closed or handed over (an interrupt before this leaves it
                # to release(), which finds it so)
                if self._files is not None:
                    self._files.untrack(self)
        else:
            try:
                # flushes into fd, which fp does not own, and marks fp
                # closed even if the flush fails
                fp.close()
            except BaseException as exc:
                # failed or interrupted while flushing: fp is closed, and
                # marked so again before fd is closed (discard), which
                # would also keep a file object that held on to its bytes
                # from ever writing them into another file
                self._closed = True
                self._files.discard(fd)
                if isinstance(exc, OSError):
                    raise engine.FileError(name, exc, 'writing') from exc
                raise
            self._closed = True
            # from here on fd alone: still in the owned set, for
            # release() if an interrupt keeps it from the closer
            self._files.handing_over(fd)
            self._closer.close(fd, name)
        if self._onclose is not None:
            self._onclose()

    def _close_here(self):
        """close on this thread, on a path that is already failing"""
        self._closed = True
        engine.close_quietly(self._fp)
        if self._files is not None:
            self._files.untrack(self)  # if tracked (no fd of its own)
        if self._fd is not None:
            # fp was closed first (flushed into fd, still its file)
            self._files.discard(self._fd)

    def __del__(self):
        # core leaves a file to the garbage collector now and then; one
        # over a descriptor it does not own is closed here, unless the
        # session did after a failure (then it is not owned any more)
        fd = self.__dict__.get('_fd')  # None if __init__ did not run
        try:
            if fd is not None and not self._closed and fd in self._files.fds:
                self._close_here()
        except BaseException:  # noqa: B902
            # a finalizer can raise nothing: at interpreter exit modules
            # may be gone, and a second Ctrl-C landing here would only be
            # printed as "Exception ignored in", then dropped
            pass

    def __getattr__(self, name):
        value = getattr(self._fp, name)
        if callable(value):
            # revlogs call seek and tell many times: look each up once
            # (the file object behind does not change)
            setattr(self, name, value)
        return value

    def __iter__(self):
        return iter(self._fp)
