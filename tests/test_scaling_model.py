"""benchmarks/scaling_model.py, the many-core prediction from a traced fit: its
thread sharing of side-by-side class growers follows the fit's, its list schedules
and memory term are the formulas it states (against hand computations on a
synthetic trace)."""

import importlib.util
import math
import os

import numpy as np
import pytest

from gbc_core import _boosting, _openmp

PATH = os.path.join(os.path.dirname(__file__), os.pardir, "benchmarks", "scaling_model.py")
if not os.path.exists(PATH):
    pytest.skip("benchmarks/ is not next to tests/", allow_module_level=True)
spec = importlib.util.spec_from_file_location("scaling_model", PATH)
sm = importlib.util.module_from_spec(spec)
spec.loader.exec_module(sm)


def test_the_growers_threads_are_the_fits():
    for n_threads in range(1, 41):
        for n_growers in range(1, n_threads + 1):
            assert (sm.side_by_side_threads(n_threads, n_growers)
                    == _boosting.side_by_side_threads(n_threads, n_growers))
    assert sm.side_by_side_threads(16, 5) == [4, 3, 3, 3, 3]


def test_the_default_class_mode_is_how_todays_methods_grow_classes():
    """``predict``'s default mode and calibrate's predictions are today's code:
    "share" where every split method grows the trees of an iteration side by side
    (exact too, since issue 33), the measured commits' exact figures "serial"
    (grown before)."""
    from gbc_core import _split_methods

    assert all(m.side_by_side for m in _split_methods.METHODS.values())
    assert sm.DEFAULT_MODE == "share"
    assert sm.mode_of("exact", "today") == "share"
    assert sm.mode_of("hist", "today") == "share"
    assert sm.mode_of("exact", "ea6b64e") == "serial"
    assert sm.mode_of("hist", "ea6b64e") == "one"


def test_side_by_side_where_the_registry_grows_side_by_side():
    """The model's rule of when the trees of an iteration share the threads is
    each split method's (exact: not where some growers would have one thread and
    others two)."""
    from gbc_core import _split_methods

    assert set(sm.UNEVEN_LANES) == set(_split_methods.METHODS)
    for name, method in _split_methods.METHODS.items():
        for p in range(1, 41):
            for k in range(1, 12):
                assert sm.grows_side_by_side(name, p, k) == method.grows_side_by_side(p, k)
    assert not sm.grows_side_by_side("exact", 8, 5)
    assert sm.grows_side_by_side("exact", 10, 5) and sm.grows_side_by_side("exact", 4, 5)
    assert sm.grows_side_by_side("hist", 8, 5)


@pytest.mark.parametrize("kind", ["static", "dynamic"])
def test_schedule_is_the_makespan_of_openmps_schedules(kind):
    rng = np.random.default_rng(0)
    for n, p in [(1, 4), (7, 2), (28, 16), (30, 4), (5, 32)]:
        d = rng.uniform(0.1, 1.0, size=n)
        if kind == "static":
            run = -(-n // min(p, n))
            loads = [d[i:i + run].sum() for i in range(0, n, run)]
        else:
            loads = [0.0] * min(p, n)
            for x in d:
                loads[int(np.argmin(loads))] += x
        assert sm.schedule(d, p, kind) == pytest.approx(max(loads))


def _trace(n_iter, n_classes, region_s, items):
    """A one-thread trace: n_iter x n_classes trees, each holding one leaves region
    (a loop over rows, no task markers) of ``region_s`` CPU seconds over ``items``
    rows and 0.1 s of the tree's own serial code; 0.5 s outside the trees."""
    events = []
    t = 0
    ns = 10**9
    for _ in range(n_iter * n_classes):
        tree_t0 = t
        t += int(0.05 * ns)
        events.append((t, t + int(region_s * ns), t, t + int(region_s * ns), items, 1, 11, 0, 1))
        t += int(region_s * ns) + int(0.05 * ns)
        events.append((tree_t0, t, tree_t0, t, items, 1, 1, 0, 1))
    events.sort()
    events = np.array(events, dtype=_openmp.TRACE_DTYPE)
    fit_s = (t + int(0.5 * ns)) / ns
    meta = {"rows": items, "classes": n_classes, "method": "hist", "n_jobs": 1,
            "fit_c0": 0, "fit_c1": int(fit_s * ns)}
    return events, meta


def test_side_by_side_lanes_share_the_threads_as_the_fit_does():
    events, meta = _trace(n_iter=2, n_classes=5, region_s=1.0, items=1_000_000)
    machine = sm.Machine(sync2=1e-3, memory=False, clock=0.0)
    sync = machine.sync
    outside = 0.5
    # Every tree on 16 threads, one after another.
    serial = outside + 10 * (0.1 + 1.0 / 16 + sync(16))
    assert sm.predict(events, meta, 16, machine, mode="serial") == pytest.approx(serial)
    # Five one-thread growers: an iteration costs one tree's one-thread time.
    one = outside + 2 * (0.1 + 1.0)
    assert sm.predict(events, meta, 16, machine, mode="one") == pytest.approx(one)
    # Growers of 4, 3, 3, 3, 3 threads: an iteration costs the 3-thread growers' tree.
    share = outside + 2 * (0.1 + 1.0 / 3 + sync(3))
    assert sm.predict(events, meta, 16, machine, mode="share") == pytest.approx(share)
    # 3 threads, 5 classes: 3 one-thread growers side by side (trees 0-2), then trees
    # 3 and 4 on every thread.
    left_over = 2 * (0.1 + 1.0 / 3 + sync(3))
    assert sm.predict(events, meta, 3, machine, mode="share") == pytest.approx(
        outside + 2 * (0.1 + 1.0) + 2 * left_over)
    assert sm.predict(events, meta, 1, machine, mode="share") == pytest.approx(
        outside + 10 * 1.1)


def test_the_memory_term_is_the_bytes_the_caches_miss_over_the_bandwidths():
    rows = 1_000_000
    events, meta = _trace(n_iter=1, n_classes=1, region_s=1.0, items=rows)
    meta["classes"] = 2
    per_item, factor, ws_row, shared = sm.MEMORY[11]
    assert not shared
    mib = 1 << 20
    kw = dict(bw_l3_core=10e9, bw_dram_core=5e9, bw_dram=30e9)
    for l2, l3, p in [(2 * mib, 105 * mib, 16), (2 * mib, 8 * mib, 16),
                      (2 * mib, 8 * mib, 1), (64 * mib, 128 * mib, 4)]:
        machine = sm.Machine(sync2=0.0, l2=l2, l3=l3, clock=0.0, **kw)
        moved = rows * per_item * factor
        ws = ws_row * rows
        m2 = max(0.0, 1 - l2 / (ws / p))
        m3 = max(0.0, 1 - l3 / ws)
        # The L3's share at 10 GB/s per busy thread (P x 10 GB/s in all), DRAM's
        # at 5 GB/s per thread up to 30 GB/s.
        mem = (moved * max(0.0, m2 - m3) / (p * 10e9)
               + moved * m3 / min(p * 5e9, 30e9))
        expected = 0.5 + 0.1 + 1.0 / p + mem
        assert sm.predict(events, meta, p, machine) == pytest.approx(expected)
    # Growers side by side split the L3 and the DRAM bandwidth.
    machine = sm.Machine(sync2=0.0, l2=2 * mib, l3=105 * mib, clock=0.0, **kw)
    l3, dram = sm.region_memory(sm.regions_of(events)[0][0], 4, machine, rows, share=4)
    assert dram == pytest.approx(rows * per_item * factor * (1 - 105 * mib / 4 / (ws_row * rows)))
    assert math.isfinite(l3)


def test_row_block_tasks_follow_the_finders_plan():
    """The build tasks of a level the finder cuts into row blocks: a 1M-row root on
    16 threads (28 features) becomes K x 7 block tasks sharing its time, K the
    finder's own plan, and 28 merge tasks; on 2 threads it stays in its groups."""
    from gbc_core._histogram_splitter import row_block_plan

    n = 1_000_000
    k = int(row_block_plan([n], 28, 16, n)[0])
    assert k > 1
    build, merge = sm.row_block_tasks([2.0], n, 28, 16, n)
    assert len(build) == k * 7 and len(merge) == 28
    assert math.isclose(build.sum(), 2.0)
    assert np.allclose(merge, (k - 1) * sm.HIST_STRIDE * sm.MERGE_S)
    build, merge = sm.row_block_tasks([2.0], n, 28, 2, n)
    assert len(build) == sm.hist_groups(28, 2) and len(merge) == 0
    assert math.isclose(build.sum(), 2.0)
    # Two nodes whose times say 3:1 of the rows: each its own plan.
    build, _ = sm.row_block_tasks([3.0, 1.0], n, 28, 16, n)
    blocks = row_block_plan([750_000, 250_000], 28, 16, n)
    g = sm.hist_groups(28, 16)
    assert len(build) == sum(int(b) * 7 if b > 1 else g for b in blocks)


def test_root_block_tasks_follow_the_finders_rule():
    """The exact root's scan tasks at P threads: the finder's own rule
    (``root_block_plan``): at 1M rows with 28 features, 16 threads block the last 12
    features into 31 blocks each (their time shared out), after the 16 whole ones,
    with block sums of the measured share of a mean scan per blocked feature, in
    the finder's 62 row chunks (``sum_chunk_plan``; one task per feature for the
    code before them); 2 and 32 threads keep the 28 whole features and no block
    sums."""
    from gbc_core._exact_splitter import root_block_plan

    n = 1_000_000
    dur = np.linspace(1.0, 2.0, 28)
    k, _, n_blocks, _ = root_block_plan(n, 28, 16)
    assert (k, n_blocks) == (12, 31)
    tasks, passes = sm.root_block_tasks(dur, 16, n)
    assert len(tasks) == 16 + 12 * 31
    np.testing.assert_array_equal(tasks[:16], dur[:16])
    assert math.isclose(tasks[16:].sum(), dur[16:].sum())
    assert np.allclose(tasks[16:16 + 31], dur[16] / 31)
    total = 12 * sm.block_pass_share(n) * dur.mean()
    assert len(passes) == 62 and math.isclose(passes.sum(), total)
    np.testing.assert_allclose(passes[:61], total * 16384 / n)
    _, by_feature = sm.root_block_tasks(dur, 16, n, chunked=False)
    assert len(by_feature) == 12
    assert np.allclose(by_feature, sm.block_pass_share(n) * dur.mean())
    assert sm.block_pass_share(n) == 0.14 and sm.block_pass_share(200_000) == 0.24
    assert 0.14 < sm.block_pass_share(500_000) < 0.24
    for p in (2, 32):
        tasks, passes = sm.root_block_tasks(dur, p, n)
        np.testing.assert_array_equal(tasks, dur)
        assert len(passes) == 0


def test_child_block_tasks_follow_the_finders_rule():
    """The exact root's children's tasks at P threads: the root's rule
    (``root_block_plan``) carried down: at 1M rows with 28 features, 16 threads
    cut the last 12 features' tasks into 31 blocks each (``EXACT_CHILD_BLOCKS`` of
    the feature's time shared out), after the 16 whole ones, with counts of
    ``EXACT_CHILD_PASS`` of a mean task per blocked feature in the finder's 62 row
    chunks (one task per feature for the code before them); 2 and 32 threads keep
    the 28 whole features and no counts."""
    n = 1_000_000
    dur = np.linspace(1.0, 2.0, 28)
    tasks, passes = sm.child_block_tasks(dur, 16, n)
    assert len(tasks) == 16 + 12 * 31
    np.testing.assert_array_equal(tasks[:16], dur[:16])
    assert math.isclose(tasks[16:].sum(), dur[16:].sum() * sm.EXACT_CHILD_BLOCKS)
    assert np.allclose(tasks[16:16 + 31], dur[16] * sm.EXACT_CHILD_BLOCKS / 31)
    total = 12 * sm.EXACT_CHILD_PASS * dur.mean()
    assert len(passes) == 62 and math.isclose(passes.sum(), total)
    _, by_feature = sm.child_block_tasks(dur, 16, n, chunked=False)
    assert len(by_feature) == 12
    assert np.allclose(by_feature, sm.EXACT_CHILD_PASS * dur.mean())
    for p in (2, 32):
        tasks, passes = sm.child_block_tasks(dur, p, n)
        np.testing.assert_array_equal(tasks, dur)
        assert len(passes) == 0


def test_child_block_tasks_are_the_finders_plan():
    """The model cuts the children's tasks where the code does
    (``child_block_plan``, the finder's own rule): the root's rule on min(P,
    features) threads (5 features on 8 threads: the rule of 5 threads, no blocks;
    on 4 threads one), at most the root's blocked features, and none without node
    segments (2M x 28: more than 2^25 values), where the root's own blocks stay
    (``root_block_tasks``)."""
    from gbc_core._exact_splitter import child_block_plan, root_block_plan
    for n, d in ((1_000_000, 28), (2_000_000, 28), (40_000, 5), (40_000, 8),
                 (300_000, 12), (10_000_000, 3)):
        dur = np.linspace(1.0, 2.0, d)
        for p in (2, 4, 6, 8, 12, 16, 32, 64):
            k, _, n_blocks = child_block_plan(n, d, p)
            tasks, passes = sm.child_block_tasks(dur, p, n, chunked=False)
            assert len(passes) == k
            assert len(tasks) == d - k + k * n_blocks
            assert k <= root_block_plan(n, d, p)[0]
            assert k == (0 if n * d > 2 ** 25 else
                         min(root_block_plan(n, d, p)[0],
                             root_block_plan(n, d, min(p, d))[0]))
    assert child_block_plan(2_000_000, 28, 16)[0] == 0
    assert root_block_plan(2_000_000, 28, 16)[0] > 0
    tasks, passes = sm.child_block_tasks(np.ones(28), 16, 2_000_000)
    assert len(tasks) == 28 and len(passes) == 0
    tasks, passes = sm.root_block_tasks(np.ones(28), 16, 2_000_000)
    assert len(tasks) > 28 and len(passes) > 0
    assert child_block_plan(40_000, 5, 8)[0] == 0 < root_block_plan(40_000, 5, 16)[0]
    assert child_block_plan(40_000, 5, 4)[0] == 1


SRC = os.path.join(os.path.dirname(__file__), os.pardir, "src", "gbc_core")
# Phases the code runs with two schedules: the grid's block maxima (static in
# _put_on_grid, dynamic in _grid_and_root; equal blocks of rows either way).
EITHER_SCHEDULE = {2}


def _trace_numbers():
    import re

    with open(os.path.join(SRC, "_trace.h")) as f:
        return {m.group(1): int(m.group(2))
                for m in re.finditer(r"#define (GBC_TR_\w+) (\d+)", f.read())}


def _markers():
    """Every trace marker of the kernels' source: (file, line, REGION or TASK, its
    number, the schedule of the prange it times, or None)."""
    import glob
    import re

    numbers = _trace_numbers()
    out = []
    for path in sorted(glob.glob(os.path.join(SRC, "*.pyx"))
                       + glob.glob(os.path.join(SRC, "*.pxi"))):
        lines = open(path).read().split("\n")
        for i, line in enumerate(lines):
            m = re.search(r"GBC_TRACE_(?:(REGION)_END|(TASK)_BEGIN)\((\w+)", line)
            if not m:
                continue
            kind, name = m.group(1) or m.group(2), m.group(3)
            if name == "phase":
                # A phase chosen per task (the histogram build): the value assigned.
                names = re.findall(r"phase = (GBC_TR_\w+)", "\n".join(lines[i - 3:i]))
                assert names, f"{path}:{i + 1}"
            else:
                names = [name]
            schedule = None
            if kind == "TASK":
                for j in range(i - 1, max(-1, i - 40), -1):
                    s = re.search(r"prange\(.*schedule=\"(\w+)\"", lines[j])
                    if s:
                        schedule = s.group(1)
                        break
            for n in names:
                out.append((os.path.basename(path), i + 1, kind, numbers[n], schedule))
    return out


@pytest.mark.skipif(not os.path.exists(os.path.join(SRC, "_trace.h")),
                    reason="the source is not next to tests/")
def test_the_model_knows_every_region_and_phase_the_code_records():
    numbers = _trace_numbers()
    # Every number of _trace.h is a region or a phase of the model.
    assert set(numbers.values()) <= set(sm.REGIONS) | set(sm.PHASES), (
        sorted(set(numbers.values()) - set(sm.REGIONS) - set(sm.PHASES)))
    # Every region but the tree has its memory row.
    assert set(sm.MEMORY) >= set(sm.REGIONS) - {1}
    markers = _markers()
    assert len(markers) > 50
    for where, line, kind, number, schedule in markers:
        if kind == "REGION":
            assert number in sm.REGIONS, (where, line, number)
        else:
            assert number in sm.PHASES, (where, line, number)
            assert schedule is not None, (where, line)
            if number not in EITHER_SCHEDULE:
                assert sm.PHASES[number] == schedule, (where, line, number, schedule)
    # The regions and phases the code records are every one of the model's (no
    # stale entry), the tree's region being recorded by the grower.
    assert {m[3] for m in markers if m[2] == "REGION"} == set(sm.REGIONS)
    assert {m[3] for m in markers if m[2] == "TASK"} == set(sm.PHASES)
    # A retired phase is no number of _trace.h's any more, nor one of the model's.
    assert not set(sm.RETIRED_PHASES) & (set(numbers.values()) | set(sm.PHASES))


def test_a_trace_with_a_region_or_phase_the_model_does_not_know_is_refused():
    events, meta = _trace(n_iter=1, n_classes=1, region_s=0.5, items=1_000_000)
    machine = sm.Machine(sync2=1e-3, memory=False, clock=0.0)
    assert sm.predict(events, meta, 4, machine) > 0
    for kind, number, what in [(1, 99, r"regions \[99\]"), (0, 98, r"phases \[98\]"),
                               (2, 11, r"kinds \[2\]"),
                               (0, 16, r"older code: .*retired task phases 16 ")]:
        bad = events.copy()
        bad[0]["kind"], bad[0]["id"] = kind, number
        with pytest.raises(ValueError, match=what):
            sm.predict(bad, meta, 4, machine)
        with pytest.raises(ValueError, match=what):
            sm.regions_of(bad)


def test_the_fused_grid_region_is_its_tasks_a_divisible_pass_and_one_sums_task():
    """Region 3 with its block maxima as phase-2 tasks (``_grid_and_root``): the
    tasks list-scheduled, the rest of the region's time a pass divided among the
    threads beside the root's sums on one thread (``GRID_ROOT_SUMS`` of it; two
    loops' synchronisation), or, residuals in place, followed by them (three)."""
    ns = 10**9
    rows = 1_000_000
    tasks = [(i * ns // 100, (i + 1) * ns // 100, i * ns // 100, (i + 1) * ns // 100,
              i, 0, 2, 0, 1) for i in range(8)]  # 8 tasks of 0.01 s
    region = (0, 2 * ns, 0, 2 * ns, rows, 1, 3, 0, 1)  # 0.08 s tasks, 1.92 s rest
    tree = (0, 3 * ns, 0, 3 * ns, rows, 1, 1, 0, 1)
    events = np.array(sorted([region, tree] + tasks), dtype=_openmp.TRACE_DTYPE)
    meta = {"rows": rows, "classes": 2, "method": "hist", "n_jobs": 1,
            "fit_c0": 0, "fit_c1": 4 * ns}
    machine = sm.Machine(sync2=1e-3, memory=False, clock=0.0)
    r = sm.regions_of(events)[0][0]
    s = sm.GRID_ROOT_SUMS
    for p in (2, 4, 16):
        tasks = sm.schedule(np.full(8, 0.01), p, "dynamic")
        comp, busy = sm.region_compute(r, p, machine)
        assert comp == pytest.approx(tasks + max(1.92 * s, 1.92 / p) + 2 * machine.sync(p))
        assert busy == p   # (16 threads, 8 maxima tasks: the rows' loop on all 16)
        comp, busy = sm.region_compute(r, p, machine, grid_in_place=True)
        assert comp == pytest.approx(tasks + 1.92 * (1 - s) / p + 1.92 * s
                                     + 3 * machine.sync(p))
    assert sm.region_compute(r, 1, machine)[0] == pytest.approx(2.0)
    # The serial stretches: 1 s in the tree, 1 s outside it.
    pl = sm.plan(events, meta, 4, machine)
    parts = pl.parts(machine)
    assert parts["serial, in trees"][0] == pytest.approx(1.0)
    assert parts["serial, outside trees"][0] == pytest.approx(1.0)
    assert sum(v[0] for v in parts.values()) == pytest.approx(pl.seconds(machine))


def test_the_fused_grid_region_without_maxima_tasks_keeps_its_sums_task():
    """Region 3 with no task (the grid's maxima came with the last update, so the
    region starts at its rows' loop: ``_grid_and_root`` with ``grid_maxima``): the
    root's sums are still one task (``GRID_ROOT_SUMS`` of the region), not a pass
    divided among the threads."""
    ns = 10**9
    rows = 1_000_000
    region = (0, 2 * ns, 0, 2 * ns, rows, 1, 3, 0, 1)  # 2 s, no task
    tree = (0, 3 * ns, 0, 3 * ns, rows, 1, 1, 0, 1)
    events = np.array(sorted([region, tree]), dtype=_openmp.TRACE_DTYPE)
    machine = sm.Machine(sync2=1e-3, memory=False, clock=0.0)
    r = sm.regions_of(events)[0][0]
    assert not r.phases
    s = sm.GRID_ROOT_SUMS
    for p in (2, 4, 16):
        comp, busy = sm.region_compute(r, p, machine)
        assert comp == pytest.approx(max(2.0 * s, 2.0 / p) + machine.sync(p))
        assert comp > 2.0 / p or p == 2
        # Its rows' loop on every thread: its traffic fetched by all of them.
        assert busy == p
        comp, busy = sm.region_compute(r, p, machine, grid_in_place=True)
        assert comp == pytest.approx(2.0 * (1 - s) / p + 2.0 * s + 2 * machine.sync(p))
        assert busy == p
        assert sm.region_compute(r, p, machine, wr2_later=True)[1] == p
    assert sm.region_compute(r, 1, machine) == (pytest.approx(2.0), 1)


def _fused_grid_pass(rows):
    """A fused grid pass's events from 0 to 2 s: 8 maxima tasks of 0.01 s (phase
    2) and the region (3), whose other 1.92 s are outside its tasks."""
    ns = 10**9
    grid_tasks = [(i * ns // 100, (i + 1) * ns // 100, i * ns // 100, (i + 1) * ns // 100,
                   i, 0, 2, 0, 1) for i in range(8)]
    grid = (0, 2 * ns, 0, 2 * ns, rows, 1, 3, 0, 1)
    return grid_tasks, grid


def test_the_roots_wr2_is_the_first_task_of_the_roots_build_loop():
    """A trace whose root build holds the root's w r^2 (phase 32, ``ROOT_WR2``):
    that task is scheduled first among the build loop's tasks (not a loop of its
    own), and the fused grid region's rest is its rows' pass alone, divisible (two
    loops' synchronisation: the maxima's and the rows')."""
    ns = 10**9
    rows, d = 1_000_000, 28
    grid_tasks, grid = _fused_grid_pass(rows)
    t0 = 2 * ns
    side = (t0, t0 + ns // 2, t0, t0 + ns // 2, 0, 0, 32, 0, 1)  # 0.5 s
    build = [(t0 + ns // 2 + i * ns // 100, t0 + ns // 2 + (i + 1) * ns // 100,
              t0 + ns // 2 + i * ns // 100, t0 + ns // 2 + (i + 1) * ns // 100,
              i, 0, 5, 0, 1) for i in range(7)]  # one node's 7 groups of 0.01 s
    hist = (t0, t0 + ns, t0, t0 + ns, rows * d, 1, 5, 0, 1)
    tree = (0, 4 * ns, 0, 4 * ns, rows, 1, 1, 0, 1)
    events = np.array(sorted([grid, tree, hist, side] + grid_tasks + build),
                      dtype=_openmp.TRACE_DTYPE)
    meta = {"rows": rows, "classes": 2, "method": "hist", "n_jobs": 1,
            "fit_c0": 0, "fit_c1": 5 * ns}
    machine = sm.Machine(sync2=1e-3, memory=False, clock=0.0)
    regions = sm.regions_of(events)[0]
    g, h = regions
    assert (g.rid, h.rid) == (3, 5) and set(h.phases) == {5, 32}
    for p in (2, 4, 16):
        tasks = sm.schedule(np.full(8, 0.01), p, "dynamic")
        comp, _ = sm.region_compute(g, p, machine, wr2_later=True)
        assert comp == pytest.approx(tasks + 1.92 / p + 2 * machine.sync(p))
        comp, busy = sm.region_compute(h, p, machine, n_features=d)
        groups = sm.hist_groups(d, p)
        expected = sm.schedule(np.concatenate([[0.5], np.full(groups, 0.07 / groups)]),
                               p, "dynamic")
        # (The rest of the region, 0.43 s, serial; one loop.)
        assert comp == pytest.approx(0.43 + expected + machine.sync(p))
        assert comp >= 0.43 + 0.5
    # One thread: everything in turn.
    assert sm.region_compute(h, 1, machine)[0] == pytest.approx(1.0)
    # The plan knows the grid pass left its w r^2: the grid region divisible.
    pl = sm.plan(events, meta, 16, machine)
    assert pl.parts(machine)["grid_rows"][0] == pytest.approx(
        sm.schedule(np.full(8, 0.01), 16, "dynamic") + 1.92 / 16
        + 2 * machine.sync(16))


def test_the_roots_wr2_is_a_task_of_the_exact_roots_scan_after_its_whole_features():
    """An exact trace whose root scan holds the root's w r^2 (phase 32, the exact
    finder's side task): that task is scheduled in the scan's loop after the whole
    features' tasks and before the root's blocks (``_exact_splitter``'s
    ``collect``), not as a loop of its own, and the fused grid region's rest is its
    rows' pass alone, divisible."""
    from gbc_core._exact_splitter import root_block_plan

    ns = 10**9
    rows, d = 1_000_000, 27
    grid_tasks, grid = _fused_grid_pass(rows)
    t0 = 2 * ns
    feature = ns // 10  # each feature's scan 0.1 s
    scan = [(t0 + i * feature, t0 + (i + 1) * feature, t0 + i * feature,
             t0 + (i + 1) * feature, i, 0, 8, 0, 1) for i in range(d)]
    t1 = t0 + d * feature
    side = (t1, t1 + ns // 20, t1, t1 + ns // 20, d, 0, 32, 0, 1)  # 0.05 s
    root = (t0, t1 + ns // 10, t0, t1 + ns // 10, rows * d, 1, 8, 0, 1)  # 0.05 s rest
    tree = (0, 6 * ns, 0, 6 * ns, rows, 1, 1, 0, 1)
    events = np.array(sorted([grid, tree, root, side] + grid_tasks + scan),
                      dtype=_openmp.TRACE_DTYPE)
    meta = {"rows": rows, "classes": 2, "method": "exact", "n_jobs": 1,
            "fit_c0": 0, "fit_c1": 7 * ns}
    machine = sm.Machine(sync2=1e-3, memory=False, clock=0.0)
    g, h = sm.regions_of(events)[0]
    assert (g.rid, h.rid) == (3, 8) and set(h.phases) == {8, 32}
    whole = np.full(d, 0.1)
    for p in (2, 3, 4, 16):
        k = root_block_plan(rows, d, p)[0]
        tasks, passes = sm.root_block_tasks(whole, p, rows)
        expected = sm.schedule(np.concatenate([tasks[:d - k], [0.05], tasks[d - k:]]),
                               p, "dynamic")
        if len(passes):
            expected += sm.schedule(passes, p, "dynamic") + machine.sync(p)
        comp, _ = sm.region_compute(h, p, machine, n_features=d, n_samples=rows,
                                    root_blocks=True)
        assert comp == pytest.approx(0.05 + expected + machine.sync(p))
        comp, _ = sm.region_compute(g, p, machine, wr2_later=True)
        assert comp == pytest.approx(sm.schedule(np.full(8, 0.01), p, "dynamic")
                                     + 1.92 / p + 2 * machine.sync(p))
    # Two threads, no blocks: 27 features end at 1.4 and 1.3 s; the w r^2 fills
    # the second thread's end, not a loop after the scan.
    comp, _ = sm.region_compute(h, 2, machine, n_features=d, n_samples=rows,
                                root_blocks=True)
    assert comp == pytest.approx(0.05 + 1.4 + machine.sync(2))
    assert sm.region_compute(h, 1, machine, root_blocks=True,
                             n_samples=rows)[0] == pytest.approx(2.8)
    # The plan: the root's scan is the tree's first, and the grid region divisible.
    pl = sm.plan(events, meta, 16, machine, root_blocks=True)
    parts = pl.parts(machine)
    assert parts["grid_rows"][0] == pytest.approx(
        sm.schedule(np.full(8, 0.01), 16, "dynamic") + 1.92 / 16 + 2 * machine.sync(16))
    k = root_block_plan(rows, d, 16)[0]
    assert k > 0
    tasks, passes = sm.root_block_tasks(whole, 16, rows)
    assert parts["exact_scan"][0] == pytest.approx(
        0.05 + sm.schedule(np.concatenate([tasks[:d - k], [0.05], tasks[d - k:]]), 16,
                           "dynamic") + sm.schedule(passes, 16, "dynamic")
        + 2 * machine.sync(16))


def test_the_exact_scan_has_one_thread_per_feature_at_most_but_a_blocked_roots():
    """The exact scan's loop runs on min(threads, features) threads
    (``_exact_splitter``'s ``collect``: a scratch buffer per thread), but for a
    blocked root's: the root's w r^2 beside 12 whole features on 16 threads waits
    for a thread that has scanned a feature (where the root is not blocked:
    ``root_block_plan(50_000, 12, 16)`` blocks none), and a level's pair tasks
    (two per feature) share the features' threads."""
    from gbc_core._exact_splitter import root_block_plan

    ns = 10**9
    rows, d = 50_000, 12
    assert root_block_plan(rows, d, 16)[0] == 0
    t0 = ns
    feature = ns // 10  # each feature's scan 0.1 s
    scan = [(t0 + i * feature, t0 + (i + 1) * feature, t0 + i * feature,
             t0 + (i + 1) * feature, i, 0, 8, 0, 1) for i in range(d)]
    t1 = t0 + d * feature
    side = (t1, t1 + ns // 20, t1, t1 + ns // 20, d, 0, 32, 0, 1)  # 0.05 s
    root = (t0, t1 + ns // 20, t0, t1 + ns // 20, rows * d, 1, 8, 0, 1)
    events = np.array(sorted([root, side] + scan), dtype=_openmp.TRACE_DTYPE)
    machine = sm.Machine(sync2=1e-3, memory=False, clock=0.0)
    (h,) = sm.regions_of(events)[0]
    comp, busy = sm.region_compute(h, 16, machine, n_features=d, n_samples=rows,
                                   root_blocks=True)
    assert comp == pytest.approx(0.15 + machine.sync(16))
    assert busy == d
    # A level of two pairs: 2 d tasks of 0.05 s on d threads, two waves.
    pairs = [(t0 + i * feature // 2, t0 + (i + 1) * feature // 2, t0 + i * feature // 2,
              t0 + (i + 1) * feature // 2, i, 0, 8, 0, 1) for i in range(2 * d)]
    level = (t0, t0 + d * feature, t0, t0 + d * feature, rows * d, 1, 8, 0, 1)
    (h,) = sm.regions_of(np.array(sorted([level] + pairs),
                                  dtype=_openmp.TRACE_DTYPE))[0]
    comp, busy = sm.region_compute(h, 32, machine, n_features=d, n_samples=rows)
    assert comp == pytest.approx(0.1 + machine.sync(32))
    assert busy == d


def test_the_parts_of_side_by_side_lanes_are_the_busiest_lanes():
    events, meta = _trace(n_iter=2, n_classes=5, region_s=1.0, items=1_000_000)
    machine = sm.Machine(sync2=1e-3, memory=False, clock=0.0)
    for p, mode in [(16, "share"), (3, "share"), (16, "one"), (16, "serial"), (1, "share")]:
        pl = sm.plan(events, meta, p, machine, mode=mode)
        parts = pl.parts(machine)
        assert sum(v[0] for v in parts.values()) == pytest.approx(pl.seconds(machine))
        assert parts["serial, outside trees"][0] == pytest.approx(0.5)


def test_the_leaf_sums_stretch_runs_as_the_span_tasks_on_p_threads():
    """In a one-thread trace of the code before the leaf sums' row blocks, the
    serial stretch between a tree and its update's leaves region is the leaf sums
    (that code ran them in a region only on more threads): on P threads its time x
    the spans' shares list-scheduled, plus a loop's synchronisation; on one
    thread, or below LEAF_SUMS_FROM rows, as traced."""
    ns = 10**9
    rows = 1_000_000
    events = []
    t = 0
    for _ in range(3):
        events.append((t, t + ns, t, t + ns, rows, 1, 1, 0, 1))  # the tree
        t += ns + ns // 2  # 0.5 s of leaf sums
        events.append((t, t + ns, t, t + ns, rows, 1, 11, 0, 1))  # its leaves region
        t += ns
    events = np.array(sorted(events), dtype=_openmp.TRACE_DTYPE)
    meta = {"rows": rows, "classes": 2, "method": "hist", "n_jobs": 1,
            "fit_c0": 0, "fit_c1": t}
    regions, trees = sm.regions_of(events)
    assert [g for _, g in sm.leaf_sum_gaps(regions, trees)] == pytest.approx([0.5] * 3)
    machine = sm.Machine(sync2=1e-3, memory=False, clock=0.0)
    shares = np.array(sm.LEAF_SPANS)
    for p in (1, 2, 3, 16):
        sums = 0.5 if p == 1 else (sm.schedule(0.5 * shares, p, "dynamic") + machine.sync(p))
        expected = 3 * (1.0 + 1.0 / p + machine.sync(p) + sums)
        pl = sm.plan(events, meta, p, machine)
        assert pl.seconds(machine) == pytest.approx(expected)
        assert pl.parts(machine)["leaf_sums"][0] == pytest.approx(3 * sums)
    # Below LEAF_SUMS_FROM rows the code sums on one thread.
    meta_small = dict(meta, rows=100_000)
    small = events.copy()
    small["index"] = 100_000
    sm._REGIONS_CACHE.clear()
    assert sm.plan(small, meta_small, 16, machine).parts(machine)["leaf_sums"][0] == (
        pytest.approx(1.5))
    assert sm.leaf_sums_seconds(0.5, 16, machine, 1_000_000)[0] >= 0.5 * shares.max()


def test_the_leaf_sums_in_row_blocks_run_as_recorded():
    """Since the leaf sums in row blocks (``LEAF_BLOCKS``), a one-thread trace holds
    them as phase-23 tasks in the update's leaves region, before its update's
    chunks (phase 24): the stretch before that region is not taken as the sums,
    and on P threads the blocks are list-scheduled as recorded. Read as the code
    before them (``leaf_blocks=False``), the same tasks' work runs as the spans'
    shares (``LEAF_SPANS``), or on one thread without the passes on every
    thread."""
    ns = 10**9
    rows = 1_000_000
    events = []
    t = 0
    for _ in range(3):
        events.append((t, t + ns, t, t + ns, rows, 1, 1, 0, 1))  # the tree
        t += ns + ns // 10  # 0.1 s: the update's call
        start = t
        for b in range(32):  # the sums' blocks, 1/64 s each
            events.append((t, t + ns // 64, t, t + ns // 64, b, 0, 23, 0, 1))
            t += ns // 64
        for c in range(16):  # the update's chunks, 1/32 s each
            events.append((t, t + ns // 32, t, t + ns // 32, c, 0, 24, 0, 1))
            t += ns // 32
        events.append((start, t, start, t, rows, 1, 11, 0, 1))  # the leaves region
    events = np.array(sorted(events), dtype=_openmp.TRACE_DTYPE)
    meta = {"rows": rows, "classes": 2, "method": "hist", "n_jobs": 1,
            "fit_c0": 0, "fit_c1": t}
    sm._REGIONS_CACHE.clear()
    regions, trees = sm.regions_of(events)
    assert sm.leaf_sum_gaps(regions, trees) == []
    machine = sm.Machine(sync2=1e-3, memory=False, clock=0.0)
    blocks, chunks = np.full(32, 1 / 64), np.full(16, 1 / 32)
    shares = np.array(sm.LEAF_SPANS)
    for p in (1, 2, 3, 16):
        sync = 2 * machine.sync(p) if p > 1 else 0.0
        update = sm.schedule(chunks, p, "dynamic") + sync
        as_blocks = sm.plan(events, meta, p, machine).parts(machine)["leaves"][0]
        assert as_blocks == pytest.approx(3 * (sm.schedule(blocks, p, "dynamic") + update))
        spans = sm.plan(events, meta, p, machine, leaf_blocks=False).parts(machine)
        sums = 0.5 if p == 1 else sm.schedule(0.5 * shares, p, "dynamic")
        assert spans["leaves"][0] == pytest.approx(3 * (sums + update))
        serial = sm.plan(events, meta, p, machine, leaf_blocks=False,
                         passes_on_threads=False).parts(machine)
        assert serial["leaves"][0] == pytest.approx(3 * (0.5 + update))
        if p == 16:
            assert as_blocks < spans["leaves"][0] < serial["leaves"][0]
    assert sm.LEAF_BLOCKS == {"8186671": False, "4276457": False, "ea6b64e": False,
                              "c26bafb": True, "today": True}


def test_synchronisation_counts_the_tasks_one_loop_hands_out_together():
    """``sync_from`` on a two-thread trace: per region, wall - each loop's busiest
    thread, over its loops, where one loop hands out the root's w r^2 (phase 32)
    beside the build's tasks (phase 5) and, in a level with row blocks, the
    blocked nodes' tasks (29) beside the others' (5). Counted one phase at a time,
    the build loop's busiest threads add up to more than the region's wall (a
    synchronisation of 0)."""
    ns = 10**9
    ms = ns // 1000

    def task(t0, t1, phase, tid):
        return (t0, t1, t0, t1, 0, 0, phase, 0, tid)

    events = [
        (0, 10 * ms, 0, 10 * ms, 1000, 1, 5, 0, 1),       # the root's build region
        task(0, 2 * ms, 15, 1), task(0, 2 * ms, 15, 2),    # gather: 2 ms
        task(3 * ms, 8 * ms, 32, 2),                       # the root's w r^2: 5 ms
        task(3 * ms, 6 * ms, 5, 1), task(6 * ms, 9 * ms, 5, 1),  # build: 6 ms
        (20 * ms, 30 * ms, 20 * ms, 30 * ms, 1000, 1, 5, 0, 1),  # a level's build
        task(20 * ms, 25 * ms, 29, 1), task(20 * ms, 23 * ms, 5, 2),
        task(23 * ms, 27 * ms, 29, 2),                     # thread 2: 7 ms
    ]
    events = np.array(sorted(events), dtype=_openmp.TRACE_DTYPE)
    sm._REGIONS_CACHE.clear()
    root, level = sm.regions_of(events)[0]
    assert set(root.phases) == {15, 32, 5} and set(level.phases) == {5, 29}
    assert sorted(len(loop) for loop in sm.region_loops(root)) == [2, 3]
    assert [len(loop) for loop in sm.region_loops(level)] == [3]
    # The root's w r^2 beside a level's blocked tasks alone, and beside an exact
    # root's scan: one loop each.
    for host in (29, 8):
        region = events[(events["kind"] == 1) & (events["t0"] == 0)][0]
        r = sm.Region(region, [e for e in events if e["kind"] == 0 and e["t0"] < 20 * ms
                               and e["id"] in (5, 32)])
        r.phases = {host: r.phases[5], 32: r.phases[32]}
        assert [len(loop) for loop in sm.region_loops(r)] == [3]
    # Root: (10 - 2 - 6) / 2 loops = 1 ms; the level: (10 - 7) / 1 loop = 3 ms.
    meta = {"n_jobs": 2}
    assert sm.sync_from(events, meta) == pytest.approx(np.percentile([1e-3, 3e-3], 5))
    # One phase at a time the root's busiest threads would take 2 + 5 + 6 > 10 ms.
    root_only = events[events["t0"] < 20 * ms]
    sm._REGIONS_CACHE.clear()
    assert sm.sync_from(root_only, meta) == pytest.approx(1e-3)
    sm._REGIONS_CACHE.clear()


def test_the_leaf_sums_pass_moves_r_p_and_the_leaf_of_each_row():
    """The fused update's leaf sums (phase-23 tasks before its update's chunks in
    one leaves region) are charged a pass of their own over the rows: r and p (8
    bytes each) and the leaf id (4), ``MEMORY[LEAF_SUMS]``, not the update's 40
    bytes a row (F, p and r written)."""
    ns = 10**9
    rows = 10_000_000
    events = [(0, 3 * ns, 0, 3 * ns, rows, 1, 1, 0, 1),              # the tree
              (ns, 3 * ns, ns, 3 * ns, rows, 1, 11, 0, 1)]           # the leaves region
    for i in range(64):  # 32 blocks of sums, then 32 chunks of the update
        t = ns + i * ns // 32
        events.append((t, t + ns // 32, t, t + ns // 32, i % 32, 0, 23 if i < 32 else 24,
                       0, 1))
    events = np.array(sorted(events), dtype=_openmp.TRACE_DTYPE)
    meta = {"rows": rows, "classes": 2, "method": "hist", "n_jobs": 1,
            "fit_c0": 0, "fit_c1": 3 * ns}
    sm._REGIONS_CACHE.clear()
    mib = 1 << 20
    machine = sm.Machine(sync2=0.0, l2=2 * mib, l3=105 * mib, clock=0.0,
                         bw_l3_core=10e9, bw_dram_core=5e9, bw_dram=30e9)
    assert sm.MEMORY[sm.LEAF_SUMS] == (20, 1, 20, False)
    for p in (1, 16):
        parts = sm.plan(events, meta, p, machine).parts(machine)
        for tag, per_row in (("leaf_sums", 20), ("leaves", 40)):
            ws = per_row * rows
            m2 = max(0.0, 1 - 2 * mib / (ws / p))
            m3 = max(0.0, 1 - 105 * mib / ws)
            moved = per_row * rows
            expected = (moved * max(0.0, m2 - m3) / (p * 10e9)
                        + moved * m3 / min(p * 5e9, 30e9))
            assert parts[tag][1] == pytest.approx(expected), (tag, p)
        # Read as the code before the row blocks: the sums charged as the region.
        before = sm.plan(events, meta, p, machine, leaf_blocks=False).parts(machine)
        assert before["leaf_sums"][1] == pytest.approx(parts["leaves"][1])
    sm._REGIONS_CACHE.clear()


def test_the_all_core_clock_scales_the_compute_not_the_memory():
    """``Machine.slowdown``: a core's time with the cores of a P-thread fit busy,
    1 + clock x min(P - 1, cores - 1) / (cores - 1), on every compute second of a
    P-thread prediction (serial stretches and synchronisation too), not on its
    memory seconds; 0 extra on one thread, ``clock`` on every core and beyond."""
    rows = 1_000_000
    events, meta = _trace(n_iter=1, n_classes=1, region_s=1.0, items=rows)
    meta["classes"] = 2
    kw = dict(sync2=1e-3, l2=2 << 20, l3=8 << 20, bw_l3_core=10e9, bw_dram_core=5e9,
              bw_dram=30e9, cores=16)
    for p in (1, 2, 8, 16, 32):
        base = sm.Machine(clock=0.0, **kw)
        hot = sm.Machine(clock=0.25, **kw)
        f = 1 + 0.25 * min(p - 1, 15) / 15
        assert hot.slowdown(p) == pytest.approx(f)
        pl = sm.plan(events, meta, p, base)
        comp, mem = pl.compute_and_memory(base)
        assert comp + mem == pytest.approx(pl.seconds(base))
        assert mem > 0
        assert pl.seconds(hot) == pytest.approx(comp * f + mem)
        parts = pl.parts(hot)
        assert sum(v[0] for v in parts.values()) == pytest.approx(pl.seconds(hot))
    assert sm.Machine(clock=0.25, **kw).slowdown(1) == 1.0
    assert sm.Machine(clock=0.25, **kw).slowdown(16) == pytest.approx(1.25)


def test_grid_seconds_are_each_machines_seconds():
    """calibrate's grid of bandwidths x clocks (``grid_seconds``, one evaluation per
    bandwidths for a plan without lanes) gives each machine's ``seconds``, with
    side-by-side lanes too (whose busiest lane is taken per machine)."""
    events, meta = _trace(n_iter=2, n_classes=5, region_s=1.0, items=1_000_000)
    kw = dict(sync2=1e-3, l2=2 << 20, l3=8 << 20, cores=16)
    machines = [sm.Machine(bw_l3_core=a * 1e9, bw_dram_core=b * 1e9, bw_dram=c * 1e9,
                           clock=0.0, **kw)
                for a, b, c in [(10, 5, 30), (640, 128, 512), (3, 1, 8)]]
    clocks = [0.0, 0.3, 0.6]
    for mode, p in [("serial", 16), ("share", 16), ("share", 3), ("serial", 1)]:
        pl = sm.plan(events, meta, p, machines[0], mode=mode)
        got = sm.grid_seconds(pl, machines, clocks)
        want = [pl.seconds(m.with_bandwidths(m.bw_l3_core, m.bw_dram_core, m.bw_dram, c))
                for m in machines for c in clocks]
        assert got == pytest.approx(want)


def test_a_fit_between_two_traced_row_counts_is_interpolated():
    """``model_plan`` scales from the traces around the fit's rows (the nearer one's
    regions), else the two nearest; with one row count of a fit's classes, by the
    binary traces' exponents over the same span of rows."""
    assert sm.row_pair([200_000, 500_000, 10_000_000], 1_000_000) == (500_000, 10_000_000)
    assert sm.row_pair([200_000, 500_000, 10_000_000], 300_000) == (200_000, 500_000)
    assert sm.row_pair([200_000, 500_000, 1_000_000], 10_000_000) == (1_000_000, 500_000)
    assert sm.row_pair([500_000, 1_000_000], 200_000) == (500_000, 1_000_000)

    def traced(rows, classes, per_row):
        events, meta = _trace(n_iter=1, n_classes=1, region_s=per_row * rows, items=rows)
        meta.update(classes=classes, method="exact")
        return events, meta

    # Binary: 1 us a row to 500k, 2 us a row from there (an exponent of 1 within
    # each span, log(2 x 20) / log(20) across 500k-10M).
    traces = {("exact", r, 2): traced(r, 2, 1e-6 if r <= 500_000 else 2e-6)
              for r in (200_000, 500_000, 10_000_000)}
    traces[("exact", 200_000, 5)] = traced(200_000, 5, 1e-6)
    machine = sm.Machine(sync2=1e-3, memory=False, clock=0.0)
    sm._REGIONS_CACHE.clear()
    pl, how = sm.model_plan(traces, "exact", 300_000, 2, 1, machine, "serial")
    assert how == "from 200k and 500k"
    parts = pl.parts(machine)
    assert parts["leaves"][0] == pytest.approx(0.3)
    pl, how = sm.model_plan(traces, "exact", 400_000, 5, 1, machine, "serial")
    assert how == "from 200k x the row exponents of 200k / 500k binary"
    assert pl.parts(machine)["leaves"][0] == pytest.approx(0.4)


def test_before_the_passes_on_every_thread_a_trees_start_and_leaf_sums_are_serial():
    """``passes_on_threads=False`` (``PASSES_ON_THREADS``: the commits before the
    per-tree passes on every thread): the tree's start (``TREE_START``: the exact
    finder's per-row buffers, the grid region's root rows and sums) on one thread,
    a narrow level's children one task per child (each split's task in two
    halves, list-scheduled, not divided among the threads), and the leaf sums'
    stretch on one thread as traced."""
    ns = 10**9
    rows = 1_000_000
    start = (0, ns, 0, ns, rows, 1, 9, 0, 1)  # 1 s, the exact finder's buffers
    part = (2 * ns, 3 * ns, 2 * ns, 3 * ns, rows, 1, 10, 0, 1)  # a narrow level
    split_tasks = [(2 * ns + i * ns // 4, 2 * ns + (i + 1) * ns // 4,
                    2 * ns + i * ns // 4, 2 * ns + (i + 1) * ns // 4, i, 0, 19, 0, 1)
                   for i in range(2)]  # two splits of 0.25 s
    tree = (0, 4 * ns, 0, 4 * ns, rows, 1, 1, 0, 1)
    leaves = (5 * ns, 6 * ns, 5 * ns, 6 * ns, rows, 1, 11, 0, 1)  # 1 s of leaf sums before
    events = np.array(sorted([start, part, tree, leaves] + split_tasks),
                      dtype=_openmp.TRACE_DTYPE)
    meta = {"rows": rows, "classes": 2, "method": "exact", "n_jobs": 1,
            "fit_c0": 0, "fit_c1": 6 * ns}
    machine = sm.Machine(sync2=1e-3, memory=False, clock=0.0)
    sm._REGIONS_CACHE.clear()
    regions = sm.regions_of(events)[0]
    r_start, r_part = regions[0], regions[1]
    assert (r_start.rid, r_part.rid) == (9, 10)
    for p in (2, 4, 16):
        sync = machine.sync(p)
        assert sm.region_compute(r_start, p, machine)[0] == pytest.approx(1.0 / p + sync)
        assert sm.region_compute(r_start, p, machine, passes_on_threads=False)[0] == (
            pytest.approx(1.0))
        # The partition's 0.5 s outside its tasks is serial either way.
        assert sm.region_compute(r_part, p, machine)[0] == pytest.approx(
            0.5 + 0.5 / p + sync)
        halves = sm.schedule(np.full(4, 0.125), p, "dynamic")
        assert sm.region_compute(r_part, p, machine, passes_on_threads=False)[0] == (
            pytest.approx(0.5 + halves + sync))
        on = sm.plan(events, meta, p, machine).parts(machine)
        off = sm.plan(events, meta, p, machine, passes_on_threads=False).parts(machine)
        assert "leaf_sums" in on and "leaf_sums" not in off
        # The stretch between the tree and its leaves region: the leaf sums.
        assert off["serial, outside trees"][0] == pytest.approx(1.0)
        assert on["serial, outside trees"][0] == pytest.approx(0.0)
    # One thread: the same either way.
    assert sm.plan(events, meta, 1, machine, passes_on_threads=False).seconds(machine) == (
        pytest.approx(sm.plan(events, meta, 1, machine).seconds(machine)))


def test_a_levels_split_scans_run_on_the_threads_from_the_finders_bins():
    """Region 6 (a level's derived histograms and split scans, one loop of (node,
    feature) tasks) runs on the threads from ``CHOOSE_PARALLEL_FROM`` bins, the
    histogram finder's own ``MIN_PARALLEL_BINS``; read as the code before that
    change (``choose_on_threads=False``), on one thread below a million bins."""
    import re

    source = open(os.path.join(SRC, "_histogram_splitter.pyx")).read()
    assert int(re.search(r"MIN_PARALLEL_BINS = (\d+)", source).group(1)) == (
        sm.CHOOSE_PARALLEL_FROM)
    ns = 10**9
    bins = 4 * 28 * 256  # a level of four nodes: 28,672 bins, 112 tasks
    events, t = [], 0
    for _ in range(2):
        start = t
        for k in range(112):
            d = ns // 112 * (1 + k % 2)  # tasks of two lengths (derived or not)
            events.append((t, t + d, t, t + d, k, 0, 6, 0, 1))
            t += d
        events.append((start, t, start, t, bins, 1, 6, 0, 1))  # the region
    events = np.array(sorted(events), dtype=_openmp.TRACE_DTYPE)
    meta = {"rows": 1_000_000, "classes": 2, "method": "hist", "n_jobs": 1,
            "fit_c0": 0, "fit_c1": t}
    sm._REGIONS_CACHE.clear()
    machine = sm.Machine(sync2=1e-3, memory=False, clock=0.0)
    tasks = np.array([(1 + k % 2) * (ns // 112) / 1e9 for k in range(112)])
    for p in (1, 2, 16):
        parts = sm.plan(events, meta, p, machine).parts(machine)
        sync = machine.sync(p) if p > 1 else 0.0
        expected = sm.schedule(tasks, p, "dynamic") + sync
        assert parts["hist_scan"][0] == pytest.approx(2 * expected)
        before = sm.plan(events, meta, p, machine, choose_on_threads=False).parts(machine)
        assert before["hist_scan"][0] == pytest.approx(2 * tasks.sum())
    # The region's items are bins, not rows: a level below the threshold stays on
    # one thread in a fit of ten times the rows.
    small = events.copy()
    small["index"][small["kind"] == 1] = sm.CHOOSE_PARALLEL_FROM - 1
    sm._REGIONS_CACHE.clear()
    parts = sm.plan(small, meta, 16, machine, rows=10 * meta["rows"]).parts(machine)
    assert parts["hist_scan"][0] == pytest.approx(2 * tasks.sum())
    assert sm.CHOOSE_ON_THREADS == {"8186671": False, "4276457": False,
                                    "ea6b64e": False, "c26bafb": True, "today": True}


def test_a_classs_residuals_and_update_run_on_its_lane():
    """Side by side (``_boosting._iteration``'s ``grow``), a class's grower thread
    runs the class's residuals (``tree_target``) right before its tree and its
    update after it, and the Python between them: on that class's lane, not on
    every thread one after another. The softmax pass that ends an iteration
    (phase 25), what follows it (a validation set's probabilities), the
    stretches after the iteration's last side-by-side tree and the trees left over
    (and their passes) stay on every thread."""
    ns = 10**9
    rows = 1_000_000
    events, t = [], 0

    def region(seconds, phase_tasks=()):
        nonlocal t
        start = t
        for d in phase_tasks:
            events.append((t, t + int(d * ns), t, t + int(d * ns), 0, 0, 25, 0, 1))
            t += int(d * ns)
        t = max(t, start + int(seconds * ns))
        events.append((start, t, start, t, rows, 1, 11, 0, 1))

    for it in range(2):
        for c in range(3):
            region(0.2)                             # the class's residuals
            events.append((t, t + ns, t, t + ns, rows, 1, 1, 0, 1))   # its tree
            t += ns
            region(0.3)                             # its update
            t += int(0.05 * ns)                     # Python between the passes
        region(0.3, (0.1, 0.1, 0.1))                # the softmax pass
        t += int(0.1 * ns)
        region(0.2)                                 # a validation set's softmax
    t += int(0.5 * ns)
    events = np.array(sorted(events), dtype=_openmp.TRACE_DTYPE)
    meta = {"rows": rows, "classes": 3, "method": "hist", "n_jobs": 1,
            "fit_c0": 0, "fit_c1": t}
    sm._REGIONS_CACHE.clear()
    machine = sm.Machine(sync2=1e-3, memory=False, clock=0.0)
    # Three one-thread lanes: an iteration costs its busiest, residuals 0.2, tree
    # 1.0, update 0.3 and 0.05 of Python (lanes 0 and 1); then on every thread the
    # softmax pass, the validation's, and the Python after the last class.
    s3 = machine.sync(3)
    every = 0.1 + s3 + 0.2 / 3 + s3 + 0.05 + 0.1
    assert sm.predict(events, meta, 3, machine, mode="share") == pytest.approx(
        2 * (0.2 + 1.0 + 0.3 + 0.05 + every) + 0.5)
    # Two lanes (classes 0 and 1), class 2 left over on both threads: its
    # residuals, tree (serial) and update there, after the lanes.
    s2 = machine.sync(2)
    left_over = 0.2 / 2 + s2 + 1.0 + 0.3 / 2 + s2
    every = 0.05 + left_over + 0.05 + 0.2 + s2 + 0.1 + 0.2 / 2 + s2
    assert sm.predict(events, meta, 2, machine, mode="share") == pytest.approx(
        2 * (0.2 + 1.0 + 0.3 + 0.05 + every) + 0.5)


def test_every_figure_is_of_a_machine_with_parameters_and_a_mapped_commit():
    """Each figure names a machine of ``MACHINES`` (or one taken as another's), each
    ratio's two figures share a machine's parameters, and each figure's commit has
    its behaviour in every table the plan reads (a figure of an unmapped commit
    would raise a KeyError only when calibrate reaches it)."""
    for label, commit, where, *_ in sm.FIGURES:
        assert sm.parameters_machine(where) in sm.MACHINES, label
        for table in (sm.CLASS_MODE, sm.EXACT_CLASS_MODE, sm.PASSES_ON_THREADS,
                      sm.LEAF_BLOCKS,
                      sm.CHOOSE_ON_THREADS):
            assert commit in table, (label, commit)
    for ratio in sm.RATIOS:
        sm.ratio_machine(ratio)
    # The machine of c26bafb's figures: its own caches, not the first Xeon's.
    assert sm.machine_parameters("xeon-207")["l3_mib"] == 300.0
    assert sm.machine_parameters("xeon-207")["l2_mib"] == 2.0
    assert sm.machine_parameters("xeon-207")["cores"] == 16
    assert sm.machine_parameters("xeon")["l3_mib"] == 105.0
    assert sm.parameters_machine("h200-host") == "xeon"
    assert {f[2] for f in sm.FIGURES if f[1] == "c26bafb"} == {"xeon-207"}
    # c26bafb grew both methods' classes side by side (before the lanes of 6b9b542).
    assert sm.mode_of("exact", "c26bafb") == sm.mode_of("hist", "c26bafb") == "share"


def test_an_unknown_machine_is_refused_with_the_known_ones():
    with pytest.raises(ValueError, match=r"unknown machine 'xeon-999'.*xeon-207"):
        sm.machine_named("xeon-999", sync2=1e-6)
    with pytest.raises(ValueError, match="unknown machine"):
        sm.parameters_machine("")
    # A ratio of two machines' figures: no one machine's parameters fit it.
    mixed = ("mixed", "c26bafb", "11-27: 1M hist 1t", "c26bafb: 1M hist 16t")
    with pytest.raises(ValueError, match="is of xeon, .* of xeon-207"):
        sm.ratio_machine(mixed)


def test_a_machine_is_made_from_its_own_entry(monkeypatch):
    """``machine_named`` takes every parameter from the machine's ``MACHINES`` entry
    (a machine taken as another's, from that one's), its clock unless given."""
    monkeypatch.setitem(sm.MACHINES, "box", {
        "l2_mib": 1.0, "l3_mib": 32.0, "bw_l3_core_gbs": 7.0, "bw_dram_core_gbs": 3.0,
        "bw_dram_gbs": 40.0, "cores": 8, "clock": 0.2})
    monkeypatch.setitem(sm.SAME_PARAMETERS_AS, "box-twin", "box")
    for name in ("box", "box-twin"):
        m = sm.machine_named(name, sync2=2e-6)
        assert (m.l2, m.l3) == (1 << 20, 32 << 20)
        assert (m.bw_l3_core, m.bw_dram_core, m.bw_dram) == (7e9, 3e9, 40e9)
        assert (m.cores, m.clock, m.sync2, m.name) == (8, 0.2, 2e-6, "box")
    assert sm.machine_named("box", sync2=0.0, clock=0.5).clock == 0.5
    # The bandwidths' grid keeps the machine's caches and cores.
    _, grid = sm.bandwidth_grid(sm.machine_named("box", sync2=0.0))
    assert {(g.l3, g.cores, g.name) for g in grid} == {(32 << 20, 8, "box")}


def test_a_figure_is_predicted_with_its_own_machines_caches():
    """A fit whose working set (the leaves region's 40 bytes a row at 5M rows, 191
    MiB) is over the first Xeon's L3 (105 MiB) and within the model-207 Xeon's
    (300 MiB): DRAM traffic on the one, none on the other; the seconds each
    machine's own formula."""
    rows = 5_000_000
    events, meta = _trace(n_iter=1, n_classes=1, region_s=1.0, items=rows)
    meta["classes"] = 2
    per_item, factor, ws_row, shared = sm.MEMORY[11]
    assert 105 * (1 << 20) < ws_row * rows < 300 * (1 << 20)
    sm._REGIONS_CACHE.clear()
    region = sm.regions_of(events)[0][0]
    moved = rows * per_item * factor
    p = 16
    for name in ("xeon", "h200-host", "xeon-207"):
        m = sm.machine_named(name, sync2=0.0, clock=0.0)
        l3, dram = sm.region_memory(region, p, m, rows)
        m2 = max(0.0, 1 - m.l2 / (ws_row * rows / p))
        m3 = max(0.0, 1 - m.l3 / (ws_row * rows))
        assert (dram > 0) == (name != "xeon-207")
        assert dram == pytest.approx(moved * m3)
        expected = (0.5 + 0.1 + 1.0 / p + moved * max(0.0, m2 - m3) / (p * m.bw_l3_core)
                    + moved * m3 / min(p * m.bw_dram_core, m.bw_dram))
        assert sm.predict(events, meta, p, m) == pytest.approx(expected)


def test_lightgbms_16_thread_figures_are_the_machines_own_first():
    """The predictions' LightGBM seconds: a machine's own 16-thread figures, then
    (where it has none) those of the machine whose parameters it takes."""
    assert sm.lightgbm_16_threads("h200-host") == {
        (1_000_000, 2): 1.86, (10_000_000, 2): 17.83, (200_000, 5): 1.67,
        (1_000_000, 5): 6.28, (200_000, 2): 0.60}
    got = sm.lightgbm_16_threads("xeon-207")
    assert got[(1_000_000, 2)] == 1.56 and got[(10_000_000, 2)] == 12.94
    assert got[(1_000_000, 5)] == 5.49 and got[(200_000, 5)] == 1.30
