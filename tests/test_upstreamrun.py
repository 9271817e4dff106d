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


def test_only_tests_not_passing_everywhere_are_run_without_the_extension():
    ext = {
        'test-a.t': {'result': 'success'},
        'test-b.t#v1': {'result': 'success'},
        'test-b.t#v2': {'result': 'failure', 'diff': ''},
        'test-c.t': {'result': 'skipped'},
        # test-d.t is missing: run-tests.py never ran it
    }
    assert run.not_passing(TESTS, [ext]) == ['test-b.t', 'test-c.t',
                                             'test-d.t']
    # a failure in a second configuration counts too
    other = dict(ext, **{'test-a.t': {'result': 'failure', 'diff': ''}})
    assert run.not_passing(TESTS, [ext, other]) == TESTS
    everything = {t: {'result': 'success'} for t in TESTS}
    assert run.not_passing(TESTS, [everything]) == []


def test_a_failure_with_the_extension_is_judged_against_the_real_run():
    ext = {
        'test-a.t': {'result': 'success'},
        'test-b.t#v1': {'result': 'success'},
        'test-b.t#v2': {'result': 'failure',
                        'diff': '@@ -1 +1 @@\n-expected\n+actual\n'},
    }
    core = {
        'test-b.t#v1': {'result': 'success'},
        'test-b.t#v2': {'result': 'success'},
    }
    base = dict(run.taken_as_passing(core, [ext]), **core)
    assert base['test-a.t'] == {'result': 'success'}
    differences, allowed, unjudged = run.compare(base, ext, [])
    assert [(t, what) for t, what, _lines in differences] == [
        ('test-b.t#v2', 'output differs')]
    assert unjudged == []
    # the same failure without the extension is not the extension's
    core['test-b.t#v2'] = dict(ext['test-b.t#v2'])
    base = dict(run.taken_as_passing(core, [ext]), **core)
    differences, allowed, unjudged = run.compare(base, ext, [])
    assert differences == [] and unjudged == ['test-b.t#v2']


def test_what_the_run_without_the_extension_covers_is_not_overridden():
    core = {'test-c.t': {'result': 'skipped'}}
    ext = {'test-a.t': {'result': 'success'},
           'test-c.t': {'result': 'skipped'}}
    assumed = run.taken_as_passing(core, [ext])
    assert assumed == {'test-a.t': {'result': 'success'}}
