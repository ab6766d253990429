"""helpers.namespaces: the nested trip planner and stable namespace views."""

import pytest
from langgraph.checkpoint.memory import InMemorySaver

from helpers import namespaces as nsp
from helpers.checkpoints import thread_config

ID_A = "3d19821e-933f-f54f-8309-1b60502aaeba"
ID_B = "04981869-7974-00f5-b83d-ec0a5a96a095"


def test_ns_parts_and_shape():
    assert nsp.ns_parts("") == [] and nsp.ns_shape("") == "''"
    assert nsp.ns_parts(f"planner:{ID_A}|search:{ID_B}") == [("planner", ID_A), ("search", ID_B)]
    assert nsp.ns_shape(f"planner:{ID_A}|search:{ID_B}") == "planner:<task-id>|search:<task-id>"
    assert nsp.ns_shape("planner|search") == "planner|search"
    assert nsp.ns_parts("planner|search") == [("planner", None), ("search", None)]
    assert nsp.ns_shape("planner:custom") == "planner:custom"


def _run(mode, runs=2, hold=False):
    saver = InMemorySaver()
    graph = nsp.build_trip_planner(saver, subgraph_checkpointer=mode, hold=hold)
    config = {"configurable": {"thread_id": "t"}}
    plans = [graph.invoke({"request": "Lisbon"}, config).get("plan") for _ in range(runs)]
    return graph, saver, config, plans


@pytest.mark.parametrize("mode,shapes,plans", [
    (None, {"''": (1, 8), "planner:<task-id>": (2, 8), "planner:<task-id>|search:<task-id>": (2, 6)}, [1, 1]),
    (True, {"''": (1, 8), "planner": (1, 8), "planner|search": (1, 6)}, [1, 2]),
    (False, {"''": (1, 8)}, [1, 1]),
])
def test_subgraph_checkpointer_modes(mode, shapes, plans):
    _, saver, _, got_plans = _run(mode)
    rows = nsp.namespace_rows(saver)
    assert {r["namespace"]: (r["distinct namespaces"], r["checkpoints"]) for r in rows} == shapes
    assert [p.startswith(f"plan #{n}:") for p, n in zip(got_plans, plans, strict=True)] == [True, True]
    assert rows[0]["namespace"] == "''"


def test_failed_snapshot_tree_and_subgraph_history():
    graph, saver, config, _ = _run(None, runs=0, hold=True)
    nsp.fare_service["timeouts"] = 1
    with pytest.raises(TimeoutError):
        graph.invoke({"request": "Lisbon"}, config)
    assert nsp.fare_service["timeouts"] == 0
    snapshot = graph.get_state(config, subgraphs=True)
    lines = nsp.snapshot_tree(snapshot)
    assert lines[0].startswith("ns='' next=('planner',)")
    assert any("ns=planner:<task-id>|search:<task-id> next=('hold_fare',)" in line for line in lines)
    assert sum("error TimeoutError('the fare service timed out')" in line for line in lines) == 3
    nested = snapshot.tasks[0].state.tasks[0].state
    assert len(list(graph.get_state_history(nested.config))) == 1
    assert len(list(graph.get_state_history(thread_config(nested.config)))) == 3
    assert graph.invoke(None, config)["fare"].endswith("(held)")
    assert nsp.namespaces_in(t.config for t in saver.list(None)) == \
        ["''", "planner:<task-id>", "planner:<task-id>|search:<task-id>"]
