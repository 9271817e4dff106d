# changegroup - the seam of changegroup application
#
# Copyright 2026 hg-backgroundclose contributors
#
# This software may be used and distributed according to the terms of the
# GNU General Public License version 2 or any later version.
"""The changegroup seam: the file revlogs and manifests a changegroup's
steps write (revlogs.py), and the file revlogs applied on threads where
each waits on round trips (filelogs.py).  Imports the engine and shared/,
no other seam.
"""
