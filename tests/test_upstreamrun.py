# tests/upstream/run.py: which of Mercurial's tests the run without the
# extension still needs once the runs with it are known, and what the
# comparison then judges
import importlib.util
import os

HERE = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location(
    'upstreamrun', os.path.join(HERE, 'upstream', 'run.py'))
run = importlib.util.module_from_spec(spec)
spec.loader.exec_module(run)

TESTS = ['test-a.t', 'test-b.t', 'test-c.t', 'test-d.t']
CASES = {
    'test-a.t': ['test-a.t'],
    'test-b.t': ['test-b.t#v1', 'test-b.t#v2'],
    'test-c.t': ['test-c.t'],
    'test-d.t': ['test-d.t'],
}
PASS = {'result': 'success'}
FAIL = {'result': 'failure', 'diff': '@@ -1 +1 @@\n-expected\n+actual\n'}


def test_case_names_are_those_run_tests_gives(tmp_path):
    path = tmp_path / 'test-x.t'
    path.write_bytes(b'#testcases b a\n  $ true\n#testcases one two\n')
    assert run.cases_of(str(tmp_path), 'test-x.t') == [
        'test-x.t#a#one', 'test-x.t#a#two', 'test-x.t#b#one', 'test-x.t#b#two']
    # an entry may name one case, which this release may not have
    assert run.cases_of(str(tmp_path), 'test-x.t#b#one') == ['test-x.t#b#one']
    assert run.cases_of(str(tmp_path), 'test-x.t#b') == []
    assert run.cases_of(str(tmp_path), 'test-y.t') == []
    path.write_bytes(b'  $ true\n')
    assert run.cases_of(str(tmp_path), 'test-x.t') == ['test-x.t']


def test_a_list_names_tests_and_cases_beside_comments(tmp_path):
    path = tmp_path / 'list.txt'
    path.write_text('# a comment\ntest-a.t\ntest-b.t#v1  # one case\n'
                    '\n   # another\n')
    assert run.read_list(str(path)) == ['test-a.t', 'test-b.t#v1']


def test_only_tests_not_passing_everywhere_are_run_without_the_extension():
    ext = {
        'test-a.t': PASS,
        'test-b.t#v1': PASS,
        'test-b.t#v2': FAIL,
        'test-c.t': {'result': 'skip'},
        # test-d.t is missing: run-tests.py never ran it
    }
    assert run.not_passing(TESTS, CASES, [ext]) == [
        'test-b.t', 'test-c.t', 'test-d.t']
    # a failure in a second configuration counts too
    other = dict(ext, **{'test-a.t': FAIL})
    assert run.not_passing(TESTS, CASES, [ext, other]) == TESTS
    everything = {c: PASS for t in TESTS for c in CASES[t]}
    assert run.not_passing(TESTS, CASES, [everything]) == []
    # a case that ended in an error is left out of the report, while the
    # other cases of its test passed
    errored = dict(everything)
    del errored['test-b.t#v2']
    assert run.not_passing(TESTS, CASES, [errored]) == ['test-b.t']


def test_a_failure_with_the_extension_is_judged_against_the_real_run():
    ext = {'test-a.t': PASS, 'test-b.t#v1': PASS, 'test-b.t#v2': FAIL}
    core = {'test-b.t#v1': PASS, 'test-b.t#v2': PASS}
    base = {**run.taken_as_passing(['test-b.t'], [ext]), **core}
    assert base['test-a.t'] == PASS
    differences, allowed, unjudged = run.compare(base, ext, [])
    assert [(t, what) for t, what, _lines in differences] == [
        ('test-b.t#v2', 'output differs')]
    assert unjudged == []
    # the same failure without the extension is not the extension's
    core['test-b.t#v2'] = dict(FAIL)
    base = {**run.taken_as_passing(['test-b.t'], [ext]), **core}
    differences, allowed, unjudged = run.compare(base, ext, [])
    assert differences == [] and unjudged == ['test-b.t#v2']


def test_nothing_is_taken_as_passing_for_a_test_run_without_the_extension():
    # test-b.t ran without the extension, and its first case ended in an
    # error there: that is a difference, not a pass
    ext = {'test-a.t': PASS, 'test-b.t#v1': PASS, 'test-b.t#v2': FAIL}
    core = {'test-b.t#v2': PASS}
    assumed = run.taken_as_passing(['test-b.t'], [ext])
    assert assumed == {'test-a.t': PASS}
    differences, _allowed, _unjudged = run.compare(
        {**assumed, **core}, ext, [])
    assert ('test-b.t#v1', 'missing without, success with', ()) in differences


def test_a_failure_the_allowlist_expects_needs_no_run_without_the_extension(
    tmp_path
):
    allowlist = tmp_path / 'allowlist.txt'
    allowlist.write_text(
        'test-b.t#*: the extension prints its report\n'
        '| +report line * (glob)\n')
    entries = run.read_allowlist(str(allowlist))
    expected = {'result': 'failure',
                'diff': '@@ -1 +1,2 @@\n context\n+report line 1\n'}
    other = {'result': 'failure',
             'diff': '@@ -1 +1,2 @@\n context\n+report line 1\n'
                     '@@ -9 +10 @@\n-expected\n+actual\n'}
    ext = {c: PASS for t in TESTS for c in CASES[t]}
    ext['test-b.t#v2'] = expected
    assert run.not_passing(TESTS, CASES, [ext], entries) == []
    # the allowed failure is then judged allowed, as with a real run
    base = run.taken_as_passing([], [ext])
    differences, allowed, unjudged = run.compare(base, ext, entries)
    assert differences == [] and len(allowed) == 1
    # a hunk the allowlist does not expect still needs the real run
    ext['test-b.t#v2'] = other
    assert run.not_passing(TESTS, CASES, [ext], entries) == ['test-b.t']
    # and so does a failure without any hunk (an exit code, a time-out)
    ext['test-b.t#v2'] = {'result': 'failure', 'diff': ''}
    assert run.not_passing(TESTS, CASES, [ext], entries) == ['test-b.t']
    # and an error, which leaves the case out of the report
    del ext['test-b.t#v2']
    assert run.not_passing(TESTS, CASES, [ext], entries) == ['test-b.t']


def test_a_case_run_without_the_extension_is_not_taken_as_passing():
    ext = {'test-a.t': PASS, 'test-b.t#v1': PASS, 'test-b.t#v2': FAIL}
    # the list named test-b.t#v2 alone, and it ran without the extension
    assert run.taken_as_passing(['test-b.t#v2'], [ext]) == {
        'test-a.t': PASS, 'test-b.t#v1': PASS}
    assert run.covers('test-b.t', 'test-b.t#v2')
    assert not run.covers('test-b.t#v1', 'test-b.t#v2')
