# one command server, over a hundred commands: clones, unbundles, updates,
# some failing on a close or interrupted; after each, nothing of the
# extension is left in the process, and the next command behaves as in a
# fresh one
import json
import os
import shutil
import signal
import struct
import subprocess
import sys
import threading

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


class CommandServer:
    """``hg serve --cmdserver pipe``, driven over its pipe protocol"""

    def __init__(self, cwd, env):
        self.proc = subprocess.Popen(
            [HG, 'serve', '--cmdserver', 'pipe',
             '--config', 'cmdserver.shutdown-on-interrupt=false'],
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

    def run(self, *args, interrupt_after=None):
        """(exit code, stdout, stderr) of ``hg ARGS`` in the server"""
        data = b'\0'.join(a.encode() for a in args)
        self.proc.stdin.write(b'runcommand\n' + struct.pack('>I', len(data)))
        self.proc.stdin.write(data)
        self.proc.stdin.flush()
        timer = None
        if interrupt_after is not None:
            timer = threading.Timer(
                interrupt_after, self.proc.send_signal, (signal.SIGINT,)
            )
            timer.start()
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
                    return code, b''.join(out), b''.join(err)
        finally:
            if timer is not None:
                timer.cancel()

    def leftovers(self, under):
        """what the extension could have left: threads, closers, wrapped
        seams, and the descriptors open on files below ``under`` (core
        itself keeps the pipes of an interrupted ssh peer open)"""
        code, out, err = self.run('debugleftovers')
        assert code == 0, err
        state = json.loads(out)
        state['descriptors'] = [
            d for d in state['descriptors'] if str(under) in d.split(' ', 1)[1]
        ]
        return state

    def close(self):
        self.proc.stdin.close()
        self.proc.wait(timeout=60)


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
    # in the server only: slow closes (so that they go to threads) and
    # failing ones for the poisoned file's revlog
    env.update(LD_PRELOAD=SHIM, SLOWCLOSE_US='300',
               SLOWCLOSE_FAIL_MATCH=POISON)
    return tmp_path, env


def commands():
    """(name, args, expected outcome) of each command, over a hundred"""
    plan = []
    for i in range(12):
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
    return plan


def test_a_hundred_commands_leave_nothing_behind(place):
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
        assert len(plan) >= 100
        for number, (what, args, expected) in enumerate(plan):
            if expected == 'interrupt':
                code, out, err = server.run(*args, interrupt_after=0.3)
                # interrupted, or done before the signal came
                assert code in (0, 255), (what, code, err)
                if code == 255:
                    assert b'interrupted!' in err, err
                    assert not os.path.exists(tmp_path / args[-1]), what
            else:
                code, out, err = server.run(*args)
                assert code == expected, (number, what, code, err)
                assert b'Traceback' not in err, err
                if expected == 255:
                    assert b'abort: error closing' in err, err
            state = server.leftovers(tmp_path)
            assert state == baseline, (number, what, state)
        # the next command behaves as in a fresh process: the clones verify
        # and hold what a clone in a fresh process holds
        for i in range(12):
            code, out, err = server.run('-R', 'd%d-clone' % i, 'verify', '-q')
            assert code == 0, err
        fresh = subprocess.run(
            [HG, 'clone', '-U', '--stream', 'ssh://user@dummy/src', 'fresh'],
            cwd=tmp_path, env=env, check=True, stdout=subprocess.DEVNULL,
        )
        assert fresh.returncode == 0
        ours = sorted(os.listdir(tmp_path / 'd0-clone' / '.hg' / 'store'))
        theirs = sorted(os.listdir(tmp_path / 'fresh' / '.hg' / 'store'))
        assert ours == theirs
    finally:
        server.close()
        for leftover in tmp_path.glob('d*'):
            shutil.rmtree(leftover, ignore_errors=True)
