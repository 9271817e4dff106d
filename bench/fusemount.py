# fusemount.py - what the FUSE mounts of the tests and benchmarks share
#
# Copyright 2026 hg-backgroundclose contributors
#
# This software may be used and distributed according to the terms of the
# GNU General Public License version 2 or any later version.
"""Holding a FUSE mount for a test, and taking it down whatever ends it.

``sshfs.py`` (sshfs over an OpenSSH server on 127.0.0.1), ``caseless.py``
(a case-insensitive file system of our own) and ``rttfs.py`` (round trips
modelled) each give a ``mounted()`` context manager; ``command()`` turns
one into the ``--check | --install | --serve`` command line the tests use,
and ``program_mounted()`` holds the mount of a FUSE program of our own.
"""

import contextlib
import os
import re
import signal
import subprocess
import sys
import time


class Terminated(Exception):
    """SIGTERM arrived while a mount was held"""


def on_sigterm(signum, frame):
    raise Terminated()


def exit_with(main):
    """exit with ``main()``'s status; interrupted or sent SIGTERM (its
    servers stopped, its mounts and tmpfs undone on the way out), with
    the shell's status for the signal and no result written"""
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        sys.stderr.write('interrupted: no result written\n')
        sys.exit(130)
    except Terminated:
        sys.stderr.write('terminated: no result written\n')
        sys.exit(143)


@contextlib.contextmanager
def program_mounted(command, mountpoint, log, name):
    """``command``, a FUSE program that mounts ``mountpoint`` in the
    foreground, run as this process's child, its output to ``log``:
    yields its ``Popen`` once the mount is there; on the way out,
    whatever ends the block (SIGTERM too), unmounted and the program
    ended"""
    previous = signal.signal(signal.SIGTERM, on_sigterm)
    proc = None
    try:
        with open(log, 'w') as fp:
            proc = subprocess.Popen(command, stdout=fp, stderr=fp)
        if not wait_for(lambda: os.path.ismount(mountpoint), 10):
            raise RuntimeError('%s did not mount %s (see %s)'
                               % (name, mountpoint, log))
        yield proc
    finally:
        try:
            unmount(mountpoint)
        finally:
            if proc is not None:
                # unmounted, it exits by itself; else it is told to
                proc.terminate()
                try:
                    proc.wait(10)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
            signal.signal(signal.SIGTERM, previous)


def wait_for(predicate, seconds):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return predicate()


def is_mounted(mountpoint):
    """whether a file system is mounted at ``mountpoint``: one whose FUSE
    server died too, which ``os.path.ismount`` cannot see (the mount
    point cannot be stat'ed then), from the kernel's table"""
    if os.path.ismount(mountpoint):
        return True
    target = os.path.realpath(mountpoint)
    try:
        with open('/proc/self/mounts') as fp:
            table = fp.read()
    except OSError:
        return False
    for line in table.splitlines():
        fields = line.split()
        # the table writes a space in a path as \040
        if len(fields) > 1 and re.sub(
            r'\\([0-7]{3})', lambda m: chr(int(m.group(1), 8)), fields[1]
        ) == target:
            return True
    return False


def unmount(mountpoint):
    for cmd in (['fusermount', '-u', mountpoint],
                ['fusermount', '-u', '-z', mountpoint],
                ['umount', '-l', mountpoint]):
        if not is_mounted(mountpoint):
            return
        subprocess.call(cmd, stderr=subprocess.DEVNULL)
        wait_for(lambda: not is_mounted(mountpoint), 5)


def stop(pid):
    """SIGTERM to ``pid`` (not our child), SIGKILL if it lingers"""
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    for _ in range(100):
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.05)
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def serve(mounted, source, mountpoint, work, seconds):
    """``mounted(source, mountpoint, work)``, said in ``work``/ready, held
    until SIGTERM or SIGINT, or ``seconds`` at most (a test that dies
    leaves no mount for long)"""
    try:
        with mounted(source, mountpoint, work):
            with open(os.path.join(work, 'ready'), 'w') as fp:
                fp.write('%d\n' % os.getpid())
            time.sleep(seconds)
    except (Terminated, KeyboardInterrupt):
        pass
    return 0


def command(argv, name, unavailable, install, mounted):
    """the command line of ``name``: ``--check`` prints why no mount can be
    made here (exit 1), or nothing; ``--install`` installs what is missing;
    ``--serve SOURCE MOUNTPOINT WORK [SECONDS]`` holds a mount"""
    if len(argv) in (4, 5) and argv[0] == '--serve':
        seconds = float(argv[4]) if len(argv) == 5 else 600
        return serve(mounted, argv[1], argv[2], argv[3], seconds)
    if argv == ['--check']:
        why = unavailable()
        if why:
            print(why)
            return 1
        return 0
    if argv == ['--install']:
        return 0 if install() else 1
    sys.stderr.write('usage: %s --check | --install | '
                     '--serve SOURCE MOUNTPOINT WORK [SECONDS]\n' % name)
    return 2
