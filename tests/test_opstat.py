# test_opstat.py - the timing report's counters: the C type (_opstat.c) and
# the Python one closer.py falls back to, held to the same behaviour
import inspect
import os
import sys
import sysconfig

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), '..'))

sys.path.insert(0, os.path.dirname(__file__))

from cbuild import build_module, load_in_child  # noqa: E402
from hgext3rd.backgroundclose import engine  # noqa: E402
from hgext3rd.backgroundclose.engine import stats as closermod  # noqa: E402

# make test sets this where the C part must have been built (see
# test_closelane.py); on a free-threaded Python it refuses to load
if (
    os.environ.get('BACKGROUNDCLOSE_REQUIRE_NATIVE')
    and os.name == 'posix'
    and not sysconfig.get_config_var('Py_GIL_DISABLED')
):
    assert closermod._opstat is not None, '_opstat.c was not built'

# (OpStat type, the clock its since() reads)
KINDS = [pytest.param((closermod.PythonOpStat, closermod.time.perf_counter),
                      id='python')]
if closermod._opstat is not None:
    KINDS.append(pytest.param(
        (closermod._opstat.OpStat, closermod._opstat.now), id='c'))


@pytest.fixture(params=KINDS)
def kind(request):
    return request.param


def figures(stat):
    return (stat.count, stat.seconds, stat.max, stat.bytes)


def test_the_closer_counts_in_c_where_it_is_built():
    if closermod._opstat is None:
        assert closermod.OpStat is closermod.PythonOpStat
        assert closermod.stat_clock is closermod.time.perf_counter
    else:
        assert closermod.OpStat is closermod._opstat.OpStat
        assert closermod.stat_clock is closermod._opstat.now
    # the closer's own clock, which a report's inline closes are timed with
    clock = inspect.signature(engine.Closer).parameters['clock']
    assert clock.default is closermod.stat_clock


def test_add_counts_sums_and_keeps_the_longest(kind):
    opstat, _clock = kind
    stat = opstat()
    assert figures(stat) == (0, 0.0, 0.0, 0)
    assert stat.mean == 0.0
    stat.add(0.25, 100)
    stat.add(0.75)
    stat.add(0.5, 7)
    assert figures(stat) == (3, 1.5, 0.75, 107)
    assert stat.mean == 0.5


def test_add_many_adds_a_run_of_operations_at_once(kind):
    opstat, _clock = kind
    stat = opstat()
    stat.add(0.5)
    stat.add_many(3, 1.5, 1.0)
    assert figures(stat) == (4, 2.0, 1.0, 0)
    stat.add_many(2, 0.5)  # no longest given: the maximum stays
    assert figures(stat) == (6, 2.5, 1.0, 0)
    stat.add_many(1, 0.25, 0.25, 64)
    assert figures(stat) == (7, 2.75, 1.0, 64)


@pytest.mark.parametrize('other_kind', KINDS)
def test_merge_adds_every_figure_of_either_kind(kind, other_kind):
    one, other = kind[0](), other_kind[0]()
    one.add(0.5, 10)
    other.add(2.0, 5)
    other.add(0.25)
    one.merge(other)
    assert figures(one) == (3, 2.75, 2.0, 15)
    assert figures(other) == (2, 2.25, 2.0, 5)


def test_since_times_from_a_start_read_on_its_clock(kind):
    opstat, clock = kind
    stat = opstat()
    start = clock()
    stat.since(start - 2.0, 9)  # began two seconds before start
    assert stat.count == 1
    assert 2.0 <= stat.seconds < 2.0 + 60  # a bound on the run, not a speed
    assert stat.max == stat.seconds
    assert stat.bytes == 9


def test_the_figures_can_be_set_as_the_callers_count_them(kind):
    opstat, _clock = kind
    stat = opstat()
    stat.bytes += 4096  # a write counted untimed
    stat.count += 2  # mkdirs counted untimed
    assert figures(stat) == (2, 0.0, 0.0, 4096)


def test_wrong_arguments_raise_type_errors_and_change_nothing(kind):
    opstat, clock = kind
    stat = opstat()
    stat.add(0.5, 3)
    before = figures(stat)
    start = clock()
    for call in (
        lambda: stat.add(),
        lambda: stat.add('slow'),
        lambda: stat.add(1.0, 2, 3),
        lambda: stat.add(1.0, 'x'),  # the duration would be taken first
        lambda: stat.add(1.0, 2.5),  # bytes are whole
        lambda: stat.add(1.0, nbytes=3),  # positional only
        lambda: stat.add_many(1),
        lambda: stat.add_many(1.5, 1.0),  # a count is whole
        lambda: stat.add_many(1, 'x'),
        lambda: stat.add_many(2, 1.0, 'x'),
        lambda: stat.add_many(2, 1.0, 2.0, 'x'),
        lambda: stat.since(),
        lambda: stat.since(start, 'x'),
        lambda: stat.merge(object()),
    ):
        with pytest.raises((TypeError, AttributeError)):
            call()
        assert figures(stat) == before


def test_no_attribute_beyond_the_four_figures(kind):
    opstat, _clock = kind
    with pytest.raises(AttributeError):
        opstat().elapsed = 1.0


def test_refuses_to_load_on_a_free_threaded_python(tmp_path):
    # built as for a free-threaded Python (its pyconfig.h defines
    # Py_GIL_DISABLED), against these headers: it must refuse, so that the
    # import does not turn the GIL back on, and closer.py counts in Python
    if os.name != 'posix':
        pytest.skip('_opstat.c is built on POSIX only (setup.py)')
    path = build_module('_opstat', tmp_path, '-DPy_GIL_DISABLED')
    stdout, stderr = load_in_child('freethreaded._opstat', path)
    assert stdout == (
        'ImportError: _opstat is not built for a Python without the '
        'GIL\n'), stderr
