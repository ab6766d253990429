"""helpers.durability_experiments: the chapter's graph, save counts per mode, real crash workers, cost."""

import time

import pytest
from langgraph.checkpoint.memory import InMemorySaver

from helpers.checks.chapter_08 import SYNC_CRASH_CASES, sync_crash_truth
from helpers.durability_costs import measure_costs, summarize_costs
from helpers.durability_experiments import (
    CRASH_EXIT_CODE,
    MODES,
    OUTCOME_COLUMNS,
    SURVIVAL_COLUMNS,
    CrashLab,
    CrashResult,
    CrashRun,
    count_saves,
    crash_experiment,
    linear_graph,
    outcome_rows,
    read_log,
    recovery_laws,
    survival_facts,
    survival_rows,
)


def test_linear_graph_runs_nodes_in_order_and_logs_each_call_with_its_task_id(tmp_path):
    log = tmp_path / "calls.log"
    graph = linear_graph(InMemorySaver(), ["x", "y", "z"], log_path=str(log))
    result = graph.invoke({"trip": []}, {"configurable": {"thread_id": "t"}})
    assert result == {"trip": ["x", "y", "z"]}
    calls = read_log(log)
    assert [name for name, _ in calls] == ["x", "y", "z"]
    assert len({task for _, task in calls}) == 3  # one task id per node


def test_linear_graph_slow_at_makes_only_that_node_work(tmp_path):
    log = tmp_path / "calls.log"
    graph = linear_graph(InMemorySaver(), ["x", "y", "z"], log_path=str(log), work_seconds=0.2, slow_at="y")
    start = time.perf_counter()
    assert graph.invoke({"trip": []}, {"configurable": {"thread_id": "t"}}) == {"trip": ["x", "y", "z"]}
    assert 0.2 <= time.perf_counter() - start < 0.6  # one sleep of 0.2 s; three would take 0.6 s at least


def test_linear_graph_without_a_checkpointer(tmp_path):
    assert linear_graph(None, ["a", "b"]).invoke({"trip": []}) == {"trip": ["a", "b"]}
    assert read_log(tmp_path / "missing.log") == []


@pytest.mark.parametrize("mode,put,writes,checkpoints", [
    (None, 5, 4, 5), ("sync", 5, 4, 5), ("async", 5, 4, 5), ("exit", 1, 0, 1), ("Sync", 5, 4, 5)])
def test_count_saves_per_mode(mode, put, writes, checkpoints):
    row = count_saves(mode)
    assert (row["put"], row["put_writes"], row["checkpoints"], row["latest step"]) == (put, writes, checkpoints, 3)
    assert row["outcome"] == "done"
    assert row["mode"] == (mode or "(default)")


@pytest.mark.parametrize("kwargs,outcome,write", [({"fail_at": "b"}, "RuntimeError", "__error__"),
                                                  ({"interrupt_at": "b"}, "paused", "__interrupt__")])
def test_exit_saves_the_current_checkpoint_and_its_writes_when_the_run_stops_early(kwargs, outcome, write):
    row = count_saves("exit", **kwargs)
    assert (row["outcome"], row["put"], row["put_writes"], row["checkpoints"]) == (outcome, 1, 1, 1)
    assert row["latest step"] == 1 and row["pending writes"] == (write,)
    sync = count_saves("sync", **kwargs)
    assert (sync["put"], sync["put_writes"], sync["checkpoints"]) == (3, 3, 3)


# -- real crashes ---------------------------------------------------------------------------
@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """One lab for the tests that only need a working one (each of its experiments gets a new
    folder, so no test sees another's files); the tests about a lab's own start, reuse and end
    make their own, and the chapter's experiment below runs in a lab of its own (4 at once).
    At most 2 workers at once: the bound that test_a_lab_keeps_at_most_max_parallel_workers_alive checks."""
    with CrashLab(tmp_path_factory.mktemp("shared-lab"), max_parallel=2) as shared:
        yield shared
    assert not shared.server.is_open


@pytest.fixture(scope="module")
def crashed(tmp_path_factory):
    """The chapter's runs on a plain SQLite file: one sync and one exit worker, three async, one typo,
    and the chapter's three runs whose timing is fixed by a slow saver or a slow node."""
    runs = [CrashRun("sync", "sync"), CrashRun("exit", "exit"), CrashRun("Sync-0", "Sync")]
    runs += [CrashRun(f"async-{n}", "async") for n in range(3)]
    runs += [CrashRun("async-slow-saver", "async", delay=1.0), CrashRun("Sync-slow-saver", "Sync", delay=1.0),
             CrashRun("async-slow-c", "async", work_seconds=0.15, slow_at="c")]
    return {r.run.label: r for r in crash_experiment(tmp_path_factory.mktemp("crash"), runs)}


def test_every_worker_really_crashed_in_c(crashed):
    for result in crashed.values():
        assert result.exit_code == CRASH_EXIT_CODE
        assert result.ran_before_crash == ("a", "b", "c")


def test_sync_keeps_every_finished_step_and_the_crashed_nodes_task_id(crashed):
    sync = crashed["sync"]
    assert (sync.steps, sync.pending_writes) == ((-1, 0, 1, 2), 0)
    assert (sync.recovery_error, sync.recovery_ran, sync.trip) == (None, ("c", "d"), ("a", "b", "c", "d"))
    assert sync.task_id_kept
    assert survival_facts(sync) == {"kept finished steps": True, "repeats finished work": False,
                                    "needs the input again": False}


def test_exit_keeps_nothing_and_the_input_is_sent_again(crashed):
    exit_ = crashed["exit"]
    assert exit_.steps == () and exit_.recovery_error == "EmptyInputError: Received no input for __start__"
    assert exit_.recovery_ran == ("a", "b", "c", "d") and exit_.trip == ("a", "b", "c", "d")
    assert not exit_.task_id_kept
    assert survival_facts(exit_) == {"kept finished steps": False, "repeats finished work": True,
                                     "needs the input again": True}


@pytest.mark.parametrize("label", ["async-slow-saver", "Sync-slow-saver"])
def test_with_a_1s_saver_a_run_that_does_not_wait_keeps_nothing(crashed, label):
    # instant nodes reach c long before the first write's 1 s delay is over (the chapter's compared row)
    slow = crashed[label]
    assert (slow.steps, slow.recovery_ran, slow.task_id_kept) == ((), ("a", "b", "c", "d"), False)
    assert slow.recovery_error == "EmptyInputError: Received no input for __start__"


def test_with_a_slow_crash_node_async_keeps_every_finished_step(crashed):
    # c works 150 ms before it crashes: ample time for the background thread to write step 2
    slow = crashed["async-slow-c"]
    assert (slow.steps, slow.recovery_ran, slow.task_id_kept) == ((-1, 0, 1, 2), ("c", "d"), True)


def test_the_laws_hold_for_every_worker_whatever_the_timing(crashed):
    assert all(recovery_laws(list(crashed.values())).values())


def test_a_slow_saver_is_only_slower(lab):
    # delay is a wall-clock latency: on a loaded machine async may still keep everything, so only
    # the laws are asserted (see the chapter: a range, never a constant)
    results = lab.run([CrashRun("slow-async", "async", delay=0.02), CrashRun("slow-sync", "sync", delay=0.02)])
    assert all(recovery_laws(results).values())
    assert results[1].steps == (-1, 0, 1, 2)


def test_survival_rows_are_the_same_on_every_run(crashed):
    rows = survival_rows([crashed["sync"], crashed["exit"]])
    assert [tuple(r) for r in rows] == [SURVIVAL_COLUMNS] * 2
    by_mode = {r["mode"]: r for r in rows}
    assert (by_mode["sync"]["steps on disk"], by_mode["sync"]["recovery runs"]) == ("-1,0,1,2", "c,d")
    assert by_mode["sync"]["crashed node's task id"] == "same"
    assert by_mode["exit"]["steps on disk"] == "none"
    assert by_mode["exit"]["recovery runs"] == "EmptyInputError; input sent again: a,b,c,d"
    assert by_mode["exit"]["crashed node's task id"] == "new"


def _fake(steps, ran, error=None, pending=0):
    kept = 2 in steps
    return CrashResult(run=CrashRun("async", "async"), exit_code=17, ran_before_crash=("a", "b", "c"),
                       steps=tuple(steps), pending_writes=pending, recovery_error=error, recovery_ran=tuple(ran),
                       trip=("a", "b", "c", "d"), task_id_kept=kept)


ASYNC_OUTCOMES = [_fake([], ("a", "b", "c", "d"), "EmptyInputError: x"), _fake([-1], ("a", "b", "c", "d")),
                  _fake([-1, 0], ("b", "c", "d"), pending=2), _fake([-1, 0, 1], ("b", "c", "d")),
                  _fake([-1, 0, 1, 2], ("c", "d"))]


def test_survival_rows_bounds_cover_every_losing_async_outcome_and_flag_a_broken_bound():
    rows = [survival_rows([r])[0] for r in ASYNC_OUTCOMES[:-1]]
    assert len({tuple(r.items()) for r in rows}) == 1
    lucky = survival_rows([ASYNC_OUTCOMES[-1]])[0]
    assert lucky["steps on disk"].startswith("?") and lucky["recovery runs"].startswith("?")
    assert lucky["crashed node's task id"] == "?same"


def test_outcome_rows_group_and_count_from_most_kept_to_least():
    rows = outcome_rows(ASYNC_OUTCOMES + ASYNC_OUTCOMES[2:3])
    assert [tuple(r) for r in rows] == [OUTCOME_COLUMNS] * 5
    assert {r["mode"] for r in rows} == {"async"}
    assert [(r["steps on disk"], r["runs"]) for r in rows] == [
        ("-1,0,1,2", 1), ("-1,0,1", 1), ("-1,0", 2), ("-1", 1), ("none", 1)]
    assert rows[0]["crashed node's task id"] == "same" and rows[-1]["recovery runs"].startswith("EmptyInputError")


def test_the_laws_hold_for_every_possible_async_outcome_and_catch_a_broken_one():
    assert all(recovery_laws(ASYNC_OUTCOMES).values())
    impossible = _fake([-1, 0, 1, 2], ("a", "c", "d"))
    laws = recovery_laws([impossible])
    assert not laws["the recovery ran a tail of the line, from the crash node on at least"]


def test_real_sync_crashes_match_exercise_08_1(lab):
    runs = [CrashRun(f"case-{n}", "sync", nodes=nodes, crash_at=crash_at)
            for n, (nodes, crash_at) in enumerate(SYNC_CRASH_CASES)]
    for result in lab.run(runs):
        steps, resumed = sync_crash_truth(result.run.nodes, result.run.crash_at)
        assert (list(result.steps), list(result.recovery_ran)) == (steps, resumed), result.run


def test_a_worker_that_does_not_crash_is_reported(lab):
    with pytest.raises(RuntimeError, match="exited with 1, expected 17"):
        lab.run([CrashRun("sync", "sync", nodes=("a", "b"), crash_at="z")])


def test_a_lab_runs_several_experiments_in_fresh_folders_and_ends_when_closed(tmp_path):
    lab = CrashLab(tmp_path)
    first = lab.run([CrashRun("sync", "sync")])
    again = lab.run([CrashRun("sync", "sync")])  # a re-run of the chapter's cell: a new folder, same result
    assert first[0].steps == again[0].steps == (-1, 0, 1, 2)
    assert sorted(p.name.split("-")[1] for p in tmp_path.glob("crash-*") if p.is_dir()) == ["1", "2"]
    assert lab.close() == 0 and not lab.server.is_open
    with pytest.raises(RuntimeError, match="closed"):
        lab.run([CrashRun("sync", "sync")])


def test_a_forgotten_lab_ends_its_server(tmp_path):
    import gc

    import psutil

    lab = CrashLab(tmp_path)
    server = psutil.Process(lab.server.process.pid)
    del lab  # e.g. the setup cell ran twice: the first lab is no longer referenced
    gc.collect()
    assert server.wait(timeout=30) == 0


def test_a_lab_reports_a_failing_worker_and_keeps_working(lab):
    logged = lab.log_path.stat().st_size if lab.log_path.exists() else 0  # the shared lab's log so far
    with pytest.raises(RuntimeError, match="the bad worker exited with 1, expected 17"):
        lab.run([CrashRun("bad", "sync", delay=-1.0)])  # its saver raises (negative sleep) before c runs
    assert b"ValueError" in lab.log_path.read_bytes()[logged:]  # the worker's traceback is in the lab's log
    assert lab.run([CrashRun("sync", "sync")])[0].task_id_kept


def test_a_lab_keeps_at_most_max_parallel_workers_alive(tmp_path, lab, monkeypatch):
    import psutil

    with pytest.raises(ValueError, match="at least 1"):
        CrashLab(tmp_path, max_parallel=0)
    assert lab.max_parallel == 2  # the module's lab, made with max_parallel=2
    if lab.server.process is None:
        pytest.skip("no os.fork: workers are fresh interpreters, not children of a server")
    alive_at_start: list[int] = []
    start = lab.server.start

    def counting_start(*args, **kwargs):
        workers = psutil.Process(lab.server.process.pid).children()
        alive_at_start.append(sum(w.status() != psutil.STATUS_ZOMBIE for w in workers))
        return start(*args, **kwargs)

    monkeypatch.setattr(lab.server, "start", counting_start)
    results = lab.run([CrashRun("slow", "sync", work_seconds=0.2)] + [CrashRun(f"sync-{n}", "sync")
                                                                     for n in range(4)])
    assert [r.run.label for r in results] == ["slow", "sync-0", "sync-1", "sync-2", "sync-3"]
    assert all(r.steps == (-1, 0, 1, 2) for r in results)
    assert len(alive_at_start) == 6 and max(alive_at_start[:5]) <= 1  # 5 workers, then the examiner


def test_labels_must_be_unique(lab):
    with pytest.raises(ValueError, match="unique"):
        lab.run([CrashRun("x", "sync"), CrashRun("x", "async")])


# -- cost -------------------------------------------------------------------------------------
def test_measure_costs_shape(tmp_path):
    samples = measure_costs(tmp_path, MODES, runs=2, warmup=1)
    assert {m: len(v) for m, v in samples.items()} == {m: 2 for m in MODES}
    assert all(v > 0 for values in samples.values() for v in values)


def test_summarize_costs_uses_medians_and_ratios_to_sync():
    rows = summarize_costs({"sync": [2.0, 4.0, 100.0], "async": [3.0, 5.0], "exit": [1.0]})
    assert rows == [{"mode": "sync", "runs": 3, "median ms": 4.0, "ratio to sync": 1.0},
                    {"mode": "async", "runs": 2, "median ms": 4.0, "ratio to sync": 1.0},
                    {"mode": "exit", "runs": 1, "median ms": 1.0, "ratio to sync": 0.25}]


def test_slow_nodes_and_writes_set_lower_bounds_per_mode(tmp_path):
    # Sleeps only give lower bounds: sync waits for 3 nodes and 5 puts in a row, exit for the
    # 3 nodes and its one put, async at least for its nodes. (async < sync is likely but not
    # guaranteed on a busy machine, so it is not asserted.)
    samples = measure_costs(tmp_path, MODES, runs=1, warmup=0, work_seconds=0.004, write_delay=0.004)
    assert min(samples["sync"]) >= 8 * 4 and min(samples["exit"]) >= 4 * 4 and min(samples["async"]) >= 3 * 4
