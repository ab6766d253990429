"""Checks for chapter 05 (namespaces)."""

from __future__ import annotations

from typing import Any

from langgraph.graph.state import CompiledStateGraph

from .protocol import Fail, call_answer, exercise, expect_type

MODES = (None, True, False)



def _run_planner(mode: bool | None, runs: int, confirm: bool = False):
    from langgraph.checkpoint.memory import InMemorySaver

    from helpers.namespaces import build_trip_planner

    saver = InMemorySaver()
    graph = build_trip_planner(saver, subgraph_checkpointer=mode, confirm=confirm)
    config = {"configurable": {"thread_id": "exercise"}}
    for _ in range(runs):
        graph.invoke({"request": "Lisbon"}, config)
    return graph, saver, config


@exercise("05.1")
def check_subgraph_path(subgraph_path):
    cases: list[tuple[str, list[str]]] = [("", []), ("planner|search", ["planner", "search"]), ("planner", ["planner"])]
    _, saver, _ = _run_planner(None, 1)
    real = sorted({t.config["configurable"]["checkpoint_ns"] for t in saver.list(None)}, key=len)
    cases += [(real[1], ["planner"]), (real[2], ["planner", "search"])]
    for ns, want in cases:
        if not ns:
            shown = "''"
        elif ":" in ns:
            shown = "a real namespace " + "|".join(s.split(":")[0] + ":<task-id>" for s in ns.split("|"))
        else:
            shown = repr(ns)
        got = call_answer(subgraph_path, ns, what="subgraph_path(ns)", case=shown)
        expect_type(got, list, "the node names, outermost first")
        if got == want:
            continue
        if not ns:
            raise Fail(f"for the root namespace '' you returned {got!r}; the root has no subgraph levels: return []")
        if any(":" in str(x) for x in got) or len(got) > len(want):
            raise Fail(f"for {shown} you returned {got!r}; split levels on NS_SEP ('|') first, then cut each level "
                       "at NS_END (':') and keep the part before it")
        raise Fail(f"for {shown} you returned {got!r}, expected {want!r}: node names only, outermost first")
    return "namespaces read as paths of subgraph names"


def _expected_namespaces() -> dict[Any, int]:
    counts = {}
    for mode in MODES:
        _, saver, _ = _run_planner(mode, 3)
        counts[mode] = len({t.config["configurable"]["checkpoint_ns"] for t in saver.list(None)})
    return counts


@exercise("05.2")
def check_distinct_namespaces(answer):
    expect_type(answer, dict, "{None: ..., True: ..., False: ...}")
    normalized = {}
    for key, value in answer.items():
        key = {"None": None, "True": True, "False": False}.get(key, key) if isinstance(key, str) else key
        normalized[key] = value
    missing = [repr(m) for m in MODES if m not in normalized]
    if missing:
        raise Fail(f"the dict needs the keys None, True and False; missing {', '.join(missing)}")
    for mode in MODES:
        expect_type(normalized[mode], int, f"the count for checkpointer={mode}")
    expected = _expected_namespaces()
    if normalized[None] != expected[None]:
        raise Fail(f"checkpointer=None: {normalized[None]} is off; every run gets a new planner:<task-id> and a new "
                   "planner:<task-id>|search:<task-id>, plus the root's ''")
    if normalized[True] != expected[True]:
        raise Fail(f"checkpointer=True: {normalized[True]} is off; the namespaces are stable "
                   "(planner, planner|search), the same on every run, plus the root's ''")
    if normalized[False] != expected[False]:
        raise Fail(f"checkpointer=False: {normalized[False]} is off; only the root's own checkpoints are stored")
    return "None 7, True 3, False 1: new namespaces per run, stable ones, or none"


def _steps(snapshots: Any) -> list[Any]:
    return [s.metadata.get("step") if hasattr(s, "metadata") else s for s in snapshots]


def _page_case(earlier_snapshots: Any, graph: CompiledStateGraph, config: dict[str, Any], n: int, case: str) -> None:
    """Compare the learner's page with the truth, and explain the usual mistakes."""
    from helpers.checkpoints import thread_config

    whole = thread_config(config)
    truth = list(graph.get_state_history(whole, before=config, limit=n))
    got = call_answer(earlier_snapshots, graph, dict(config), n, what="earlier_snapshots(graph, config, n)", case=case)
    expect_type(got, list, "the snapshots, newest first")
    if [getattr(s, "config", None) for s in got] == [s.config for s in truth]:
        return
    everything = list(graph.get_state_history(whole))
    selected = config["configurable"]["checkpoint_id"]
    if not got:
        raise Fail(f"for {case} you returned no snapshots: a checkpoint_id left in the config is an exact-match "
                   "filter, and with before= nothing matches; drop checkpoint_id from config['configurable']")
    if any(getattr(s, "config", {}).get("configurable", {}).get("checkpoint_id") == selected for s in got):
        raise Fail(f"for {case} your list contains the selected checkpoint itself: pass before=config so only "
                   "older checkpoints come back")
    if len(got) > n:
        raise Fail(f"for {case} you returned {len(got)} snapshots for n={n}: pass limit=n")
    namespaces = {getattr(s, "config", {}).get("configurable", {}).get("checkpoint_ns") for s in got}
    if namespaces != {config["configurable"].get("checkpoint_ns", "")}:
        raise Fail(f"for {case} your snapshots come from another namespace: keep checkpoint_ns (and the rest of the "
                   "config), drop only checkpoint_id")
    raise Fail(f"for {case} you returned steps {_steps(got)}, expected {_steps(truth)} (the whole history is "
               f"{_steps(everything)}): the n newest checkpoints older than the selected one, newest first")


@exercise("05.3")
def check_earlier_snapshots(earlier_snapshots):
    from langgraph.types import Command

    graph, _, config = _run_planner(None, 0, confirm=True)
    graph.invoke({"request": "Lisbon"}, config)
    nested = graph.get_state(config, subgraphs=True).tasks[0].state.tasks[0].state
    for n in (1, 2, 5):
        _page_case(earlier_snapshots, graph, nested.config, n, f"a nested snapshot's config and n={n}")
    graph.invoke(Command(resume=True), config)
    root_history = list(graph.get_state_history(config))
    _page_case(earlier_snapshots, graph, root_history[1].config, 2, "a root snapshot's config and n=2")
    return "pages of older history, nested and root: before= skips the selected checkpoint, limit= cuts the page"


def _conversations() -> dict[str, dict[str, str]]:
    return {"c-ana": {"tenant_id": "acme", "thread_id": "t-9f2c4e"},
            "c-bo": {"tenant_id": "globex", "thread_id": "t-51ab07"}}


@exercise("05.4")
def check_resolve_thread(resolve_thread):
    conversations = _conversations()
    got = call_answer(resolve_thread, conversations, "acme", "c-ana", what="resolve_thread(...)",
                      case="Ana's own conversation")
    if isinstance(got, str):
        raise Fail("return the LangGraph config {'configurable': {'thread_id': ...}}, not the bare thread id")
    expect_type(got, dict, "the config {'configurable': {'thread_id': ...}}")
    thread = got.get("configurable", {}).get("thread_id") if isinstance(got.get("configurable"), dict) else None
    if thread != "t-9f2c4e":
        if isinstance(thread, str) and ("acme" in thread or "c-ana" in thread):
            raise Fail("you built the thread id from the tenant/conversation: look it up in conversations instead "
                       "(a derived id is guessable)")
        raise Fail(f"for acme's own conversation you returned {got!r}; expected "
                   "{'configurable': {'thread_id': conversations[conversation_id]['thread_id']}}")
    for tenant, conversation, case in [("globex", "c-ana", "another tenant's conversation"),
                                       ("acme", "c-nobody", "an unknown conversation")]:
        try:
            result = resolve_thread(conversations, tenant, conversation)
        except PermissionError:
            continue
        except Exception as exc:
            raise Fail(f"for {case} your function raised {type(exc).__name__}; raise PermissionError there too, "
                       "the same error as for a foreign conversation, so a caller cannot probe which ids "
                       "exist") from None
        raise Fail(f"for {case} you returned {result!r}: check that the conversation's tenant_id is the caller's and "
                   "raise PermissionError otherwise")
    return "owned conversations resolve; others and unknown ones are refused alike"
