# an update's forked workers given whole directories (checkout/workers.py)
from hypothesis import given, settings, strategies as st
from mercurial import ui as uimod

from hgext3rd.backgroundclose.checkout import workers as updateworkers
from hgext3rd.backgroundclose.shared import compat


def actions(paths):
    """core's get actions for ``paths``, sorted as core sorts them"""
    return [(p, (b'', False), b'remote created') for p in sorted(paths)]


def dirname(action):
    return action[0].rpartition(b'/')[0]


def slices(paths, nslices):
    return list(updateworkers.by_directory(actions(paths), nslices))


def test_each_worker_gets_whole_directories_of_an_even_share():
    # 8 directories of 60 files, 4 workers: two directories each
    paths = [b'd%d/f%02d' % (d, f) for d in range(8) for f in range(60)]
    runs = slices(paths, 4)
    assert [len(run) for run in runs] == [120, 120, 120, 120]
    assert [sorted({dirname(a) for a in run}) for run in runs] == [
        [b'd0', b'd1'], [b'd2', b'd3'], [b'd4', b'd5'], [b'd6', b'd7'],
    ]


def test_a_cut_moves_to_the_nearest_directory_end_within_a_quarter_share():
    # 100 files, 2 workers: the even cut (50) falls inside d1 (40..69);
    # d0 ends at 40, within a quarter share (25) of it, nearer than 70
    paths = ([b'd0/f%02d' % i for i in range(40)]
             + [b'd1/f%02d' % i for i in range(30)]
             + [b'd2/f%02d' % i for i in range(30)])
    assert [len(run) for run in slices(paths, 2)] == [40, 60]


def test_a_directory_larger_than_the_slack_is_cut_at_the_even_share():
    paths = [b'big/f%03d' % i for i in range(100)]
    assert [len(run) for run in slices(paths, 4)] == [25, 25, 25, 25]


def core_s(function):
    """``function`` as if it were core's own ``worker.partition``"""
    function.__module__ = 'mercurial.worker'
    return function


@core_s
def one_in_n(items, nslices):
    return (items[i::nslices] for i in range(nslices))


def paths_of(runs):
    return [[a[0] for a in run] for run in runs]


def test_a_marked_list_is_cut_by_directory_any_other_as_core_does():
    items = actions([b'a/1', b'a/2', b'b/1', b'b/2'])
    marked = updateworkers.DirectoryRuns(items)
    assert paths_of(updateworkers.partition(one_in_n, marked, 2)) == [
        [b'a/1', b'a/2'], [b'b/1', b'b/2']]
    assert paths_of(updateworkers.partition(one_in_n, items, 2)) == [
        [b'a/1', b'b/1'], [b'a/2', b'b/2']]
    # what else core's workers get (lfs's blobs to fetch, during an
    # update too) goes to core's partition, whatever it holds
    blobs = [{b'oid': b'%d' % i, b'size': i} for i in range(5)]
    assert list(updateworkers.partition(one_in_n, blobs, 2)) == [
        blobs[0::2], blobs[1::2]]


def test_another_extension_s_partition_is_left_alone():
    calls = []

    def theirs(items, nslices):
        calls.append(type(items))
        return iter([list(items)])

    marked = updateworkers.DirectoryRuns(actions([b'a/1', b'b/1']))
    assert len(list(updateworkers.partition(theirs, marked, 2))) == 1
    assert calls == [updateworkers.DirectoryRuns]


def ui_with(writes=None):
    """a ui with ``worker.backgroundclosewrites`` set to ``writes``, if
    given"""
    ui = uimod.ui()
    if writes is not None:
        ui.setconfig(b'worker', b'backgroundclosewrites', writes, b'test')
    return ui


def given_to_core(func, ui):
    """what core's worker.worker is given, through the wrapper"""
    seen = []

    def worker(ui, cost, func, staticargs, args, **kwargs):
        seen.append(type(args))
        return iter(())

    updateworkers.run_workers(worker, ui, 0.001, func, (), [(b'a', (), b'')],
                              hasretval=True)
    return seen[0]


def test_only_an_update_s_removals_and_gets_are_marked():
    owner = compat.batchget_owner()
    marked = updateworkers.DirectoryRuns
    assert given_to_core(owner.batchget, ui_with()) is marked
    assert given_to_core(owner.batchremove, ui_with(b'true')) is marked
    # the writers turned off: the checkout is core's, all of it
    assert given_to_core(owner.batchget, ui_with(b'false')) is list
    # anything else core's workers run (lfs's transfers, hg fix)
    assert given_to_core(lambda *args: None, ui_with()) is list


paths = st.lists(
    st.lists(st.sampled_from([b'a', b'b', b'c', b'dd']), min_size=1,
             max_size=4).map(b'/'.join),
    min_size=1, max_size=300, unique=True,
)


@settings(max_examples=300, deadline=None)
@given(paths=paths, nslices=st.integers(1, 16))
def test_every_file_once_in_order_and_shares_near_even(paths, nslices):
    nslices = min(nslices, len(paths))  # as core asks
    items = actions(paths)
    runs = list(updateworkers.by_directory(items, nslices))
    assert len(runs) == nslices
    assert [a for run in runs for a in run] == items
    share = len(items) // nslices
    slack = share // 4
    for run in runs[:-1]:
        assert share - 2 * slack <= len(run) <= share + 1 + 2 * slack
    assert all(runs), 'every worker gets files'


@settings(max_examples=300, deadline=None)
@given(paths=paths, nslices=st.integers(2, 8))
def test_a_directory_is_split_only_where_no_end_is_near(paths, nslices):
    nslices = min(nslices, len(paths))
    items = actions(paths)
    runs = list(updateworkers.by_directory(items, nslices))
    slack = len(items) // nslices // 4
    ends = {i for i in range(1, len(items))
            if dirname(items[i - 1]) != dirname(items[i])}
    cut = 0
    for i, run in enumerate(runs[:-1], 1):
        cut += len(run)
        even = len(items) * i // nslices
        if cut not in ends:
            assert not any(abs(end - even) <= slack and end > cut - len(run)
                           for end in ends), (cut, even)
