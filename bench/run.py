#!/usr/bin/env python3
# run.py - the side-by-side benchmark of hg-backgroundclose
#
# Copyright 2026 hg-backgroundclose contributors
#
# This software may be used and distributed according to the terms of the
# GNU General Public License version 2 or any later version.
"""Time stream applies under modelled close latencies, core against the
extension, with tar and git as references, in one run.

Every configuration is run once per round and the rounds repeat, so that
slow drifts of a shared machine hit every configuration alike; each round
starts the configurations one further on (core first, then second, ...),
so that no configuration always runs right after the same one; the report
gives medians.  `make bench` runs the quick size, `make bench-full` a
mozilla-central-sized repository.
"""

import argparse
import contextlib
import json
import os
import platform
import shlex
import shutil
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import common  # noqa: E402
import fusemount  # noqa: E402
import sshfs  # noqa: E402

# name -> hg arguments; the extension is enabled in the benchmark's hgrc
CONFIGS = {
    'core': ['--config', 'extensions.backgroundclose=!'],
    'core-bgclose': [
        '--config', 'extensions.backgroundclose=!',
        '--config', 'worker.backgroundclose=yes',
    ],
    'core-parallel': [
        '--config', 'extensions.backgroundclose=!',
        '--config', 'worker.parallel-stream-bundle-processing=yes',
    ],
    'ext-adaptive': [],
    # closes inline, and so no thread at all (writers neither, unless
    # asked for): the same as ext-plain since issue 56
    'ext-inline': ['--config', 'worker.backgroundclose=no'],
    # no writer threads: closes alone on threads (adaptive), or nothing on
    # threads at all, what the extension's seams cost by themselves
    'ext-nowriters': ['--config', 'worker.backgroundclosewrites=no'],
    'ext-plain': [
        '--config', 'worker.backgroundclose=no',
        '--config', 'worker.backgroundclosewrites=no',
    ],
    'ext-forced': ['--config', 'worker.backgroundclose=yes'],
    # the extension without its C close threads: what Python threads cost
    'ext-python': ['--config', 'worker.backgroundclosenative=no'],
}

OPERATIONS = {
    'v1-apply': 'hg debugapplystreamclonebundle of a packed1 (v1) bundle',
    'v1-ssh': 'hg clone -U --stream over ssh from a server that offers '
              'only v1 (server.bundle2.stream=no)',
    'v2-ssh': 'hg clone -U --stream over ssh (v2)',
    'clone-ssh': 'hg clone --stream over ssh (v2), then its checkout of tip '
                 '(forked workers)',
    'v2-http': 'hg clone -U --stream over http (v2)',
    'v2-unbundle': 'hg unbundle of a none-v2;stream=v2 bundle',
    'v3-unbundle': 'hg unbundle of a none-v2;stream=v3-exp bundle',
    'clone-bundle': 'hg clone -U over http, of a stream v2 clone bundle '
                    'its server advertises',
    'cg-unbundle': 'hg unbundle of a zstd-v2 changegroup bundle (all revisions)',
    'update': 'hg update from the null revision to tip (forked workers)',
}

REFERENCES = {
    'tar-x': 'tar -x of the same store files',
    'git-checkout-1': 'git checkout of the same tree, checkout.workers=1',
    'git-checkout-32': 'git checkout of the same tree, checkout.workers=32',
}

LATENCIES = ['0', '100', '700', '2000', 'tail']
# what `make bench` runs by default: the rows that say whether the
# extension pays (at 0 us), what it saves (700 us, the close latency of the
# seeds), and how it copes with a mix; every stream format, a changegroup
# and an update; core, core's parallel v2 writers, the extension with its C
# lane and with Python threads (what Windows and macOS get).  `--grid all`
# runs every row above.
QUICK = {
    'latencies': ['0', '700', 'tail'],
    'operations': ['v1-apply', 'v2-ssh', 'v3-unbundle', 'cg-unbundle',
                   'update'],
    'configs': ['core', 'core-parallel', 'ext-adaptive', 'ext-python'],
}

# combinations that would only measure core again: stream v1 has no
# parallel writers
NOT_APPLICABLE = {
    ('v1-apply', 'core-parallel'),
    ('v1-ssh', 'core-parallel'),
    ('v3-unbundle', 'core-parallel'),
    ('cg-unbundle', 'core-parallel'),
    ('update', 'core-parallel'),
}


class Bench:
    def __init__(self, args, work):
        self.args = args
        self.work = work
        self.hg = os.path.abspath(args.hg)
        self.shim = os.path.abspath(args.shim)
        self.env = common.hg_env(work)
        # where the measured commands write: the work directory (tmpfs),
        # or a real file system mounted in it (--fs)
        self.target = work
        self.dest = os.path.join(work, 'dest')
        self.pids = []  # servers to stop
        self.ports = {}  # operation -> the port of its server
        # how an hg command is measured: (seconds, peak RSS in KB); and
        # arguments given to every measured hg command (countcommands.py
        # counts instead, with a setting of its own)
        self.measure = self.timed
        # the CPU seconds of the last command measured, where known
        self.lastcpu = None
        self.extra = []
        # corpus -> its store's file count (where an onset begins)
        self.storefiles = {}

    def timed(self, cmd, env):
        seconds, rss, _out, self.lastcpu = common.timed(cmd, env)
        return seconds, rss

    # preparation ---------------------------------------------------------

    def hgrun(self, *args, **kwargs):
        subprocess.run(
            [self.hg] + list(args), env=self.env, check=True,
            stdout=subprocess.DEVNULL, **kwargs
        )

    def prepare(self, files, name='src', operations=()):
        src = os.path.join(self.work, name)
        common.build_corpus(self.hg, src, files, self.args.seed, self.env,
                            self.args.size_scale)
        self.hgrun('-R', src, 'debugcreatestreamclonebundle', src + '.v1.hg')
        self.hgrun('-R', src, 'bundle', '-q', '-a', '--type',
                   'none-v2;stream=v2', src + '.v2.hg')
        self.hgrun('-R', src, 'bundle', '-q', '-a', '--type', 'zstd-v2',
                   src + '.cg.hg')
        if 'v3-unbundle' in operations:  # not in every release
            self.hgrun('-R', src, 'bundle', '-q', '-a', '--config',
                       'experimental.stream-v3=yes', '--type',
                       'none-v2;stream=v3-exp', src + '.v3.hg')
        return src

    def prepare_update(self, src):
        # a repository with the whole store and an empty working copy,
        # updated to tip and back to null by each run
        repo = os.path.join(self.target, 'update')
        if not os.path.exists(repo):
            self.hgrun('clone', '-q', '-U', src, repo)
        return repo

    def prepare_references(self, src):
        # the store as a tarball, and the tree as a git repository
        subprocess.run(['tar', '-cf', src + '.store.tar', '-C',
                        os.path.join(src, '.hg'), 'store'], check=True)
        git = src + '.git'
        gitenv = dict(self.env, GIT_AUTHOR_NAME='bench',
                      GIT_AUTHOR_EMAIL='bench@example.invalid',
                      GIT_COMMITTER_NAME='bench',
                      GIT_COMMITTER_EMAIL='bench@example.invalid')
        subprocess.run(['git', 'init', '-q', git], check=True, env=gitenv)
        self.hgrun('-R', src, 'archive', '-t', 'files', '--no-decode',
                   os.path.join(git, 'tree'))
        subprocess.run(['git', '-C', git, 'add', '-A'], check=True, env=gitenv)
        subprocess.run(['git', '-C', git, 'commit', '-q', '-m', 'tree'],
                       check=True, env=gitenv)
        self.gitenv = gitenv

    def start_server(self, src, *config):
        """hg serve of ``src`` on a free port: the port"""
        port = common.freeport()
        pidfile = os.path.join(self.work, 'hg-%d.pid' % port)
        self.hgrun('serve', '-R', src, '-a', '127.0.0.1', '-p', str(port),
                   '-d', '--pid-file', pidfile, *config)
        with open(pidfile) as fp:
            self.pids.append(int(fp.read()))
        return port

    def start_clone_bundle_host(self, src):
        """a copy of ``src`` that advertises its stream v2 bundle as a
        clone bundle, served over http by bench/bundleserver.py: the port
        to clone from"""
        host = os.path.join(self.work, 'cbhost')
        os.makedirs(host)
        shutil.copy(src + '.v2.hg', os.path.join(host, 'stream-v2.hg'))
        portfile = os.path.join(host, 'port')
        server = subprocess.Popen(
            [sys.executable, os.path.join(common.HERE, 'bundleserver.py'),
             host, portfile],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        self.pids.append(server.pid)
        for _ in range(100):
            if os.path.exists(portfile):
                break
            time.sleep(0.1)
        with open(portfile) as fp:
            bundleport = int(fp.read())
        served = os.path.join(self.work, 'cbsrc')
        self.hgrun('clone', '-q', '-U', src, served)
        spec = subprocess.run(
            [self.hg, 'debugbundle', '--spec', src + '.v2.hg'],
            env=self.env, check=True, stdout=subprocess.PIPE,
        ).stdout.decode().strip()
        with open(os.path.join(served, '.hg', 'clonebundles.manifest'),
                  'w') as fp:
            fp.write('http://127.0.0.1:%d/stream-v2.hg BUNDLESPEC=%s\n'
                     % (bundleport, spec))
        return self.start_server(
            served, '--config', 'extensions.clonebundles=')

    def v1_server(self):
        """an hg whose server side offers only the legacy stream (v1)"""
        path = os.path.join(self.work, 'hg-v1-server')
        if not os.path.exists(path):
            # serve --stdio refuses --config: the setting comes from a
            # configuration file added to the server's own
            rc = path + '.rc'
            with open(rc, 'w') as fp:
                fp.write('[server]\nbundle2.stream = no\n')
            with open(path, 'w') as fp:
                fp.write('#!/bin/sh\nHGRCPATH="${HGRCPATH:+$HGRCPATH:}%s" '
                         'exec %s "$@"\n'
                         % (shlex.quote(rc), shlex.quote(self.hg)))
            os.chmod(path, 0o755)
        return path

    def stop_servers(self):
        while self.pids:
            try:
                os.kill(self.pids.pop(), 15)
            except ProcessLookupError:
                pass

    # one measurement -----------------------------------------------------

    def clean(self):
        if os.path.exists(self.dest):
            shutil.rmtree(self.dest)

    def run_hg(self, op, config, latency, src):
        self.clean()
        env = common.latency_env(self.env, self.shim, latency,
                                 self.storefiles.get(src))
        extra = CONFIGS[config] + self.extra
        hg = self.hg
        if op == 'update':
            repo = self.prepare_update(src)
            self.hgrun('-R', repo, 'update', '-q', 'null')
            cmd = [hg, '-R', repo] + extra + ['update', '-q', 'tip']
            return self.measure(cmd, env)
        if op == 'cg-unbundle':
            self.hgrun('init', self.dest)
            cmd = [hg, '-R', self.dest] + extra + ['unbundle', src + '.cg.hg']
            return self.measure(cmd, env)
        if op in ('v1-apply', 'v2-unbundle', 'v3-unbundle'):
            self.hgrun('init', self.dest)
            if op == 'v1-apply':
                cmd = [hg, '-R', self.dest] + extra + [
                    'debugapplystreamclonebundle', src + '.v1.hg']
            else:
                cmd = [hg, '-R', self.dest] + extra + [
                    '--config', 'experimental.stream-v3=yes',
                    'unbundle', src + '.%s.hg' % op[:2]]
        elif op in ('v1-ssh', 'v2-ssh', 'clone-ssh'):
            remotecmd = hg if op != 'v1-ssh' else self.v1_server()
            checkout = ['-U'] if op != 'clone-ssh' else []
            cmd = [hg, 'clone'] + checkout + [
                '--stream', '--ssh', common.SSH,
                '--config', 'ui.remotecmd=%s' % remotecmd,
                'ssh://bench/%s' % src, self.dest] + extra
        elif op == 'clone-bundle':
            cmd = [hg, 'clone', '-U', 'http://127.0.0.1:%d/'
                   % self.ports[op], self.dest] + extra
        else:
            cmd = [hg, 'clone', '-U', '--stream',
                   'http://127.0.0.1:%d/' % self.ports[op], self.dest] + extra
        return self.measure(cmd, env)

    def run_reference(self, ref, latency, src):
        self.clean()
        env = common.latency_env(self.env, self.shim, latency,
                                 self.storefiles.get(src))
        if ref == 'tar-x':
            os.makedirs(self.dest)
            cmd = ['tar', '-xf', src + '.store.tar', '-C', self.dest]
            return common.timed(cmd, env)[:2]
        workers = ref.rsplit('-', 1)[1]
        subprocess.run(['git', 'clone', '-q', '-n', src + '.git', self.dest],
                       check=True, env=self.gitenv)
        cmd = ['git', '-C', self.dest, '-c', 'checkout.workers=%s' % workers,
               '-c', 'checkout.thresholdForParallelism=1',
               'checkout', '-q', '-f', 'HEAD']
        return common.timed(cmd, dict(env, **{
            k: v for k, v in self.gitenv.items() if k.startswith('GIT_')}))[:2]


def store_size(src):
    count = size = 0
    for root, _dirs, files in os.walk(os.path.join(src, '.hg', 'store')):
        for name in files:
            count += 1
            size += os.lstat(os.path.join(root, name)).st_size
    return count, size


def median(values):
    return statistics.median(values) if values else None


def base_latency(rows):
    """what ratios are relative to: 0 us, or no model at all"""
    return '0' if any(r['latency'] == '0' for r in rows) else 'none'


def latency_label(latency):
    if latency == 'none':
        return 'no model'
    if latency in ('tail', 'heavy'):
        return latency
    if latency.startswith('onset'):
        return '%d us from %s%%' % (common.ONSET_US, latency[len('onset'):])
    if latency.startswith('burn'):
        return '%s us CPU' % latency[len('burn'):]
    return '%s us' % latency


def numeric_latency(latency):
    """whether ``latency`` is a constant close time, a point on the line
    the plot draws (the others are points of their own)"""
    return latency.isdigit()


def summarize(samples):
    """samples: list of dicts -> rows keyed by (what, config, latency)"""
    groups = {}
    for s in samples:
        key = (s['what'], s['config'], s['latency'], s['files'])
        groups.setdefault(key, []).append(s)
    rows = []
    for (what, config, latency, files), group in sorted(groups.items()):
        rows.append({
            'what': what, 'config': config, 'latency': latency,
            'files': files, 'bytes': group[0]['bytes'],
            'runs': len(group),
            'seconds': median([g['seconds'] for g in group]),
            'maxrss_kb': median([g['maxrss_kb'] for g in group]),
            'cpu': median([g['cpu'] for g in group
                           if g.get('cpu') is not None]),
        })
    base = {(r['what'], r['files']): r['seconds'] for r in rows
            if r['config'] in ('core', 'ref')
            and r['latency'] == base_latency(rows)}
    for r in rows:
        b = base.get((r['what'], r['files']))
        r['ratio_to_core_0us'] = r['seconds'] / b if b else None
        r['files_per_s'] = r['files'] / r['seconds']
        r['mb_per_s'] = r['bytes'] / r['seconds'] / 1e6
    return rows


def usable_cores():
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def burning_table(rows):
    """lines comparing each row whose closes burn CPU (burnN) with the
    ideal: the work of core's command at 0 us (its CPU time, the server's
    included) plus every close's N us, shared by the cores, and never
    faster than core at 0 us"""
    cores = usable_cores()
    base = {(r['what'], r['files']): r for r in rows
            if r['config'] == 'core' and r['latency'] == '0'
            and r.get('cpu') is not None}
    lines = []
    for r in rows:
        core = base.get((r['what'], r['files']))
        if not r['latency'].startswith('burn') or core is None:
            continue
        cost = int(r['latency'][len('burn'):]) * 1e-6
        ideal = max(core['seconds'],
                    (core['cpu'] + r['files'] * cost) / cores)
        lines.append('  %-16s %-14s %-12s %7.2f s  ideal %6.2f s  %5.2fx' % (
            r['what'], r['config'], latency_label(r['latency']),
            r['seconds'], ideal, r['seconds'] / ideal))
    if not lines:
        return []
    return ['', 'closes that burn CPU, against the ideal: max(core at 0 us, '
            '(core\'s CPU at 0 us + closes x cost) / %d cores)' % cores] + lines


def table(rows, latencies):
    lines = []
    whats = []
    for r in rows:
        if (r['what'], r['files']) not in whats:
            whats.append((r['what'], r['files']))
    head = '%-16s %-14s' % ('operation', 'configuration') + ''.join(
        '%16s' % latency_label(lat) for lat in latencies)
    lines.append(head)
    lines.append('-' * len(head))
    for what, files in whats:
        configs = []
        for r in rows:
            if (r['what'], r['files']) == (what, files) and r['config'] not in configs:
                configs.append(r['config'])
        for config in configs:
            cells = []
            for lat in latencies:
                match = [r for r in rows if (r['what'], r['files'], r['config'],
                                             r['latency']) == (what, files, config, lat)]
                if match:
                    r = match[0]
                    ratio = r['ratio_to_core_0us']
                    cells.append('%16s' % ('%.2fs %5s' % (
                        r['seconds'], '%.2fx' % ratio if ratio else '')))
                else:
                    cells.append('%16s' % '-')
            lines.append('%-16s %-14s' % (what, config) + ''.join(cells))
    return '\n'.join(lines)


def plot(rows, latencies, path):
    try:
        import matplotlib
        matplotlib.use('Agg')
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    whats = sorted({r['what'] for r in rows if r['config'] != 'ref'})
    columns = min(2, len(whats))
    lines = (len(whats) + columns - 1) // columns
    fig, axes = plt.subplots(lines, columns, figsize=(6 * columns, 4.2 * lines),
                             squeeze=False)
    axes = [ax for line in axes for ax in line]
    for ax in axes[len(whats):]:
        ax.set_visible(False)
    xs = list(range(len(latencies)))
    names = list(CONFIGS) + list(REFERENCES)
    # one colour per configuration in every panel
    palette = list(plt.get_cmap('tab10').colors) + ['black', 'gold']
    colours = {name: palette[i % len(palette)] for i, name in enumerate(names)}
    for ax, what in zip(axes, whats):
        files = max(r['files'] for r in rows if r['what'] == what)
        for config in names:
            ys = []
            for lat in latencies:
                m = [r for r in rows if r['latency'] == lat and r['files'] == files
                     and ((r['what'] == what and r['config'] == config)
                          or (r['what'] == config and r['config'] == 'ref'))]
                ys.append(m[0]['seconds'] if m else None)
            if any(y is not None for y in ys):
                style = ':' if config in REFERENCES else '-'
                # numeric latencies form a line; the heavy-tailed mix is a
                # point of its own, not the next step of that line
                line = [(x, y) for x, y, lat in zip(xs, ys, latencies)
                        if y is not None and numeric_latency(lat)]
                drawn = ax.plot([x for x, _y in line], [y for _x, y in line],
                                style, marker='o', label=config,
                                color=colours[config])
                tail = [(x, y) for x, y, lat in zip(xs, ys, latencies)
                        if y is not None and not numeric_latency(lat)]
                if tail:
                    ax.plot([x for x, _y in tail], [y for _x, y in tail], 'D',
                            color=drawn[0].get_color())
        ax.set_title('%s, %d files' % (what, files))
        ax.set_xticks(xs)
        ax.set_xticklabels([latency_label(lat) for lat in latencies])
        ax.set_xlabel('modelled close latency')
        ax.set_ylabel('seconds (median)')
        ax.grid(True, alpha=0.3)
        ax.set_ylim(bottom=0)
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    return True


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--hg', required=True)
    parser.add_argument('--shim', required=True)
    parser.add_argument('--files', type=int, default=2000)
    parser.add_argument('--seed', type=int, default=1)
    parser.add_argument('--size-scale', type=float, default=1.0)
    parser.add_argument('--rounds', type=int, default=3)
    parser.add_argument('--grid', choices=('quick', 'all'), default='quick',
                        help='the default rows: the quick grid (see QUICK) '
                        'or every operation, configuration and latency')
    parser.add_argument('--latencies', help="comma-separated: microseconds, "
                        "'burnN' (N us of CPU), 'tail', 'heavy', 'onsetP' "
                        "(700 us from P%% of the files on), or 'none' (no "
                        "model: a real file system)")
    parser.add_argument('--operations')
    parser.add_argument('--configs')
    parser.add_argument('--fs', choices=('tmpfs', 'sshfs'), default='tmpfs',
                        help='where the measured commands write: tmpfs, or '
                        'an sshfs mount of tmpfs served by an sshd on '
                        '127.0.0.1 (bench/sshfs.py)')
    parser.add_argument('--scaling', default='1000,5000',
                        help='file counts for the scaling rows (v1 apply)')
    parser.add_argument('--no-references', action='store_true')
    parser.add_argument('--tmpfs-size', default='4g')
    parser.add_argument('--out', default=os.path.join(common.HERE, 'results'))
    parser.add_argument('--name', default='latest')
    parser.add_argument('--before', metavar='DIR',
                        help="another copy of the extension's package "
                        "(say, a worktree of an earlier commit): adds the "
                        "config ext-before, that copy as users get it")
    parser.add_argument('--replot', metavar='JSON',
                        help='only redraw the plot of a saved result')
    args = parser.parse_args(argv)
    if args.replot:
        with open(args.replot) as fp:
            rows = json.load(fp)['rows']
        seen = list(dict.fromkeys(r['latency'] for r in rows))
        # the usual order, then any other (none: sshfs, burnN) as saved
        lats = [lat for lat in LATENCIES if lat in seen]
        lats += [lat for lat in seen if lat not in lats]
        main_rows = [r for r in rows if not r['what'].startswith('scaling')]
        png = os.path.splitext(args.replot)[0] + '.png'
        return 0 if plot(main_rows, lats, png) else 1
    grid = QUICK if args.grid == 'quick' else {
        'latencies': LATENCIES, 'operations': list(OPERATIONS),
        'configs': list(CONFIGS)}
    latencies = (args.latencies.split(',') if args.latencies
                 else grid['latencies'])
    operations = (args.operations.split(',') if args.operations
                  else grid['operations'])
    configs = args.configs.split(',') if args.configs else grid['configs']
    for what, chosen, known in (
            ('operation', operations, OPERATIONS),
            ('configuration', configs, CONFIGS)):
        unknown = [name for name in chosen if name not in known
                   and name != 'ext-before']
        if unknown:
            parser.error('unknown %s: %s' % (what, ', '.join(unknown)))
    if args.before:
        CONFIGS['ext-before'] = [
            '--config', 'extensions.backgroundclose=%s'
            % os.path.abspath(args.before)]
        if 'ext-before' not in configs:
            configs.append('ext-before')
    scaling = [int(n) for n in args.scaling.split(',') if n]
    common.byte_compile(args.hg, common.EXTENSION,
                        *([args.before] if args.before else []))
    started = time.time()

    with common.workdir(size=args.tmpfs_size) as (work, on_tmpfs):
        if not on_tmpfs:
            print('warning: not root, no tmpfs: timing on %s, expect noise'
                  % work)
        bench = Bench(args, work)
        with contextlib.ExitStack() as mounts:
            if args.fs == 'sshfs':
                served = os.path.join(work, 'served')
                os.makedirs(served)
                bench.target = mounts.enter_context(sshfs.mounted(
                    served, os.path.join(work, 'mnt'),
                    os.path.join(work, 'sshd')))
                bench.dest = os.path.join(bench.target, 'dest')
                print('writing to %s, an sshfs mount of %s'
                      % (bench.target, served))
            samples, count, size = measure(
                args, bench, latencies, operations, configs, scaling,
                started)
    report_and_save(args, bench, samples, count, size, latencies, on_tmpfs,
                    started)
    return 0


def rotated(configs, rnd):
    """``configs`` in round ``rnd``'s order: started ``rnd`` places on"""
    shift = rnd % len(configs) if configs else 0
    return configs[shift:] + configs[:shift]


def measure(args, bench, latencies, operations, configs, scaling, started):
    """every chosen row, round after round: (samples, files, bytes)"""
    samples = []
    print('building the %d-file corpus...' % args.files)
    src = bench.prepare(args.files, operations=operations)
    count, size = store_size(src)
    bench.storefiles[src] = count
    if not args.no_references:
        bench.prepare_references(src)
    if 'v2-http' in operations:
        bench.ports['v2-http'] = bench.start_server(src)
    if 'clone-bundle' in operations:
        bench.ports['clone-bundle'] = bench.start_clone_bundle_host(src)
    try:
        for rnd in range(args.rounds):
            for lat in latencies:
                for op in operations:
                    for config in rotated(configs, rnd):
                        if (op, config) in NOT_APPLICABLE:
                            continue
                        secs, rss = bench.run_hg(op, config, lat, src)
                        print('  round %d/%d  %-8s  %-12s  %-14s  %7.2f s'
                              % (rnd + 1, args.rounds, lat, op, config,
                                 secs), flush=True)
                        samples.append(dict(
                            what=op, config=config, latency=lat,
                            files=count, bytes=size, seconds=secs,
                            maxrss_kb=rss, cpu=bench.lastcpu, round=rnd))
                if not args.no_references:
                    for ref in REFERENCES:
                        secs, rss = bench.run_reference(ref, lat, src)
                        samples.append(dict(
                            what=ref, config='ref', latency=lat,
                            files=count, bytes=size, seconds=secs,
                            maxrss_kb=rss, round=rnd))
            print('round %d of %d done (%.0f s)' % (
                rnd + 1, args.rounds, time.time() - started))
    finally:
        bench.stop_servers()
    # room on tmpfs for the scaling corpora
    shutil.rmtree(src + '.git', ignore_errors=True)
    shutil.rmtree(src, ignore_errors=True)
    shutil.rmtree(os.path.join(bench.target, 'update'), ignore_errors=True)
    for leftover in ('.v1.hg', '.v2.hg', '.v3.hg', '.cg.hg',
                     '.store.tar'):
        if os.path.exists(src + leftover):
            os.unlink(src + leftover)
    # scaling: time per file grows linearly with the file count
    for files in scaling:
        ssrc = bench.prepare(files, name='scale-%d' % files)
        scount, ssize = store_size(ssrc)
        bench.storefiles[ssrc] = scount
        for rnd in range(args.rounds):
            for config, lat in (('core', '0'), ('ext-adaptive', '0'),
                                ('core', '700'), ('ext-adaptive', '700')):
                secs, rss = bench.run_hg('v1-apply', config, lat, ssrc)
                samples.append(dict(
                    what='scaling-v1-apply', config=config, latency=lat,
                    files=scount, bytes=ssize, seconds=secs,
                    maxrss_kb=rss, round=rnd))
        shutil.rmtree(ssrc)
    return samples, count, size


def report_and_save(args, bench, samples, count, size, latencies, on_tmpfs,
                    started):
    rows = summarize(samples)
    where = 'tmpfs' if on_tmpfs else 'NOT tmpfs'
    if args.fs == 'sshfs':
        where = 'written to sshfs over loopback, served from ' + where
    main_rows = [r for r in rows if not r['what'].startswith('scaling')]
    scale_rows = [r for r in rows if r['what'].startswith('scaling')]
    text = [
        'hg-backgroundclose benchmark: %d files, %.1f MB of store, %s'
        % (count, size / 1e6, where),
        'medians of %d rounds; seconds and ratio to core at %s of the '
        'same operation' % (args.rounds, latency_label(base_latency(rows))),
        '',
        table(main_rows, latencies),
    ]
    if scale_rows:
        text += ['', 'scaling (v1 apply): microseconds per file',
                 '%-14s %8s %8s %10s' % ('configuration', 'latency', 'files',
                                         'us/file')]
        for r in scale_rows:
            text.append('%-14s %8s %8d %10.1f' % (
                r['config'], r['latency'], r['files'],
                r['seconds'] / r['files'] * 1e6))
    text += burning_table(main_rows)
    rss = [r for r in main_rows if r['config'] != 'ref']
    if rss:
        text += ['', 'peak RSS (median, MB) at the highest latency:']
        top = latencies[-1]
        for r in rss:
            if r['latency'] == top:
                text.append('  %-16s %-14s %6.1f' % (
                    r['what'], r['config'], r['maxrss_kb'] / 1024))
    report = '\n'.join(text)
    print(report)

    os.makedirs(args.out, exist_ok=True)
    result = {
        'machine': {'python': platform.python_version(),
                    'cpus': os.cpu_count(), 'tmpfs': on_tmpfs,
                    'written_to': args.fs,
                    'platform': platform.platform()},
        'hg': subprocess.run([bench.hg, 'version', '-q'], env=bench.env,
                             stdout=subprocess.PIPE, text=True).stdout.strip(),
        'files': count, 'bytes': size, 'rounds': args.rounds,
        'seconds_total': time.time() - started,
        'rows': rows, 'samples': samples,
    }
    base = os.path.join(args.out, args.name)
    with open(base + '.json', 'w') as fp:
        json.dump(result, fp, indent=1)
    with open(base + '.txt', 'w') as fp:
        fp.write(report + '\n')
    if plot(main_rows, latencies, base + '.png'):
        print('wrote %s.json, %s.txt and %s.png' % (base, base, base))
    else:
        print('wrote %s.json and %s.txt (no matplotlib: no plot)' % (base, base))
    return 0


if __name__ == '__main__':
    fusemount.exit_with(main)
