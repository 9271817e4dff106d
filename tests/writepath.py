# writepath.py - an extension that changes what an update writes, through
# one function of core's write path (tests/test-writepath.t)
#
# Copyright 2026 hg-backgroundclose contributors
#
# This software may be used and distributed according to the terms of the
# GNU General Public License version 2 or any later version.
"""Each value of ``writepath.override`` changes one thing, in the way
extensions do (a repository subclass made in ``reposetup``, a wrapper of a
class's method, an auditor of its own), so that a checkout that skipped
the override shows it: ``.txt`` files get a prefix, ``.sh`` files the
exec bit, a log under ``.hg`` lists the paths (or the batches of core's
``batchget``), or a path is refused."""

from mercurial import (
    context,
    error,
    extensions,
    pathutil,
    registrar,
    vfs as vfsmod,
)

configtable = {}
configitem = registrar.configitem(configtable)
configitem(b'writepath', b'override', default=None)

_PREFIX = b'[override]'


def _prefixed(path, data):
    return _PREFIX + data if path.endswith(b'.txt') else data


def _logged(repo, what, path):
    with repo.vfs(b'writepath.log', b'ab') as fp:
        fp.write(b'%s %s\n' % (what, path))


def reposetup(ui, repo):
    if not repo.local():
        return
    kind = ui.config(b'writepath', b'override')
    if kind == b'wwrite':

        class prefixingrepo(repo.__class__):
            def wwrite(self, filename, data, flags, *args, **kwargs):
                data = _prefixed(filename, data)
                return super().wwrite(filename, data, flags, *args, **kwargs)

        repo.__class__ = prefixingrepo
    elif kind == b'auditor':

        class refusingauditor(pathutil.pathauditor):
            def __call__(self, path, mode=None):
                if b'refused' in path:
                    raise error.InputError(b'path refused here: %s' % path)
                return super().__call__(path, mode)

        wvfs = repo.wvfs
        wvfs.audit = refusingauditor(wvfs.base)
    elif kind == b'subclass':
        # a repository subclass that leaves the write path alone, as many
        # extensions make one: the checkout still writes

        class quietrepo(repo.__class__):
            def quiet(self):
                return True

        repo.__class__ = quietrepo


def _fctxwrite(orig, self, data, flags, *args, **kwargs):
    return orig(self, _prefixed(self.path(), data), flags, *args, **kwargs)


def _clearunknown(orig, self):
    _logged(self._repo, b'clearunknown', self.path())
    return orig(self)


def _vfswrite(orig, self, path, data, *args, **kwargs):
    return orig(self, path, _prefixed(path, data), *args, **kwargs)


def _setflags(orig, self, path, l, x):
    # every shell script executable, as a locked-files extension makes
    # files read-only after each checkout
    return orig(self, path, l, x or path.endswith(b'.sh'))


def _vfscall(orig, self, path, mode=b'rb', *args, **kwargs):
    if b'w' in mode and path.endswith(b'.sh'):
        # (the working copy's vfs: its base holds .hg)
        with open(self.join(b'.hg/writepath.log'), 'ab') as fp:
            fp.write(b'open %s\n' % path)
    return orig(self, path, mode, *args, **kwargs)


_WRAPPERS = {
    b'fctxwrite': (context.workingfilectx, 'write', _fctxwrite),
    b'clearunknown': (context.workingfilectx, 'clearunknown', _clearunknown),
    b'vfswrite': (vfsmod.abstractvfs, 'write', _vfswrite),
    b'setflags': (vfsmod.abstractvfs, 'setflags', _setflags),
    b'vfscall': (vfsmod.vfs, '__call__', _vfscall),
}


def _batchget(orig, repo, mctx, wctx, wantfiledata, actions):
    _logged(repo, b'batchget', b'%d' % len(actions))
    return orig(repo, mctx, wctx, wantfiledata, actions)


def uisetup(ui):
    # before every extension's extsetup: inside the backgroundclose
    # extension's own wrapper of batchget
    if ui.config(b'writepath', b'override') == b'batchget':
        try:
            from mercurial.merge_utils import update as owner
        except ImportError:  # before Mercurial 7.0
            from mercurial import merge as owner
        extensions.wrapfunction(owner, 'batchget', _batchget)


def extsetup(ui):
    wrapper = _WRAPPERS.get(ui.config(b'writepath', b'override'))
    if wrapper is not None:
        extensions.wrapfunction(*wrapper)
