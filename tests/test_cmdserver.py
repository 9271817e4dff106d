# one command server, many commands (47 in make test, over a hundred in
# make test-long): clones, unbundles, updates,
# probes, some failing on a close or interrupted in the middle of writing;
# after each, nothing of the extension is left in the process, and the next
# command behaves as in a fresh one
import hashlib
import json
import os
import shutil
import signal
import struct
import subprocess
import sys
import threading
import time

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
HG = os.path.join(os.path.dirname(sys.executable), 'hg')
SHIM = os.environ.get('SLOWCLOSE_SO')

pytestmark = pytest.mark.skipif(
    not SHIM or not os.path.exists(SHIM) or not os.path.isdir('/proc/self/fd'),
    reason='needs the slow-close model (make unit sets SLOWCLOSE_SO) and '
    '/proc (Linux)',
)

# a file of the poisoned repository, whose close the model makes fail
POISON = 'poisoned-file'
# rounds of commands in the one server: each round clones, applies, updates
# (and some fail, are interrupted, report or probe): 4 rounds (47 commands,
# every kind) in make test, 12 (over a hundred) in make test-long
ROUNDS = int(os.environ.get('CMDSERVER_ROUNDS') or 4)


class CommandServer:
    """``hg serve --cmdserver pipe``, driven over its pipe protocol"""

    def __init__(self, cwd, env, *args):
        self.proc = subprocess.Popen(
            [HG, 'serve', '--cmdserver', 'pipe',
             '--config', 'cmdserver.shutdown-on-interrupt=false'] + list(args),
            cwd=cwd, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        )
        channel, hello = self._read()
        assert channel == b'o' and b'runcommand' in hello, hello

    def _read(self):
        header = self.proc.stdout.read(5)
        if len(header) < 5:
            raise EOFError('the command server went away')
        channel, length = struct.unpack('>cI', header)
        if channel in b'IL':  # it asks for input: there is none
            return channel, length
        return channel, self.proc.stdout.read(length)

    def run(self, *args, interrupt_when=None):
        """(exit code, stdout, stderr) of ``hg ARGS`` in the server, and
        whether it was sent SIGINT: once ``interrupt_when()`` is true (if
        given), which it polls while the command runs"""
        data = b'\0'.join(a.encode() for a in args)
        self.proc.stdin.write(b'runcommand\n' + struct.pack('>I', len(data)))
        self.proc.stdin.write(data)
        self.proc.stdin.flush()
        done = threading.Event()
        sent = []
        poller = None
        if interrupt_when is not None:

            def poll():
                while not done.is_set():
                    if interrupt_when():
                        self.proc.send_signal(signal.SIGINT)
                        sent.append(True)
                        return
                    done.wait(0.001)

            poller = threading.Thread(target=poll)
            poller.start()
        out, err = [], []
        try:
            while True:
                channel, payload = self._read()
                if channel == b'o':
                    out.append(payload)
                elif channel == b'e':
                    err.append(payload)
                elif channel in b'IL':
                    self.proc.stdin.write(struct.pack('>I', 0))
                    self.proc.stdin.flush()
                elif channel == b'r':
                    code = struct.unpack('>i', payload)[0]
                    break
        finally:
            # no signal may reach the next command: the poller is done
            # before this returns (a signal sent once this one had finished
            # reaches a server that ignores it while idle)
            done.set()
            if poller is not None:
                poller.join()
        return code, b''.join(out), b''.join(err), bool(sent)

    def leftovers(self, under):
        """what the extension could have left: threads, closers, wrapped
        seams, and the descriptors open on files below ``under`` (core
        itself keeps the pipes of an interrupted ssh peer open)"""
        code, out, err, _sent = self.run('debugleftovers')
        assert code == 0, err
        state = json.loads(out)
        state['descriptors'] = [
            d for d in state['descriptors'] if str(under) in d.split(' ', 1)[1]
        ]
        return state

    def close(self):
        try:
            self.proc.stdin.close()
            self.proc.wait(timeout=60)
        finally:
            if self.proc.returncode is None:  # it did not exit: kill it
                self.proc.kill()
                self.proc.wait()


def hg(env, cwd, *args):
    subprocess.run([HG] + list(args), cwd=cwd, env=env, check=True,
                   stdout=subprocess.DEVNULL)


@pytest.fixture
def place(tmp_path):
    """repositories and bundles, and the environment the server runs in"""
    hgrc = tmp_path / 'hgrc'
    hgrc.write_text(
        '[ui]\nusername = test <test@example.invalid>\n'
        'ssh = "%s"\n' % os.path.join(HERE, 'dummyssh')
        + 'remotecmd = %s\n' % HG
        + '[extensions]\nbackgroundclose =\ninspect = %s\n'
        % os.path.join(HERE, 'inspectext.py')
        + '[worker]\nbackgroundcloseminfilecount = 0\n'
        '[devel]\nall-warnings = true\n'
    )
    env = dict(os.environ, HGRCPATH=str(hgrc), HGPLAIN='1', LANG='C',
               LC_ALL='C')
    env.pop('LD_PRELOAD', None)
    for name, files in (('src', 60), ('poisoned', 20)):
        subprocess.run(
            [sys.executable, os.path.join(ROOT, 'bench', 'corpus.py'),
             '--hg', HG, '--files', str(files), '--seed', '1',
             str(tmp_path / name)],
            env=env, check=True, stdout=subprocess.DEVNULL,
        )
    (tmp_path / 'poisoned' / POISON).write_text('poison\n')
    hg(env, tmp_path / 'poisoned', 'commit', '-q', '-A', '-m', 'poison')
    for repo in ('src', 'poisoned'):
        hg(env, tmp_path, '-R', repo, 'bundle', '-q', '-a', '--type',
           'none-v2;stream=v2', '%s.v2.hg' % repo)
        hg(env, tmp_path, '-R', repo, 'bundle', '-q', '-a', '--type',
           'zstd-v2', '%s.cg.hg' % repo)
        hg(env, tmp_path, '-R', repo, 'debugcreatestreamclonebundle',
           '%s.v1.hg' % repo)
    (tmp_path / 'probed').mkdir()
    # in the server only: slow closes (so that they go to threads, and so
    # that an interrupt sent once a command began writing lands while it
    # writes) and failing ones for the poisoned file's revlog
    env.update(LD_PRELOAD=SHIM, SLOWCLOSE_US='10000',
               SLOWCLOSE_FAIL_MATCH=POISON)
    return tmp_path, env


def commands():
    """(name, args, expected outcome) of each command, ROUNDS rounds"""
    plan = []
    for i in range(ROUNDS):
        dest = 'd%d' % i
        plan += [
            ('stream clone', ['clone', '-U', '--stream',
                              'ssh://user@dummy/src', dest + '-clone'], 0),
            ('init', ['init', dest + '-v2'], 0),
            ('unbundle stream v2',
             ['-R', dest + '-v2', 'unbundle', 'src.v2.hg'], 0),
            ('init', ['init', dest + '-v1'], 0),
            ('apply stream v1', ['-R', dest + '-v1',
                                 'debugapplystreamclonebundle', 'src.v1.hg'], 0),
            ('init', ['init', dest + '-cg'], 0),
            ('unbundle changegroup',
             ['-R', dest + '-cg', 'unbundle', '-u', 'src.cg.hg'], 0),
            ('update to null', ['-R', dest + '-cg', 'update', 'null'], 0),
            ('update to tip', ['-R', dest + '-cg', 'update', 'tip'], 0),
        ]
        if i % 3 == 0:
            plan += [
                ('init', ['init', dest + '-bad'], 0),
                ('failing close, stream',
                 ['-R', dest + '-bad', 'unbundle', 'poisoned.v2.hg'], 255),
                ('failing close, changegroup',
                 ['-R', dest + '-bad', 'unbundle', 'poisoned.cg.hg'], 255),
            ]
        if i % 4 == 1:
            plan += [
                ('interrupted stream clone',
                 ['clone', '-U', '--stream', 'ssh://user@dummy/src',
                  dest + '-int'], 'interrupt'),
            ]
        if i == 2:
            plan += [
                # with the report: core's util.makedirs is wrapped too
                ('init', ['init', dest + '-report'], 0),
                ('unbundle stream v2, with the report',
                 ['-R', dest + '-report', '--config',
                  'worker.backgroundclosereport=yes', 'unbundle',
                  'src.v2.hg'], 0),
                ('probe', ['debugprobeclose', 'probed'], 0),
                ('interrupted probe', ['debugprobeclose', 'probed'],
                 'interrupt'),
            ]
    return plan


def written(tmp_path, args):
    """a function that is true once the command ``args`` began writing
    the files it is interrupted in the middle of"""
    if args[0] == 'debugprobeclose':
        probed = tmp_path / args[1]
        return lambda: any(probed.iterdir())
    data = tmp_path / args[-1] / '.hg' / 'store' / 'data'
    return data.exists


def tree(top):
    """every file below ``top``, relative, with a hash of its content (of
    its sorted lines for the fncache: a set, written in the order of its
    hashing, which differs from one process to the next)"""
    found = {}
    for root, _dirs, files in os.walk(top):
        for name in files:
            path = os.path.join(root, name)
            relative = os.path.relpath(path, top)
            with open(path, 'rb') as fp:
                content = fp.read()
            if relative == os.path.join('store', 'fncache'):
                content = b''.join(sorted(content.splitlines(True)))
            found[relative] = hashlib.sha256(content).hexdigest()
    return found


def test_many_commands_in_one_server_leave_nothing_behind(place):
    tmp_path, env = place
    server = CommandServer(tmp_path, env)
    try:
        baseline = server.leftovers(tmp_path)
        assert baseline['threads'] == []
        assert baseline['os_threads'] == 1
        assert baseline['closers'] == 0
        assert baseline['wrapped'] == []
        assert baseline['descriptors'] == []
        plan = commands()
        assert len(plan) >= 9 * ROUNDS
        kinds = {what for what, _args, _expected in plan}
        assert {'failing close, stream', 'interrupted stream clone',
                'interrupted probe'} <= kinds
        interrupted = 0
        for number, (what, args, expected) in enumerate(plan):
            if expected == 'interrupt':
                code, out, err, sent = server.run(
                    *args, interrupt_when=written(tmp_path, args)
                )
                assert sent, (number, what, code, err)
                assert b'Traceback' not in err, err
                # interrupted while it writes: each close takes 10 ms, so
                # the command goes on for a good while after it began
                # writing, unless this process was held up meanwhile
                assert code in (0, 255), (number, what, code, err)
                if code == 255:
                    interrupted += 1
                    assert b'interrupted!' in err, err
                    if args[0] == 'debugprobeclose':
                        assert not list((tmp_path / args[1]).iterdir())
                    else:
                        assert not os.path.exists(tmp_path / args[-1]), what
            else:
                code, out, err, _sent = server.run(*args)
                assert code == expected, (number, what, code, err)
                assert b'Traceback' not in err, err
                if expected == 255:
                    assert b'abort: error closing' in err, err
            state = server.leftovers(tmp_path)
            assert state == baseline, (number, what, state)
        # most interrupts, if not all, landed while the command wrote
        assert interrupted >= 1
        # the next command behaves as in a fresh process: the clones verify,
        # and the last one, made after failures and interrupts, holds what a
        # clone made by a fresh process holds, file for file
        for i in range(ROUNDS):
            code, out, err, _sent = server.run(
                '-R', 'd%d-clone' % i, 'verify', '-q')
            assert code == 0, err
        subprocess.run(
            [HG, 'clone', '-U', '--stream', 'ssh://user@dummy/src', 'fresh'],
            cwd=tmp_path, env=env, check=True, stdout=subprocess.DEVNULL,
        )
        ours = tree(tmp_path / ('d%d-clone' % (ROUNDS - 1)) / '.hg')
        theirs = tree(tmp_path / 'fresh' / '.hg')
        assert len(ours) > 60
        assert ours == theirs
    finally:
        server.close()
        for leftover in tmp_path.glob('d*'):
            shutil.rmtree(leftover, ignore_errors=True)


def test_applies_interrupted_on_hung_closes_leave_nothing_once_they_return(
    place
):
    # a hard-mounted NFS server gone away: in each of 20 applies one close
    # hangs, Ctrl-C ends the apply, and the close is left to its thread.
    # Once the server is back and the closes return, every thread the
    # extension started has exited, and every descriptor is closed
    tmp_path, env = place
    hung = sorted(
        name for _root, _dirs, names in os.walk(tmp_path / 'src' / '.hg'
                                                / 'store' / 'data')
        for name in names
    )[-1]
    back = tmp_path / 'server-back'
    env = dict(env, SLOWCLOSE_US='1000', SLOWCLOSE_HANG_MATCH=hung,
               SLOWCLOSE_HANG_UNTIL=str(back))
    del env['SLOWCLOSE_FAIL_MATCH']
    stacks = tmp_path / 'stacks.txt'
    server = CommandServer(tmp_path, env, '--config', 'inspect.grace=0.2',
                           '--config', 'inspect.stacks=%s' % stacks)
    try:
        baseline = server.leftovers(tmp_path)
        assert baseline['os_threads'] == 1
        for number in range(20):
            dest = 'hung%d' % number
            code, out, err, _sent = server.run('init', dest)
            assert code == 0, err
            # the interrupt comes once the close hangs, on a thread (the
            # shim makes server-back.hung as it begins to hang): before
            # that, the descriptor is the applying thread's, whose close on
            # the failing path no interrupt could end
            hanging = tmp_path / 'server-back.hung'
            if hanging.exists():
                hanging.unlink()

            # should a close hang where no interrupt can end it, the test
            # fails instead of hanging: the server comes back in a minute,
            # once it has said where each of its threads waits
            def server_back():
                server.proc.send_signal(signal.SIGUSR2)
                time.sleep(1)
                back.touch()

            watchdog = threading.Timer(60, server_back)
            watchdog.start()
            try:
                code, out, err, sent = server.run(
                    '-R', dest, 'unbundle', 'src.v2.hg',
                    '--config', 'worker.backgroundclose=yes',
                    interrupt_when=hanging.exists,
                )
            finally:
                watchdog.cancel()
                # one that fired already touches back before the assertion
                watchdog.join()
            assert not back.exists(), (
                'a close hung where Ctrl-C cannot end it, in apply %d:\n%s\n%s'
                % (number, err.decode(), stacks.read_text()))
            assert sent and code == 255, (number, code, err)
            assert b'interrupted!' in err, err
            assert b'Traceback' not in err, err
        # each apply left its hung close to a thread
        assert server.leftovers(tmp_path)['os_threads'] > 1
        back.touch()
        state = None
        for _ in range(200):
            state = server.leftovers(tmp_path)
            if state == baseline:
                break
            time.sleep(0.05)
        assert state == baseline
    finally:
        back.touch()
        server.close()
