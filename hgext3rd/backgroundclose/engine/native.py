# native.py - the C lane, where it was built
#
# Copyright 2026 hg-backgroundclose contributors
#
# This software may be used and distributed according to the terms of the
# GNU General Public License version 2 or any later version.
"""The C module ``_closelane`` (POSIX), or None where it was not built.
Read as ``native.lane_module`` at each use, so that a test can take it
away.  See docs/design.rst."""

import atexit

try:
    # built from _closelane.c where possible (see setup.py)
    from . import _closelane as lane_module
except ImportError:
    lane_module = None
else:
    # the threads of an abandoned lane release it through the interpreter
    # once their closes return: not once it is ending
    atexit.register(lane_module.finalizing)


def available():
    """whether descriptors can be closed on threads that never take the GIL"""
    return lane_module is not None
