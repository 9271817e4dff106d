# scheduling.py - when the unit tests can see close threads as batch threads
#
# Copyright 2026 hg-backgroundclose contributors
#
# This software may be used and distributed according to the terms of the
# GNU General Public License version 2 or any later version.

import os

import pytest


def _policy():
    try:
        return os.sched_getscheduler(0)
    except (AttributeError, OSError):  # missing, or refused (musl: ENOSYS)
        return None


# the close threads make themselves batch threads only from the default
# policy: under one chosen with chrt (for the whole test run) they keep it
under_chosen_policy = pytest.mark.skipif(
    _policy() not in (None, getattr(os, 'SCHED_OTHER', 0)),
    reason='the tests run under a scheduling policy chosen with chrt, '
    'which the close threads keep',
)
