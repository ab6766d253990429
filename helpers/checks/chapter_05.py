"""Checks for chapter 05 (namespaces)."""

from __future__ import annotations

from typing import Any

from .protocol import Fail, call_answer, exercise, expect_type

MODES = (None, True, False)



def _run_planner(mode: bool | None, runs: int, hold: bool = False, saver: Any = None, thread_id: str = "exercise"):
    from langgraph.checkpoint.memory import InMemorySaver

    from helpers.namespaces import build_trip_planner

    saver = InMemorySaver() if saver is None else saver
    graph = build_trip_planner(saver, subgraph_checkpointer=mode, hold=hold)
    config = {"configurable": {"thread_id": thread_id}}
    for _ in range(runs):
        graph.invoke({"request": "Lisbon"}, config)
    return graph, saver, config


@exercise("05.1")
def check_parent_namespace(parent_namespace):
    _, saver, _ = _run_planner(None, 1)
    stored = {t.config["configurable"]["checkpoint_ns"] for t in saver.list(None)}
    planner, search = sorted(stored - {""}, key=len)
    cases: list[tuple[str, str | None, str]] = [
        ("", None, "the root ''"),
        ("planner|search", "planner", "'planner|search'"),
        ("planner", "", "'planner'"),
        (planner, "", "a real namespace planner:<task-id>"),
        (search, planner, "a real namespace planner:<task-id>|search:<task-id>"),
        ("trip:7f3a|planner:2b1c|search:90de", "trip:7f3a|planner:2b1c", "'trip:7f3a|planner:2b1c|search:90de'"),
        ("trip|planner|search", "trip|planner", "'trip|planner|search'"),
    ]
    for ns, want, shown in cases:
        got = call_answer(parent_namespace, ns, what="parent_namespace(ns)", case=shown)
        if want is None:
            if got is not None:
                raise Fail(f"for {shown} you returned {got!r}; the root has no level above it: return None")
            continue
        expect_type(got, str, f"the checkpoint_ns one level up from {shown}")
        if got == want:
            continue
        levels = ns.split("|")
        if got == levels[0] and len(levels) > 2:
            raise Fail(f"for {shown} you returned {got!r}, the outermost level; the level above is every level "
                       f"but the last: {want!r}")
        if got == levels[-1]:
            raise Fail(f"for {shown} you returned {got!r}, the level itself; return the levels above it, "
                       f"joined with NS_SEP: {want!r}")
        if "<task-id>" in got:
            raise Fail(f"for {shown} you returned {got!r}; keep the task ids as they are (namespaces.ns_shape "
                       "prints them as <task-id>; the saver stores the real ones)")
        if ":" in want and ":" not in got:
            raise Fail(f"for {shown} you returned {got!r}; keep the task ids: the saver stores the level above "
                       f"under {want.split(':')[0]}:<task-id>, not under its name alone")
        if want == "" and got != "":
            raise Fail(f"for {shown} you returned {got!r}; a namespace with one level sits under the root, "
                       "whose checkpoint_ns is ''")
        raise Fail(f"for {shown} you returned {got!r}; split on NS_SEP ('|'), drop the last level and join the "
                   "rest with NS_SEP")
    return "the level above, task ids kept: a real search namespace points at its planner's namespace"


def _build_with_recheck(saver: Any, mode: bool | None) -> Any:
    """Exercise 05.2's graph: root START -> planner -> recheck -> answer. ``planner`` and its ``search`` are
    compiled with ``mode``; ``recheck`` is the search graph (START -> find_fares) compiled with the default."""
    from langgraph.graph import START, StateGraph

    from helpers.namespaces import PlannerState, Trip, find_fares, make_plan, write_answer

    def search_graph(checkpointer: bool | None) -> Any:
        search = StateGraph(PlannerState)
        search.add_node("find_fares", find_fares)
        search.add_edge(START, "find_fares")
        return search.compile(checkpointer=checkpointer)

    planner = StateGraph(PlannerState)
    planner.add_node("plan", make_plan)
    planner.add_node("search", search_graph(mode))
    planner.add_edge(START, "plan")
    planner.add_edge("plan", "search")
    root = StateGraph(Trip)
    root.add_node("planner", planner.compile(checkpointer=mode))
    root.add_node("recheck", search_graph(None))
    root.add_node("answer", write_answer)
    root.add_edge(START, "planner")
    root.add_edge("planner", "recheck")
    root.add_edge("recheck", "answer")
    return root.compile(checkpointer=saver)


def _expected_namespaces() -> dict[Any, int]:
    from langgraph.checkpoint.memory import InMemorySaver

    counts = {}
    for mode in MODES:
        saver = InMemorySaver()
        graph = _build_with_recheck(saver, mode)
        for _ in range(3):
            graph.invoke({"request": "Lisbon"}, {"configurable": {"thread_id": "exercise-05-2"}})
        counts[mode] = len({t.config["configurable"]["checkpoint_ns"] for t in saver.list(None)})
    return counts


def _by_mode(answer: dict) -> dict:
    """``answer`` keyed by None, True and False (the strings "None", "True", "False" accepted too)."""
    normalized = {}
    for key, value in answer.items():
        key = {"None": None, "True": True, "False": False}.get(key, key) if isinstance(key, str) else key
        normalized[key] = value
    missing = [repr(m) for m in MODES if m not in normalized]
    if missing:
        raise Fail(f"the dict needs the keys None, True and False; missing {', '.join(missing)}")
    return normalized


@exercise("05.2")
def check_distinct_namespaces(answer):
    expect_type(answer, dict, "{None: ..., True: ..., False: ...}")
    normalized = _by_mode(answer)
    for mode in MODES:
        expect_type(normalized[mode], int, f"the count for checkpointer={mode}")
    expected = _expected_namespaces()
    hints = {
        None: ("checkpointer=None: every run gets a new planner:<task-id>, a new planner:<task-id>|search:<task-id> "
               "and a new recheck:<task-id>, plus the root's ''"),
        True: ("checkpointer=True: planner and planner|search are stable, the same on every run; recheck is compiled "
               "with the default, so each run adds its own recheck:<task-id>; plus the root's ''"),
        False: ("checkpointer=False: the planner and its search store nothing, but recheck keeps the default: a "
                "recheck:<task-id> per run, plus the root's ''"),
    }
    for mode in MODES:
        if normalized[mode] != expected[mode]:
            raise Fail(f"{hints[mode]}; {normalized[mode]} is off")
    return (f"None {expected[None]}, True {expected[True]}, False {expected[False]}: the setting belongs to each "
            "compiled subgraph; recheck's default adds a namespace per run under all three")


def _level(ns: str) -> tuple[str, ...]:
    return tuple(segment.split(":")[0] for segment in ns.split("|")) if ns else ()


def _levels_fixture() -> list[tuple[Any, str, str]]:
    """(saver, thread_id, what) cases: each saver also holds another thread, and a failed run."""
    from helpers import namespaces

    cases = []
    for mode, runs in ((None, 2), (True, 3)):
        _, saver, _ = _run_planner(mode, runs, thread_id="t-ana")
        _run_planner(mode, 1, saver=saver, thread_id="t-bo")
        graph, _, config = _run_planner(mode, 0, hold=True, saver=saver, thread_id="t-cy")
        namespaces.fare_service["timeouts"] = 1
        try:
            graph.invoke({"request": "Porto"}, config)
        except TimeoutError:
            pass
        finally:
            namespaces.fare_service["timeouts"] = 0
        cases += [(saver, "t-ana", f"{runs} runs with checkpointer={mode}"),
                  (saver, "t-cy", f"a run that failed in hold_fare, checkpointer={mode}")]
    return cases


def _latest_by_level(items: Any) -> dict[tuple[str, ...], str]:
    latest: dict[tuple[str, ...], str] = {}
    for t in items:
        level = _level(t.config["configurable"]["checkpoint_ns"])
        checkpoint_id = t.config["configurable"]["checkpoint_id"]
        latest[level] = max(latest.get(level, checkpoint_id), checkpoint_id)
    return latest


@exercise("05.3")
def check_latest_by_level(latest_by_level):
    for saver, thread_id, what in _levels_fixture():
        items = list(saver.list({"configurable": {"thread_id": thread_id}}))
        truth = _latest_by_level(items)
        got = call_answer(latest_by_level, saver, thread_id, what="latest_by_level(saver, thread_id)", case=what)
        expect_type(got, dict, "a dict from level (a tuple of node names) to a checkpoint ID")
        if got == truth:
            continue
        if any(isinstance(k, str) for k in got):
            if any(":" in k or "|" in k for k in got):
                raise Fail(f"for {what} your keys are raw namespaces ({sorted(got)[:2]} ...); turn each into its "
                           "path of node names, e.g. ('planner', 'search'), so that the calls of one level (their "
                           "task ids differ) count as one level")
            raise Fail(f"for {what} your keys are strings; use tuples of node names: () for the root, ('planner',), "
                       "('planner', 'search')")
        if any(not isinstance(v, str) for v in got.values()):
            kinds = sorted({type(v).__name__ for v in got.values()})
            raise Fail(f"for {what} your values are {', '.join(kinds)}; give each level the checkpoint ID (a str, "
                       "item.config['configurable']['checkpoint_id']) of its newest checkpoint")
        if set(got) == {()}:
            raise Fail(f"for {what} you found only the root level: get_state_history lists one namespace, the root's; "
                       "saver.list({'configurable': {'thread_id': ...}}) lists every namespace of the thread")
        if got == _latest_by_level(saver.list(None)):
            raise Fail(f"for {what} some of your IDs belong to other threads: pass the thread to saver.list instead "
                       "of None")
        if set(got) == set(truth):
            first_seen: dict[tuple[str, ...], str] = {}
            oldest: dict[tuple[str, ...], str] = {}
            for t in items:
                level = _level(t.config["configurable"]["checkpoint_ns"])
                first_seen.setdefault(level, t.config["configurable"]["checkpoint_id"])
                oldest[level] = min(oldest.get(level, "~"), t.config["configurable"]["checkpoint_id"])
            if got == oldest:
                raise Fail(f"for {what} you picked each level's oldest checkpoint; the newest has the largest ID "
                           "(chapter 04)")
            if got == first_seen:
                raise Fail(f"for {what} you took the first checkpoint saver.list gives for each level; saver.list "
                           "sorts newest first only within one namespace, and under checkpointer=None a level has "
                           "one namespace per call: compare the IDs across them (the largest is the newest)")
        raise Fail(f"for {what} your IDs differ from the newest checkpoint of each level: list every namespace of "
                   "the thread with saver.list, group by the node names in checkpoint_ns, keep the largest "
                   "checkpoint ID per level")
    return "the newest checkpoint of each level, across its calls' namespaces, for one thread only"


def _plan_after_resume() -> dict[Any, tuple[int, int]]:
    from langgraph.checkpoint.memory import InMemorySaver

    from helpers import namespaces

    truth = {}
    for mode in MODES:
        graph = namespaces.build_trip_planner(InMemorySaver(), subgraph_checkpointer=mode, hold=True)
        config = {"configurable": {"thread_id": "exercise-05-4"}}
        runs = 0
        for number in (1, 2):
            namespaces.fare_service["timeouts"] = 0 if number == 1 else 1
            for request in ({"request": "Lisbon"}, None) if number == 2 else ({"request": "Lisbon"},):
                try:
                    for _ns, event in graph.stream(request, config, stream_mode="tasks", subgraphs=True):
                        runs += "input" in event and event["name"] == "plan"
                except TimeoutError:
                    pass
        namespaces.fare_service["timeouts"] = 0
        plan = graph.get_state(config).values["plan"]
        truth[mode] = (runs, int(plan.split("#")[1].split(":")[0]))
    return truth


@exercise("05.4")
def check_plan_after_resume(answer):
    expect_type(answer, dict, "{None: (runs, n), True: (runs, n), False: (runs, n)}")
    normalized = _by_mode(answer)
    for mode in MODES:
        value = normalized[mode]
        if not (isinstance(value, (tuple, list)) and len(value) == 2 and all(
                isinstance(v, int) and not isinstance(v, bool) for v in value)):
            raise Fail(f"for checkpointer={mode} give a pair of ints (runs of make_plan, n in 'plan #n'), "
                       f"not {value!r}")
    truth = _plan_after_resume()
    hints = {
        None: ("checkpointer=None: each run gets a new planner namespace, so run 2 plans from scratch (plan #1); "
               "the resume keeps the failed run's task id, finds the planner's checkpoints and does not plan again"),
        True: ("checkpointer=True: the planner's namespace is stable, so run 2 continues from run 1's plans_made "
               "(plan #2), and the resume continues at hold_fare without planning again"),
        False: ("checkpointer=False: the planner keeps no checkpoints, so it remembers nothing between runs "
                "(plan #1) and the resume runs the whole planner again, make_plan included"),
    }
    for mode in MODES:
        if tuple(normalized[mode]) != truth[mode]:
            runs, n = normalized[mode]
            part = "the count of make_plan runs" if n == truth[mode][1] else "the plan number"
            raise Fail(f"{part} for checkpointer={mode} is off: {hints[mode]}")
    return "None (2, 1), True (2, 2), False (3, 1): fresh per run, remembered across runs, or redone on resume"
