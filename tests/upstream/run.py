#!/usr/bin/env python3
# run.py - Mercurial's own tests, without and with the extension
#
# Copyright 2026 hg-backgroundclose contributors
#
# This software may be used and distributed according to the terms of the
# GNU General Public License version 2 or any later version.
"""Run a list of Mercurial's own ``.t`` tests once without the extension
and once per configuration with it, and fail if the extension changes any
result.

Mercurial's ``tests/run-tests.py`` (from the source release of the Mercurial
under test) runs each configuration and writes a JSON report: for every
test, and every case of a test with ``#testcases``, whether it passed,
failed or was skipped, and for a failure the diff between the expected and
the actual output.  A configuration with the extension is compared with the
run without it, test by test:

- same result and, for failures, the same diff hunks: no difference;
- anything else is a difference: a hunk only one side has, a test that
  passes on one side and fails on the other, a test skipped on one side.

A difference the extension intends is listed in the allowlist, with the
test, the hunk's changed lines and why (see ``allowlist.txt``).  Tests that
already fail without the extension are reported, not judged: their output
depends on what this machine lacks, not on the extension.  Exit status: 0
when every difference is allowed, 1 otherwise, 2 when a run itself failed.

With ``--core-where-needed`` (what CI uses) the configurations with the
extension run first, and the run without it covers only the tests that did
not pass in all of them, a failure made only of allowed hunks counting as a
pass.  Such a test case is taken to pass without the extension: the full
comparison could not have judged it otherwise (a case that fails without the
extension is not judged, and one skipped on one side only would need a
machine feature the extension does not change).  When everything passes,
that saves the run without the extension: half the time with one
configuration.
"""

import argparse
import fnmatch
import json
import os
import re
import subprocess
import sys
import time

# what each configuration adds to Mercurial's test configuration
CONFIGS = {
    'core': [],
    'ext': ['extensions.backgroundclose='],
    # background closing forced on, from the first file
    'ext-background': [
        'extensions.backgroundclose=',
        'worker.backgroundclose=true',
        'worker.backgroundcloseminfilecount=0',
    ],
    # every close of a written file takes 700 us (bench/slowclose.c): the
    # adaptive closer goes to its threads, which may change timing only
    'ext-slow': ['extensions.backgroundclose='],
}
SHIMMED = {'ext-slow': '700'}


def read_list(path):
    """the entries of a list file, one a line: a test (``test-x.t``) or one
    case of it as run-tests.py names it (``test-x.t#a#b``, every dimension
    of its ``#testcases``); a ``#`` at the start of a line or after a blank
    starts a comment"""
    names = []
    with open(path) as fp:
        for line in fp:
            line = re.split(r'(?:^|\s)#', line, 1)[0].strip()
            if line:
                names.append(line)
    return names


class Allowed:
    """one intended difference: a test (a glob of names), the changed lines
    of its hunk (each a glob when marked ``(glob)``), and why"""

    def __init__(self, test, why, lines, where):
        self.test = test
        self.why = why
        self.lines = lines
        self.where = where
        self.used = 0

    def matches(self, test, changed):
        if not fnmatch.fnmatchcase(test, self.test):
            return False
        if len(changed) != len(self.lines):
            return False
        for line, pattern in zip(changed, self.lines):
            if pattern.endswith(' (glob)'):
                if not fnmatch.fnmatchcase(line, pattern[: -len(' (glob)')]):
                    return False
            elif line != pattern:
                return False
        return True


def read_allowlist(path):
    """entries of the form

        test-name.t: why the extension changes this output
        | -expected line as the diff shows it
        | +actual line as the diff shows it (glob)

    separated by blank lines; # starts a comment line"""
    entries = []
    current = None
    with open(path) as fp:
        for number, line in enumerate(fp, 1):
            line = line.rstrip('\n')
            where = '%s:%d' % (path, number)
            if line.startswith('#'):
                continue
            if not line.strip():
                current = None
                continue
            if line.startswith('| '):
                if current is None:
                    sys.exit('%s: a hunk line outside an entry' % where)
                current.lines.append(line[2:])
                continue
            test, sep, why = line.partition(': ')
            if not sep or not why.strip():
                sys.exit('%s: expected "test-name.t: why"' % where)
            current = Allowed(test.strip(), why.strip(), [], where)
            entries.append(current)
    for entry in entries:
        if not entry.lines:
            sys.exit('%s: an entry without hunk lines' % entry.where)
    return entries


def hunks(diff):
    """the changed lines (``-`` and ``+``) of each hunk of a unified diff"""
    found = []
    current = None
    for line in diff.splitlines():
        if line.startswith('@@'):
            current = []
            found.append(current)
        elif current is not None and line[:1] in ('-', '+'):
            current.append(line)
    return [tuple(h) for h in found if h]


def load_report(outdir):
    with open(os.path.join(outdir, 'report.json')) as fp:
        text = fp.read()
    # run-tests.py writes "testreport =" before the JSON object
    return json.loads(text.partition('=')[2])


def run_config(args, name, tests, outdir):
    """run-tests.py for one configuration; the report it wrote"""
    os.makedirs(outdir, exist_ok=True)
    report = os.path.join(outdir, 'report.json')
    if os.path.exists(report):
        os.unlink(report)
    command = [
        sys.executable,
        os.path.join(args.source, 'tests', 'run-tests.py'),
        '--with-hg=%s' % os.path.abspath(args.hg),
        '--jobs=%d' % args.jobs,
        '--outputdir=%s' % os.path.abspath(outdir),
        '--json',
    ]
    for option in CONFIGS[name] + args.config:
        if CONFIGS[name] or not option.startswith('extensions.'):
            command.append('--extra-config-opt=%s' % option)
    env = dict(os.environ)
    # run-tests.py puts a python3 on the tests' PATH that is a symlink to
    # this interpreter: from there a virtualenv's interpreter no longer
    # finds its packages, and helpers such as get-with-headers.py could
    # not import mercurial (every test that reads an hgweb page failed
    # without the extension)
    env['PYTHONPATH'] = os.pathsep.join(
        filter(None, [args.pythonpath, env.get('PYTHONPATH')])
    )
    if name in SHIMMED:
        env['LD_PRELOAD'] = os.path.abspath(args.shim)
        env['SLOWCLOSE_US'] = SHIMMED[name]
    command.extend(tests)
    start = time.monotonic()
    print('=== %s: %d tests or cases ...' % (name, len(tests)), flush=True)
    log = os.path.join(outdir, 'run-tests.log')
    with open(log, 'wb') as fp:
        proc = subprocess.Popen(
            command,
            cwd=os.path.join(args.source, 'tests'),
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
        )
        # run-tests prints one character per test: pass it on so that a
        # long run shows it moves
        while True:
            chunk = proc.stdout.read1(4096)
            if not chunk:
                break
            fp.write(chunk)
            if args.progress:
                sys.stdout.buffer.write(chunk)
                sys.stdout.flush()
        proc.wait()
    elapsed = time.monotonic() - start
    if not os.path.exists(report):
        print('%s: run-tests.py wrote no report (exit %d), see %s'
              % (name, proc.returncode, log))
        return None, elapsed
    return load_report(outdir), elapsed


def reuse(outdir, cases):
    """an earlier report in ``outdir`` of exactly the test cases ``cases``"""
    if not os.path.exists(os.path.join(outdir, 'report.json')):
        return None
    report = load_report(outdir)
    if set(report) != set(cases):
        return None
    return report


def cases_of(testdir, entry):
    """the names run-tests.py gives the cases a list entry stands for: one
    per combination of the test file's ``#testcases`` lines, or the file's
    name; none where this release has no such file or case"""
    test = entry.split('#', 1)[0]
    path = os.path.join(testdir, test)
    if not os.path.exists(path):
        return []
    names = [test]
    with open(path, 'rb') as fp:
        for line in fp:
            if line.startswith(b'#testcases '):
                names = [
                    '%s#%s' % (name, case.decode('ascii', 'replace'))
                    for name in names
                    for case in sorted(line[len(b'#testcases '):].split())
                ]
    if entry != test:
        return [name for name in names if name == entry]
    return names


def covers(entry, case):
    """whether the list entry ``entry`` stands for the test case ``case``"""
    return case == entry or case.split('#', 1)[0] == entry


def expected(allowlist, case, hunk):
    """the allowlist entry that expects ``hunk`` in ``case``, or None"""
    return next((e for e in allowlist if e.matches(case, hunk)), None)


def allowed_only(case, result, allowlist):
    """whether ``result`` is a failure of ``case`` whose every hunk is one
    the allowlist expects of the extension"""
    if result['result'] != 'failure':
        return False
    found = hunks(result.get('diff', ''))
    return bool(found) and all(
        expected(allowlist, case, hunk) is not None for hunk in found
    )


def not_passing(tests, cases, reports, allowlist=()):
    """the tests of ``tests`` with a case (``cases`` maps a test to the
    names of its cases) that did not pass in one of ``reports``, in the
    order of ``tests``.  A case missing from a report did not pass: it was
    not run, or ended in an error, which run-tests.py does not report.  A
    failure made only of hunks the allowlist expects passes: the run
    without the extension could only find it allowed or not judged."""
    missing = {'result': 'missing'}
    return [
        test for test in tests
        if any(
            report.get(case, missing)['result'] != 'success'
            and not allowed_only(case, report.get(case, missing), allowlist)
            for case in cases[test]
            for report in reports
        )
    ]


def taken_as_passing(ran, reports):
    """a passing result without the extension for every test case in
    ``reports`` that no list entry run without it (``ran``) stands for"""
    return {
        case: {'result': 'success'}
        for report in reports
        for case in report
        if not any(covers(entry, case) for entry in ran)
    }


def packages_of(hg):
    """the directory that holds the mercurial package ``hg`` runs"""
    modules = subprocess.run(
        [hg, '--config', 'ui.username=x', 'debuginstall', '-T',
         '{hgmodules}'],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, check=True,
    ).stdout.decode('utf-8', 'surrogateescape').strip()
    return os.path.dirname(modules)


def compare(base, other, allowlist):
    """(differences, allowed, unjudged) of ``other`` against ``base``;
    each difference a (test, what, changed lines) tuple"""
    differences = []
    allowed = []
    unjudged = []
    for test in sorted(set(base) | set(other)):
        before = base.get(test, {'result': 'missing'})
        after = other.get(test, {'result': 'missing'})
        rb, ra = before['result'], after['result']
        if rb == 'failure':
            unjudged.append(test)
            continue
        if rb == ra and rb != 'failure':
            continue
        if rb == 'success' and ra == 'failure':
            new = hunks(after.get('diff', ''))
            if not new:
                # a failure without a diff: exit code or timeout
                differences.append((test, 'fails: %s' % after.get('diff', '')
                                    .strip()[:200], ()))
                continue
            for hunk in new:
                entry = expected(allowlist, test, hunk)
                if entry is None:
                    differences.append((test, 'output differs', hunk))
                else:
                    entry.used += 1
                    allowed.append((test, entry))
            continue
        differences.append((test, '%s without, %s with' % (rb, ra), ()))
    return differences, allowed, unjudged


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--hg', required=True, help='the hg under test')
    parser.add_argument(
        '--source', required=True,
        help='the unpacked source release of that Mercurial')
    parser.add_argument('--tests', required=True, help='the list of tests')
    parser.add_argument('--allowlist', required=True)
    parser.add_argument('--work', required=True, help='output directory')
    parser.add_argument(
        '--configs', default='ext',
        help='comma-separated configurations with the extension, compared '
        'each with the run without it: %s' % ', '.join(
            c for c in CONFIGS if c != 'core'))
    parser.add_argument('--shim', help='bench/slowclose.so, for ext-slow')
    parser.add_argument('--jobs', type=int, default=2)
    parser.add_argument(
        '--config', action='append', default=[],
        help='more SECTION.NAME=VALUE for every configuration')
    parser.add_argument('--progress', action='store_true',
                        help="show run-tests.py's progress dots")
    parser.add_argument(
        '--reuse-core', action='store_true',
        help='take the run without the extension from an earlier run in '
        '--work, if it ran exactly these tests (it does not depend on the '
        'extension)')
    parser.add_argument(
        '--core-where-needed', action='store_true',
        help='run the configurations with the extension first, and without '
        'it only the tests that did not pass in all of them')
    args = parser.parse_args()
    if args.reuse_core and args.core_where_needed:
        parser.error('--reuse-core and --core-where-needed exclude each other')
    # run-tests.py runs in the source's tests directory: every path given
    # on the command line is made absolute before that
    args.source = os.path.abspath(args.source)
    args.pythonpath = packages_of(args.hg)

    configs = [c for c in args.configs.split(',') if c]
    unknown = [c for c in configs if c not in CONFIGS or c == 'core']
    if unknown:
        parser.error('unknown configuration: %s' % ', '.join(unknown))
    if any(c in SHIMMED for c in configs) and not args.shim:
        parser.error('--shim is needed for %s' % ', '.join(SHIMMED))
    testdir = os.path.join(args.source, 'tests')
    wanted = read_list(args.tests)
    cases = {t: cases_of(testdir, t) for t in wanted}
    tests = [t for t in wanted if cases[t]]
    absent = [t for t in wanted if t not in tests]
    allowlist = read_allowlist(args.allowlist)

    reports = {}
    timings = {}
    core_tests = tests
    order = configs + ['core'] if args.core_where_needed else ['core'] + configs
    for name in order:
        outdir = os.path.join(args.work, name)
        these = tests
        if name == 'core' and args.core_where_needed:
            these = core_tests = not_passing(
                tests, cases, [reports[c] for c in configs], allowlist)
            if not these:
                print('=== core: not run, every test passed with the '
                      'extension or failed only as the allowlist expects')
                reports[name], timings[name] = {}, 0.0
                continue
        elif name == 'core' and args.reuse_core:
            earlier = reuse(outdir, [c for t in tests for c in cases[t]])
            if earlier is not None:
                print('=== core: the run of %s reused' % outdir)
                reports[name], timings[name] = earlier, 0.0
                continue
        report, elapsed = run_config(args, name, these, outdir)
        timings[name] = elapsed
        if report is None:
            return 2
        reports[name] = report

    base = reports['core']
    counts = {}
    for result in base.values():
        counts[result['result']] = counts.get(result['result'], 0) + 1
    print()
    print('%d tests of the list (%d absent from this release%s), %d test '
          'cases without the extension: %s' % (
              len(wanted), len(absent),
              ': ' + ' '.join(absent) if absent else '',
              len(base),
              ', '.join('%d %s' % (n, r) for r, n in sorted(counts.items()))
              or 'none run'))
    if args.core_where_needed:
        assumed = taken_as_passing(core_tests, [reports[c] for c in configs])
        print('%d test cases not run without the extension: they passed '
              'with it, or failed only as the allowlist expects'
              % len(assumed))
        base = {**assumed, **base}
    for name in ['core'] + configs:
        print('  %-15s %6.0f s' % (name, timings[name]))
    failed = False
    differing = set()  # test cases with a difference not allowed
    for name in configs:
        differences, allowed, unjudged = compare(
            base, reports[name], allowlist)
        differing.update(test for test, _what, _lines in differences)
        print()
        print('%s against core: %d differences, %d allowed, %d not judged '
              '(failing without the extension)' % (
                  name, len(differences), len(allowed), len(unjudged)))
        for test in unjudged:
            print('  not judged: %s' % test)
        for test, entry in allowed:
            print('  allowed: %s (%s)' % (test, entry.where))
        for test, what, lines in differences:
            failed = True
            print('  DIFFERENT: %s: %s' % (test, what))
            for line in lines:
                print('    | %s' % line)
    unused = [e for e in allowlist if not e.used]
    if unused:
        print()
        for entry in unused:
            print('allowlist entry not needed in this run: %s (%s)'
                  % (entry.test, entry.where))
    print()
    print('upstream tests: %s' % ('DIFFERENCES' if failed else 'no change'))
    # one line a CI log reader knows: test cases judged the same with the
    # extension in every configuration, and those that differ
    judged = len([t for t, r in base.items() if r['result'] != 'failure'])
    print('upstream: %d passed, %d failed'
          % (judged - len(differing), len(differing)))
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
