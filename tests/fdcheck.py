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
