#!/usr/bin/env python3
# sshfs.py - a real network file system on loopback: sshfs over OpenSSH
#
# Copyright 2026 hg-backgroundclose contributors
#
# This software may be used and distributed according to the terms of the
# GNU General Public License version 2 or any later version.
"""Mount a directory over sshfs (FUSE) from an OpenSSH server on 127.0.0.1.

The server runs from a work directory with keys generated there, on a free
port, and serves only the directory asked for.  ``mounted()`` unmounts and
stops the server on the way out, whatever ends the block (an exception,
Ctrl-C, SIGTERM).

As a command, ``sshfs.py --check`` prints why a mount is not possible here
(and exits 1), or nothing; ``sshfs.py --install`` installs sshfs and
openssh-server with apt-get where they are missing (root only);
``sshfs.py --serve SERVED MOUNTPOINT WORK [SECONDS]`` holds a mount until
it is sent SIGTERM (the tests' way).
"""

import contextlib
import os
import pwd
import shutil
import signal
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import common  # noqa: E402
import fusemount  # noqa: E402

SSHD = '/usr/sbin/sshd'
PACKAGES = {'sshfs': 'sshfs', SSHD: 'openssh-server'}


def missing_packages():
    return sorted({
        package for program, package in PACKAGES.items()
        if not shutil.which(program)
    })


def unavailable():
    """why no sshfs mount can be made here, or None"""
    if not os.path.exists('/dev/fuse'):
        return 'no /dev/fuse'
    if os.geteuid() != 0:
        return 'not root (the server is a system sshd, started here)'
    if not os.access('/dev/fuse', os.R_OK | os.W_OK):
        return '/dev/fuse is not usable by this user'
    missing = missing_packages()
    if missing:
        return 'not installed: %s' % ', '.join(missing)
    return None


def install():
    """install what is missing with apt-get; False where that can't be"""
    missing = missing_packages()
    if not missing:
        return True
    return common.apt_install(missing) and not missing_packages()


@contextlib.contextmanager
def mounted(served, mountpoint, work, options=()):
    """``served`` (a local directory) mounted at ``mountpoint`` through
    sshfs and an sshd on 127.0.0.1; ``work`` holds its keys and logs.

    Yields the mount point.  SIGTERM is turned into an exception while the
    block runs, so that it too unmounts and stops the server.
    """
    why = unavailable()
    if why:
        raise RuntimeError('no sshfs mount here: %s' % why)
    # sshd runs from / and ssh from elsewhere: absolute paths only
    served, mountpoint, work = (
        os.path.abspath(p) for p in (served, mountpoint, work))
    os.makedirs(work, exist_ok=True)
    os.makedirs(mountpoint, exist_ok=True)
    hostkey = os.path.join(work, 'host_key')
    userkey = os.path.join(work, 'user_key')
    for key in (hostkey, userkey):
        if not os.path.exists(key):
            subprocess.run(['ssh-keygen', '-q', '-t', 'ed25519', '-N', '',
                            '-f', key], check=True)
    authorized = os.path.join(work, 'authorized_keys')
    shutil.copy(userkey + '.pub', authorized)
    os.chmod(authorized, 0o600)
    pidfile = os.path.join(work, 'sshd.pid')
    config = os.path.join(work, 'sshd_config')
    port = common.freeport()
    with open(config, 'w') as fp:
        fp.write('\n'.join([
            'Port %d' % port,
            'ListenAddress 127.0.0.1',
            'HostKey %s' % hostkey,
            'PidFile %s' % pidfile,
            'AuthorizedKeysFile %s' % authorized,
            'PasswordAuthentication no',
            'KbdInteractiveAuthentication no',
            'PermitRootLogin prohibit-password',
            # the work directory may be world-writable (/tmp)
            'StrictModes no',
            'UsePAM no',
            'Subsystem sftp internal-sftp',
            '',
        ]))
    os.makedirs('/run/sshd', exist_ok=True)  # its privilege separation dir
    previous = signal.signal(signal.SIGTERM, fusemount.on_sigterm)
    pid = None
    try:
        subprocess.run([SSHD, '-f', config, '-E',
                        os.path.join(work, 'sshd.log')], check=True)
        if not fusemount.wait_for(lambda: os.path.exists(pidfile), 10):
            raise RuntimeError('sshd did not start (see %s)'
                               % os.path.join(work, 'sshd.log'))
        with open(pidfile) as fp:
            pid = int(fp.read())
        user = pwd.getpwuid(os.geteuid()).pw_name
        opts = ['IdentityFile=%s' % userkey, 'StrictHostKeyChecking=no',
                'UserKnownHostsFile=/dev/null', 'BatchMode=yes',
                'LogLevel=ERROR'] + list(options)
        subprocess.run(['sshfs', '-p', str(port), '-o', ','.join(opts),
                        '%s@127.0.0.1:%s' % (user, served),
                        mountpoint], check=True)
        if not fusemount.wait_for(lambda: os.path.ismount(mountpoint), 10):
            raise RuntimeError('sshfs did not mount %s' % mountpoint)
        yield mountpoint
    finally:
        try:
            fusemount.unmount(mountpoint)
        finally:
            if pid is not None:
                fusemount.stop(pid)
            signal.signal(signal.SIGTERM, previous)


def main(argv):
    return fusemount.command(argv, 'sshfs.py', unavailable, install, mounted)


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
