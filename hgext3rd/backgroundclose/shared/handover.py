# handover.py - files opened through a vfs and closed by the closer
#
# Copyright 2026 hg-backgroundclose contributors
#
# This software may be used and distributed according to the terms of the
# GNU General Public License version 2 or any later version.
"""Who owns the descriptors a vfs opens for a seam until they are handed
over to the closer: ``OwnedFiles``.  The file objects core gets are in
handedfiles.py.

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

import os
import weakref

from mercurial import (
    util,
    vfs as vfsmod,
)

from .. import engine
from . import (
    handedfiles,
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

# read for every file opened: module globals, one lookup each
_HANDING = handedfiles.HANDING
_ARMED_BY_OPEN = handedfiles.ARMED_BY_OPEN


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
                fp = handedfiles.handing_file(
                    fd, name, mode, self, *self._handing
                )
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
        # out of the session's set by name: on one of core's writer
        # threads (a finalizer the garbage collector runs there) the
        # closer would look in that thread's own set
        engine.close_quietly(
            fd, lambda fd: engine.descriptors.close_owned(fd, self.fds)
        )

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
    if type(fp) is handedfiles.DescriptorFile:
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
