"""Checks for chapter 05 (namespaces)."""

from __future__ import annotations

from typing import Any

from .protocol import Fail, call_answer, exercise, expect_type

MODES = (None, True, False)



def _run_planner(mode: Any, runs: int, confirm: bool = False):
    from langgraph.checkpoint.memory import InMemorySaver

    from helpers.namespaces import build_trip_planner

    saver = InMemorySaver()
    graph = build_trip_planner(saver, subgraph_checkpointer=mode, confirm=confirm)
    config = {"configurable": {"thread_id": "exercise"}}
    for _ in range(runs):
        graph.invoke({"request": "Lisbon"}, config)
    return graph, saver, config


@exercise("05.1")
def subgraph_path_check(subgraph_path):
    cases: list[tuple[str, list[str]]] = [("", []), ("planner|search", ["planner", "search"]), ("planner", ["planner"])]
    _, saver, _ = _run_planner(None, 1)
    real = sorted({t.config["configurable"]["checkpoint_ns"] for t in saver.list(None)}, key=len)
    cases += [(real[1], ["planner"]), (real[2], ["planner", "search"])]
    for ns, want in cases:
        shown = "''" if not ns else ("a real namespace " + "|".join(s.split(":")[0] + ":<task-id>" for s in ns.split("|"))
                                     if ":" in ns else repr(ns))
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
def distinct_namespaces_check(answer):
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
        raise Fail(f"checkpointer=True: {normalized[True]} is off; the namespaces are stable (planner, planner|search), "
                   "the same on every run, plus the root's ''")
    if normalized[False] != expected[False]:
        raise Fail(f"checkpointer=False: {normalized[False]} is off; only the root's own checkpoints are stored")
    return "None 7, True 3, False 1: new namespaces per run, stable ones, or none"


@exercise("05.3")
def full_history_check(full_history):
    from langgraph.types import Command

    graph, _, config = _run_planner(None, 0, confirm=True)
    graph.invoke({"request": "Lisbon"}, config)
    nested = graph.get_state(config, subgraphs=True).tasks[0].state.tasks[0].state
    got = call_answer(full_history, graph, nested.config, what="full_history(graph, config)", case="a nested snapshot's config")
    expect_type(got, list, "the snapshots")
    if len(got) == 1:
        raise Fail("you got one entry: the config carries a checkpoint_id, which makes get_state_history start there "
                   "and return just that checkpoint; drop checkpoint_id from config['configurable']")
    namespaces = {s.config["configurable"].get("checkpoint_ns") for s in got if hasattr(s, "config")}
    if namespaces != {nested.config["configurable"]["checkpoint_ns"]}:
        raise Fail("your snapshots are not all from the nested namespace: keep checkpoint_ns (and the rest of the "
                   "config), drop only checkpoint_id")
    if len(got) != 3:
        raise Fail(f"expected the 3 checkpoints of the paused search graph, got {len(got)}")
    graph.invoke(Command(resume=True), config)
    root_config = graph.get_state(config).config
    got = call_answer(full_history, graph, root_config, what="full_history(graph, config)", case="a root snapshot's config")
    expect_type(got, list, "the snapshots")
    want = len(list(graph.get_state_history({"configurable": {"thread_id": "exercise"}})))
    if len(got) != want:
        raise Fail(f"for a root snapshot's config you returned {len(got)} snapshot(s); the root has {want}")
    return "whole histories, nested and root"


def _conversations() -> dict[str, dict[str, str]]:
    return {"c-ana": {"tenant_id": "acme", "thread_id": "t-9f2c4e"},
            "c-bo": {"tenant_id": "globex", "thread_id": "t-51ab07"}}


@exercise("05.4")
def resolve_thread_check(resolve_thread):
    conversations = _conversations()
    got = call_answer(resolve_thread, conversations, "acme", "c-ana", what="resolve_thread(...)", case="Ana's own conversation")
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
            raise Fail(f"for {case} your function raised {type(exc).__name__}; raise PermissionError there too, the same "
                       "error as for a foreign conversation, so a caller cannot probe which ids exist") from None
        raise Fail(f"for {case} you returned {result!r}: check that the conversation's tenant_id is the caller's and "
                   "raise PermissionError otherwise")
    return "owned conversations resolve; others and unknown ones are refused alike"
