# withsigint.py - run a command with SIGINT handled by default
#
# Copyright 2026 hg-backgroundclose contributors
#
# This software may be used and distributed according to the terms of the
# GNU General Public License version 2 or any later version.
"""withsigint.py COMMAND [ARG...]: exec COMMAND with SIGINT back to its
default disposition.  A background job of a non-interactive shell starts
with SIGINT ignored, and Python then installs no KeyboardInterrupt handler;
a test that sends SIGINT to such a job would test nothing."""

import os
import signal
import sys

signal.signal(signal.SIGINT, signal.SIG_DFL)
os.execvp(sys.argv[1], sys.argv[1:])
