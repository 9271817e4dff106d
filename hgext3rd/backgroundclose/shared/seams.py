# seams.py - wrappers that are in place only while a session runs
#
# Copyright 2026 hg-backgroundclose contributors
#
# This software may be used and distributed according to the terms of the
# GNU General Public License version 2 or any later version.
"""Put wrappers around Mercurial functions for the length of a session.

Opening a file, making a directory or renaming one happens tens of
thousands of times in a changegroup apply or an update.  A wrapper that
stays in place costs a call on each of them even when it has nothing to do,
a few percent of an apply when closes are cheap.  The seams that only matter
inside a stream apply or a changegroup step are therefore wrapped when the
session begins and unwrapped when it ends; only the entry points (the
stream consumers, the changegroup steps, the working copy's
``vfs.backgroundfilecloser``) stay wrapped for the life of the process.

Every wrapper still checks that its session is running: a wrapper another
extension adds in the meantime keeps ours in its chain until it is removed.

A session's wrappers are bound to it (``bound``): each finds its session as
its first argument, never through a module global.  The one fact the
process-wide entry points need, whether a session writes into a store now,
is kept on the store's vfs (``attached``, ``writing``).
"""

import functools
import threading

from mercurial import extensions
from mercurial.revlogutils import flagutil

# the attribute of a store's raw vfs that holds the session writing into
# that store: a stream apply or a changegroup step, one at a time
_WRITING = '_backgroundclose_writing'


def bound(session, wrappers):
    """``wrappers`` (``(container, name, wrapper)``, None skipped) as the
    session's own: each wrapper is called with ``session`` first, then with
    what ``extensions.wrapfunction`` passes"""
    return [
        (container, name, functools.partial(wrapper, session))
        for container, name, wrapper in filter(None, wrappers)
    ]


def when_called(find):
    """a wrapper that calls ``find()`` for the function to run, each time
    it runs, not before: the extension's modules are imported lazily
    (Mercurial's demandimport), and a module loads when something in it
    is first looked up.  Wrapped in place from the start, a seam's module
    so loads in the commands that reach the seam, not in every command.
    Defined here, in a module of the package, as every wrapper of ours
    is (``core_s_own``)."""

    def wrapper(*args, **kwargs):
        return find()(*args, **kwargs)

    return wrapper


def core_s_own(container, name):
    """the function ``container.name`` if no extension wraps it but our
    sessions' own wrappers (extensions.wrapfunction), or None: what a
    seam may stand in for without taking another extension's wrapper out
    of the call"""
    chain = extensions.getwrapperchain(container, name)
    # the extension's package, one up from shared/
    ours = __package__.rpartition('.')[0] + '.'
    for wrapper in chain[:-1]:
        bound = getattr(wrapper, 'func', None)  # bound(): a partial
        if not getattr(bound, '__module__', '').startswith(ours):
            return None
    # and not replaced outright: defined where the container is
    home = (
        container.__module__
        if isinstance(container, type)
        else container.__name__
    )
    if getattr(chain[-1], '__module__', None) != home:
        return None
    return chain[-1]


def core_s_function(function):
    """whether ``function`` is core's own, not a wrapper another extension
    put in place (``extensions.wrapfunction`` gives a wrapper the
    ``__module__`` of what it wraps, and ``_origfunc``)"""
    module = getattr(function, '__module__', None) or ''
    return module.startswith('mercurial.') and not hasattr(
        function, '_origfunc'
    )


def core_s_method(cls, name, module):
    """whether ``cls.name`` is core's own: defined in ``module`` by the
    first class of ``cls``'s that defines it, and no extension's wrapper
    around it"""
    for owner in cls.__mro__:
        if name in vars(owner):
            if owner.__module__ != module.__name__:
                return False
            core = core_s_own(owner, name)
            return core is not None and getattr(cls, name, None) is core
    return False


def flag_processors(repo):
    """whether another extension registered a revlog flag processor,
    with the repository's store (lfs) or for every revlog: its reads and
    writes then run that extension's code"""
    registered = getattr(repo.svfs, 'options', {}).get(b'flagprocessors')
    return bool(registered) or any(
        processor is not None
        for processor in flagutil.flagprocessors.values())


# wrapping and unwrapping rebuild whole chains: one thread at a time
_CHAINS = threading.Lock()


def writing(storevfs):
    """the session writing into the store whose raw vfs is ``storevfs``,
    or None.  A session that is not running any more does not count (an
    interrupt may keep ``attached`` from taking its mark off again)."""
    session = getattr(storevfs, _WRITING, None)
    if session is None or not session.running:
        return None
    return session


class attached:
    """``with attached(storevfs, session):`` ``writing(storevfs)`` is
    ``session`` inside the block"""

    def __init__(self, storevfs, session):
        self._vfs = storevfs
        self._session = session

    def __enter__(self):
        setattr(self._vfs, _WRITING, self._session)
        return self._session

    def __exit__(self, exc_type, exc_value, exc_tb):
        # the attribute, not None: the vfs looks as it did.  Deleted, never
        # popped from its __dict__: on Python 3.11 and 3.12 touching an
        # object's __dict__ turns its attributes into a plain dict for good,
        # and every later attribute read of the vfs (a changegroup's next
        # step opens each file through it) takes twice as long
        try:
            delattr(self._vfs, _WRITING)
        except AttributeError:  # removed already
            pass
        return False


class installed:
    """``with installed(wrappers):`` wraps each ``(container, name,
    wrapper)`` on entry and removes exactly those wrappers on exit.

    ``install()`` and ``remove()`` do the same outside a ``with`` block
    (the extension's own setup, which stays for the life of the process).
    Either every wrapper is in place or none: if one cannot be put in
    place, those before it are removed again before the error goes on.
    """

    def __init__(self, wrappers):
        self._wrappers = [w for w in wrappers if w is not None]
        self._done = []

    def install(self):
        try:
            with _CHAINS:
                for seam in self._wrappers:
                    # listed first: an interrupt right after the wrapping
                    # still finds it listed, for remove()
                    self._done.append(seam)
                    extensions.wrapfunction(*seam)
        except BaseException:
            self.remove()
            raise
        return self

    def in_place(self):
        """whether ``install()`` put the wrappers in place and
        ``remove()`` has not taken them away since (a ``remove()`` cut
        short by an interrupt may leave this saying so of a wrapper it
        already took away: only when the session is ending anyway)"""
        return bool(self._done)

    def remove(self):
        with _CHAINS:
            while self._done:
                container, name, wrapper = self._done[-1]
                # listed, then interrupted or failed before the wrapping:
                # not in the chain (or no such function)
                try:
                    chain = extensions.getwrapperchain(container, name)
                except Exception:
                    chain = ()
                if any(w is wrapper for w in chain):
                    extensions.unwrapfunction(container, name, wrapper)
                self._done.pop()

    def __enter__(self):
        return self.install()

    def __exit__(self, exc_type, exc_value, exc_tb):
        self.remove()
        return False
