# checkout - the seam of working-copy updates
#
# Copyright 2026 hg-backgroundclose contributors
#
# This software may be used and distributed according to the terms of the
# GNU General Public License version 2 or any later version.
"""The checkout seam: the files an update gets, written whole (core's
``batchget``: batchget.py), one summary of a checkout (core's
``applyupdates``: summary.py), core's update workers given whole
directories (workers.py), and the closer behind ``vfs.backgroundclosing()``
outside a stream apply (filecloser.py).  Imports the engine and shared/,
no other seam.
"""
