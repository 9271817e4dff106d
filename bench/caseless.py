#!/usr/bin/env python3
# caseless.py - a case-insensitive file system to test on: caseless.c
#
# Copyright 2026 hg-backgroundclose contributors
#
# This software may be used and distributed according to the terms of the
# GNU General Public License version 2 or any later version.
"""Mount a directory through ``caseless`` (bench/caseless.c), a FUSE file
system that finds a name whatever its case and keeps the case a name was
made with, as NTFS and APFS do.  This kernel has neither vfat nor ext4's
casefold, and Debian has no ciopfs: the tests build their own.

As a command, ``caseless.py --check`` prints why no such mount can be made
here (and exits 1), or nothing; ``caseless.py --install`` installs the FUSE
headers and pkg-config with apt-get where they are missing (root only);
``caseless.py --serve BACKING MOUNTPOINT WORK [SECONDS]`` builds the file
system into WORK, mounts it, writes WORK/ready and holds the mount until it
is sent SIGTERM, or SECONDS at most.
"""

import contextlib
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import common  # noqa: E402
import fusemount  # noqa: E402

SOURCE = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'caseless.c')
PACKAGES = ['libfuse3-dev', 'pkg-config']


def fuse_flags():
    """the compiler flags for libfuse 3, or None where it is not installed"""
    if not shutil.which('pkg-config'):
        return None
    found = subprocess.run(['pkg-config', '--cflags', '--libs', 'fuse3'],
                           stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                           universal_newlines=True)
    return found.stdout.split() if found.returncode == 0 else None


def unavailable():
    """why no caseless mount can be made here, or None"""
    if not os.path.exists('/dev/fuse'):
        return 'no /dev/fuse'
    if os.geteuid() != 0:
        return 'not root (a FUSE mount with its inode numbers passed through)'
    if not shutil.which('cc'):
        return 'no C compiler (cc)'
    if fuse_flags() is None:
        return 'not installed: %s' % ', '.join(PACKAGES)
    return None


def install():
    """install what is missing with apt-get; False where that can't be"""
    return fuse_flags() is not None or (
        common.apt_install(PACKAGES) and fuse_flags() is not None)


def build(work):
    """compile caseless.c into ``work``: the program's path"""
    program = os.path.join(work, 'caseless')
    subprocess.run(['cc', '-O2', '-Wall', '-o', program, SOURCE]
                   + fuse_flags(), check=True)
    return program


@contextlib.contextmanager
def mounted(backing, mountpoint, work):
    """``backing`` (a local directory) mounted at ``mountpoint`` through
    caseless, built into ``work``; unmounted on the way out, SIGTERM
    included"""
    why = unavailable()
    if why:
        raise RuntimeError('no caseless mount here: %s' % why)
    backing, mountpoint, work = (
        os.path.abspath(p) for p in (backing, mountpoint, work))
    os.makedirs(work, exist_ok=True)
    os.makedirs(mountpoint, exist_ok=True)
    program = build(work)
    # -f: in the foreground, as this process's child; -s: one request at
    # a time, which the case lookups need no lock for
    with fusemount.program_mounted(
            [program, backing, mountpoint, '-f', '-s'], mountpoint,
            os.path.join(work, 'caseless.log'), 'caseless'):
        yield mountpoint


def main(argv):
    return fusemount.command(argv, 'caseless.py', unavailable, install,
                             mounted)


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
