#!/usr/bin/env python3
# rttfs.py - a network file system's round trips to test on: rttfs.c
#
# Copyright 2026 hg-backgroundclose contributors
#
# This software may be used and distributed according to the terms of the
# GNU General Public License version 2 or any later version.
"""Mount a directory through ``rttfs`` (bench/rttfs.c), a FUSE pass-through
whose every request waits a set round trip before it is served: a network
home directory where the server is cheap and each request waits for the
network.  Many requests wait at once, as many as their clients send (up to
``THREADS``), so what a command costs there is its requests times the round
trip divided by how many it keeps in flight (Little's law).

The kernel caches what FUSE answers for libfuse's default second (names,
attributes; no negative lookups), as an NFS client caches attributes for
a few seconds.

``mounted()`` yields a ``Mount``, whose ``counters()`` reads the requests
served so far.  As a command, ``rttfs.py --check`` prints why no such
mount can be made here (and exits 1), or nothing; ``rttfs.py --install``
installs the FUSE headers and pkg-config with apt-get where they are
missing (root only); ``rttfs.py --serve BACKING MOUNTPOINT WORK [SECONDS]``
holds a mount at ``RTTFS_US`` microseconds (default 1000) until it is sent
SIGTERM, or SECONDS at most.
"""

import contextlib
import os
import struct
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import caseless  # noqa: E402  (the same FUSE headers and compiler)
import fusemount  # noqa: E402

SOURCE = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'rttfs.c')
# the counters of the stats file, in rttfs.c's order
COUNTERS = (
    'requests', 'busy_ns', 'in_flight', 'peak',
    'getattr', 'mkdir', 'create', 'open', 'read', 'write', 'flush',
    'release', 'unlink', 'rmdir', 'rename', 'readdir', 'other',
)
# the most requests served at once: more than any client here sends
THREADS = 256

unavailable = caseless.unavailable
install = caseless.install


def build(work):
    """compile rttfs.c into ``work``: the program's path"""
    program = os.path.join(work, 'rttfs')
    subprocess.run(['cc', '-O2', '-Wall', '-o', program, SOURCE]
                   + caseless.fuse_flags(), check=True)
    return program


class Mount:
    """a mounted rttfs: its mount point, round trip and counters"""

    def __init__(self, mountpoint, roundtrip_us, statsfile, pid=None):
        self.mountpoint = mountpoint
        self.roundtrip_us = roundtrip_us
        self.statsfile = statsfile
        self.pid = pid  # rttfs's

    def server_cpu(self):
        """the CPU seconds (user and system) rttfs used so far, or None
        where that can't be read (no /proc): the model's server shares
        this machine's cores with the commands it serves"""
        try:
            with open('/proc/%d/stat' % self.pid) as fp:
                fields = fp.read().rpartition(')')[2].split()
        except (OSError, TypeError):
            return None
        # utime and stime: the 14th and 15th fields, counted from the pid
        return (int(fields[11]) + int(fields[12])) / os.sysconf('SC_CLK_TCK')

    def counters(self):
        """the counters now: name -> count (busy_ns: nanoseconds)"""
        with open(self.statsfile, 'rb') as fp:
            data = fp.read(8 * len(COUNTERS))
        return dict(zip(COUNTERS, struct.unpack('=%dQ' % len(COUNTERS),
                                                data)))

    def reset_peak(self):
        """the peak counter started again from what is in flight now"""
        with open(self.statsfile, 'r+b') as fp:
            fp.seek(8 * COUNTERS.index('peak'))
            fp.write(struct.pack('=Q', 0))


def difference(after, before):
    """what was served between two ``counters()`` (peak: the later one's,
    which the caller resets by reading it fresh each time)"""
    return {name: after[name] - before[name] if name != 'peak'
            else after[name] for name in COUNTERS}


@contextlib.contextmanager
def mounted(backing, mountpoint, work, roundtrip_us=None):
    """``backing`` (a local directory) mounted at ``mountpoint`` through
    rttfs, built into ``work``, each request waiting ``roundtrip_us``
    microseconds (default: ``RTTFS_US``, else 1000); unmounted on the way
    out, SIGTERM included.  Yields a ``Mount``."""
    why = unavailable()
    if why:
        raise RuntimeError('no rttfs mount here: %s' % why)
    if roundtrip_us is None:
        roundtrip_us = int(os.environ.get('RTTFS_US', '1000'))
    backing, mountpoint, work = (
        os.path.abspath(p) for p in (backing, mountpoint, work))
    os.makedirs(work, exist_ok=True)
    os.makedirs(mountpoint, exist_ok=True)
    program = build(work)
    statsfile = os.path.join(work, 'rttfs.stats')
    # -f: in the foreground, as this process's child; threads enough that
    # no request waits for one
    with fusemount.program_mounted(
            [program, backing, mountpoint, str(roundtrip_us), statsfile,
             '-f', '-o', 'max_threads=%d' % THREADS], mountpoint,
            os.path.join(work, 'rttfs.log'), 'rttfs') as proc:
        yield Mount(mountpoint, roundtrip_us, statsfile, proc.pid)


def main(argv):
    return fusemount.command(argv, 'rttfs.py', unavailable, install, mounted)


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
