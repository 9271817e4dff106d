# handedfiles.py - the file objects whose close hands them to the closer
#
# Copyright 2026 hg-backgroundclose contributors
#
# This software may be used and distributed according to the terms of the
# GNU General Public License version 2 or any later version.
"""The file objects a seam gives core, one kind per job; each hands its
file to the closer as core closes it (docs/design.rst, "The ownership
rule"; who owns a descriptor until then: handover.py):

- ``DescriptorFile``: a file written from start to end straight into its
  descriptor (stream files, working-copy files);
- ``HandingOverRandom`` and ``HandingOverWriter``: a buffered file over a
  descriptor, as core's open() would make, for other modes (a revlog
  appended to), which hands the descriptor over as it closes;
- ``HandedOverFile``: a proxy over a file object core or another
  extension opened, which flushes it and hands it over.
"""

import io

from .. import engine


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

    def __del__(self, _again=engine.interrupt_again):
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
        except BaseException as exc:  # noqa: B902
            _again(exc)  # see HandedOverFile.__del__


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

    def __del__(self, _again=engine.interrupt_again):
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
        except BaseException as exc:  # noqa: B902
            _again(exc)  # see HandedOverFile.__del__


class HandingOverRandom(_HandsItselfOver, io.BufferedRandom):
    """a file opened for reading and writing that hands its descriptor
    over as it closes (``_HandsItselfOver``)"""

    __slots__ = ('_fd', '_name', '_files', '_onclose', '_armed')


class HandingOverWriter(_HandsItselfOver, io.BufferedWriter):
    """a file opened for writing only that hands its descriptor over as
    it closes (``_HandsItselfOver``)"""

    __slots__ = ('_fd', '_name', '_files', '_onclose', '_armed')


# made over a descriptor by handover.OwnedFiles, armed by open_through
ARMED_BY_OPEN = (DescriptorFile, HandingOverRandom, HandingOverWriter)
HANDING = (HandingOverRandom, HandingOverWriter)


def hands_itself_over(fp):
    """whether ``fp`` is a file ``open_through(handing=...)`` made, which
    hands its descriptor over itself"""
    return type(fp) in HANDING


def handing_file(fd, name, mode, files, label, onclose):
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

    def __del__(self, _again=engine.interrupt_again):
        # core leaves a file to the garbage collector now and then; one
        # over a descriptor it does not own is closed here, unless the
        # session did after a failure (then it is not owned any more)
        fd = self.__dict__.get('_fd')  # None if __init__ did not run
        try:
            if fd is not None and not self._closed and fd in self._files.fds:
                self._close_here()
        except BaseException as exc:  # noqa: B902
            # a finalizer can raise nothing: at interpreter exit modules
            # may be gone, and a Ctrl-C whose handler ran in here would
            # be lost (it is delivered again)
            _again(exc)

    def __getattr__(self, name):
        value = getattr(self._fp, name)
        if callable(value):
            # revlogs call seek and tell many times: look each up once
            # (the file object behind does not change)
            setattr(self, name, value)
        return value

    def __iter__(self):
        return iter(self._fp)
