# fdcheck.py - whether a descriptor is open, for the unit tests
#
# Copyright 2026 hg-backgroundclose contributors
#
# This software may be used and distributed according to the terms of the
# GNU General Public License version 2 or any later version.

import errno
import os


def is_open(fd):
    """whether ``fd`` is an open descriptor of this process"""
    try:
        os.fstat(fd)
    except OSError as exc:
        assert exc.errno == errno.EBADF
        return False
    return True


def left_open(fds, directory):
    """the descriptors among ``fds`` still open on a file in
    ``directory``, with the file each is open on.  A number that another
    thread of the process (one a former test left running) took again
    meanwhile is open on something else: not one of ours left open."""
    directory = os.path.realpath(str(directory)) + os.sep
    found = {}
    for fd in fds:
        if not is_open(fd):
            continue
        try:
            target = os.readlink('/proc/self/fd/%d' % fd)
        except OSError:  # no /proc: count it as ours
            target = directory
        if target.startswith(directory):
            found[fd] = target
    return found
