# filesystems.py - which file systems never wait on a network
#
# Copyright 2026 hg-backgroundclose contributors
#
# This software may be used and distributed according to the terms of the
# GNU General Public License version 2 or any later version.
"""Whether a path is on a local file system, by Mercurial's name for it
(``util.getfstype``).  There, a read or a mkdir never waits on a network:
what seems to wait (wall time a thread did not spend on the CPU) waits
for the interpreter's lock, which threads working ahead of the applying
thread (the store's readers, the directory makers) would only make
busier.  See docs/design.rst, "Helpers ahead"."""

from mercurial import util

# Mercurial's own names (ext2 stands for ext3 and ext4, which share its
# magic)
LOCAL = frozenset((
    b'apfs', b'btrfs', b'ext2', b'ext3', b'ext4', b'f2fs', b'hfs', b'jfs',
    b'overlay', b'ramfs', b'reiserfs', b'squashfs', b'tmpfs', b'xfs', b'zfs',
))


def is_local(path):
    """whether ``path`` (bytes) is on a file system of ``LOCAL``; False
    where that is not known"""
    try:
        return util.getfstype(path) in LOCAL
    except Exception:  # (unknown: as a network file system)
        return False
