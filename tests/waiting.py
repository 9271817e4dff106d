# waiting.py - polling for what another thread does, for the unit tests
#
# Copyright 2026 hg-backgroundclose contributors
#
# This software may be used and distributed according to the terms of the
# GNU General Public License version 2 or any later version.

import time


def true_by(deadline, condition):
    """whether ``condition()`` holds by ``deadline`` (``time.monotonic()``),
    asked every millisecond: for what close threads do while no one waits
    for them"""
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.001)
    return True


def interrupted_after(finalize, within=10):
    """whether a KeyboardInterrupt comes within ``within`` seconds after
    ``finalize()``, which drops the last reference to an object whose
    finalizer a Ctrl-C is to land in (it is sent again from a thread of
    the engine's, and raised at one of the next bytecodes: the wait ends
    there, and lasts all its seconds only where none comes)"""
    try:
        finalize()
        deadline = time.monotonic() + within
        while time.monotonic() < deadline:
            time.sleep(0.001)
    except KeyboardInterrupt:
        return True
    return False
