"""Unit tests for the small shared helpers: tables, history views, the running example,
child processes, the environment self-check, the counting saver and the benchmark."""

import os
import re
import subprocess
import sys
import time

import nbformat
import pytest
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite import SqliteSaver

from course.bench import PeakMemory, tree_memory_mb
from course.layout import ROOT
from course.nbval_coverage import folder_coverage
from course.notebook_format import (
    WIDGET_VIEW,
    annotate,
    coalesce_streams,
    ignore_reason,
    ignored_by_nbval,
    normalize,
)
from helpers.checkpoints import count_checkpoints, history_rows, history_table, label_ids, thread_config
from helpers.counting_saver import CountingSaver
from helpers.environment import NOT_CHECKED, environment_rows, read_pins, self_check
from helpers.processes import ChildProcessFailed, run_python, run_pythons
from helpers.text_tables import cell_text, format_table
from helpers.travel_graphs import build_chat_graph, remembered_seat, say, stand_in_reply, transcript


def test_format_table_aligns_and_renders_values():
    text = format_table([{"a": 1, "b": ("x", "y")}, {"a": None, "b": ()}], ["a", "b"])
    assert text.splitlines() == ["a  b", "-  ---", "1  x,y", "-  ()"]
    assert cell_text({"b", "a"}) == "a,b"


def test_stand_in_reply_answers_only_from_what_it_is_given():
    told = [HumanMessage("I want an aisle seat"), AIMessage("Noted."), HumanMessage("Where did I say I want to sit?")]
    assert stand_in_reply(told).content == "You asked for an aisle seat."
    assert "don't know" in stand_in_reply(told[-1:]).content
    assert stand_in_reply([HumanMessage("hello")]).content == "Noted."
    assert remembered_seat([HumanMessage("window please"), HumanMessage("no, middle")]) == "middle"


@pytest.fixture
def two_turns():
    graph = build_chat_graph(InMemorySaver())
    say(graph, "t", "A window seat, please.")
    say(graph, "t", "Where did I say I want to sit?")
    return graph, {"configurable": {"thread_id": "t"}}


def test_history_rows_match_the_documented_six_checkpoints(two_turns):
    graph, config = two_turns
    rows = history_rows(graph, config)
    assert [(r["label"], r["step"], r["source"], r["messages"], r["next"]) for r in rows] == [
        ("C0", -1, "input", 0, ("__start__",)), ("C1", 0, "loop", 1, ("reply",)), ("C2", 1, "loop", 2, ()),
        ("C3", 2, "input", 2, ("__start__",)), ("C4", 3, "loop", 3, ("reply",)), ("C5", 4, "loop", 4, ())]
    assert [r["parent"] for r in rows] == [None, "C0", "C1", "C2", "C3", "C4"]
    assert "__start__" in rows[0]["channels"] and "branch:to:reply" in rows[1]["changed"]
    assert count_checkpoints(graph, config) == 6
    assert "C5" in history_table(graph, config) and "-" * 5 in history_table(graph, config)


def test_thread_config_drops_only_the_checkpoint_id(two_turns):
    graph, config = two_turns
    snapshot_config = graph.get_state(config).config
    assert len(list(graph.get_state_history(snapshot_config))) == 1
    assert len(list(graph.get_state_history(thread_config(snapshot_config)))) == 6
    assert label_ids(["b", "a", "b"]) == {"a": "C0", "b": "C1"}
    assert transcript(graph.get_state(config).values["messages"])[0] == "human: A window seat, please."


def test_counting_saver_counts_and_delegates(tmp_path):
    with SqliteSaver.from_conn_string(str(tmp_path / "c.sqlite")) as inner:
        saver = CountingSaver(inner)
        graph = build_chat_graph(saver)
        say(graph, "t", "hi")
        assert saver.counts() == {"get_tuple": 1, "list": 0, "put": 3, "put_writes": 2, "delete_thread": 0}
        saver.reset()
        graph.invoke({"messages": [("user", "hi")]}, {"configurable": {"thread_id": "e"}}, durability="exit")
        assert saver.counts()["put"] == 1 and saver.counts()["put_writes"] == 0
        saver.delete_thread("t")
        assert inner.get_tuple({"configurable": {"thread_id": "t"}}) is None
        assert saver.counts()["delete_thread"] == 1


def test_counting_saver_counts_the_rest_of_the_interface():
    saver = CountingSaver(InMemorySaver())
    say(build_chat_graph(saver), "t", "hi")
    assert saver.counts(("put", "get_next_version")) == {"put": 3, "get_next_version": 3}
    for call in (lambda: saver.prune(["t"]), lambda: saver.copy_thread("t", "u"), lambda: saver.delete_for_runs(["r"])):
        with pytest.raises(NotImplementedError):  # InMemorySaver inherits the base class's stubs
            call()
    assert saver.counts(("prune", "copy_thread", "delete_for_runs")) == {"prune": 1, "copy_thread": 1,
                                                                         "delete_for_runs": 1}
    assert saver.counts() == {"get_tuple": 1, "list": 0, "put": 3, "put_writes": 2, "delete_thread": 0}


def test_run_python_captures_output_and_failures(tmp_path):
    assert run_python("import sys; print(sys.argv[1:])", "a", 2).stdout.strip() == "['a', '2']"
    with pytest.raises(ChildProcessFailed, match="exited with 3"):
        run_python("import sys; sys.stderr.write('boom'); sys.exit(3)")
    crashed = run_python("import os; os._exit(17)", expect_returncode=17)
    assert crashed.returncode == 17
    results = run_pythons([("print(1)",), ("print(2)",)])
    assert [r.stdout.strip() for r in results] == ["1", "2"]


def test_environment_self_check_matches_the_pins():
    pins = read_pins()
    assert "langgraph" in pins and "jupyterlab" in NOT_CHECKED
    assert all(row["ok"] == "yes" for row in environment_rows()), "the venv does not match requirements.txt"
    assert self_check()[-1].startswith("all ")
    mismatch = environment_rows({"langgraph": "0.0.1", "no-such-package": "1.0"})
    assert [r["ok"] for r in mismatch] == ["NO", "NO"] and mismatch[1]["installed"] == "missing"


def _nb(*sources):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell("# 42 · Title\n\n**Time:** 12 minutes")] + [
        nbformat.v4.new_code_cell(s) for s in sources]
    return nb


def test_annotate_derives_ids_roles_and_metadata():
    nb = annotate(_nb("import x", "### BEGIN SOLUTION\na = 1\n### END SOLUTION", 'check("42.1", a)',
                      "# nbval-ignore-output: timings vary\nprint(1)"), "42_title")
    assert [c.id for c in nb.cells] == ["cell-000", "setup", "exercise-42-1", "check-42-1", "cell-004"]
    assert nb.cells[2].metadata["course"] == {"role": "exercise", "exercise": "42.1"}
    assert nb.metadata["course"] == {"chapter": "42", "slug": "42_title", "title": "42 · Title",
                                     "minutes": 12, "exercises": ["42.1"]}
    assert nb.cells[4].metadata["tags"] == ["nbval-ignore-output"]
    assert ignore_reason(nb.cells[4]) == "timings vary" and ignored_by_nbval(nb.cells[4])


def test_normalize_drops_volatile_parts():
    nb = _nb("print(1)")
    cell = nb.cells[1]
    cell.metadata["execution"] = {"iopub.status.busy": "now"}
    cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text="a"),
                    nbformat.v4.new_output("stream", name="stdout", text="b"),
                    nbformat.v4.new_output("display_data", data={WIDGET_VIEW: {"model_id": "x"}, "text/plain": "W"})]
    nb.metadata["widgets"] = {"state": {}}
    normalize(nb)
    assert "execution" not in cell.metadata and "widgets" not in nb.metadata
    assert cell.outputs[0]["text"] == "ab" and cell.outputs[1]["data"] == {"text/plain": "W"}
    assert len(coalesce_streams([])) == 0


def test_coverage_counts_ignored_cells(tmp_path):
    nb = annotate(_nb("print(1)", "# nbval-ignore-output: random\nprint(2)", "# nbval-ignore-output:\nprint(3)"),
                  "42_t")
    nbformat.write(nb, tmp_path / "42_t.ipynb")
    result = folder_coverage(tmp_path)
    assert (result.code_cells, result.compared) == (3, 1)
    assert [c.reason for c in result.ignored] == ["random", None]


def test_run_python_children_carry_the_run_tag_and_time_out_cleanly():
    from helpers.servers import RUN_ENV

    tagged = run_python(f"import os; print(os.environ.get({RUN_ENV!r}))")
    assert tagged.stdout.strip() == os.environ.get(RUN_ENV, "None")  # the test run's id reaches every child
    started = time.monotonic()
    with pytest.raises(subprocess.TimeoutExpired):
        run_python("import time; time.sleep(30)", timeout=0.5)
    assert time.monotonic() - started < 10  # killed and reaped, not waited for


ALLOCATE_AND_WAIT = "import sys; block = bytearray(64 * 1024 * 1024); print('ready', flush=True); sys.stdin.read()"
# A parent (a stand-in for a kernel) whose child (a stand-in for its server) holds 64 MiB
# until the parent's first input line; the parent then waits for the end of its input.
PARENT_OF_ALLOCATOR = f"""
import subprocess, sys
child = subprocess.Popen([sys.executable, "-c", {ALLOCATE_AND_WAIT!r}], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         text=True)
print(child.stdout.readline().strip(), flush=True)
sys.stdin.readline()
child.stdin.close()
child.wait()
print("child gone", flush=True)
sys.stdin.read()
"""


def test_memory_counts_a_process_and_its_children():
    parent = subprocess.Popen([sys.executable, "-c", PARENT_OF_ALLOCATOR], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    try:
        assert parent.stdout.readline().strip() == "ready"
        with PeakMemory(parent.pid, interval=0.02) as peak:
            assert tree_memory_mb(parent.pid) > 64  # the child's block counts for the parent
            parent.stdin.write("go on\n")
            parent.stdin.flush()
            assert parent.stdout.readline().strip() == "child gone"
            after = tree_memory_mb(parent.pid)
        assert after < 48 and peak.mb > 64  # the peak remembers what is gone now
    finally:
        parent.kill()
        parent.wait()
    assert tree_memory_mb(parent.pid) == 0.0  # gone


LINUX_ONLY = (re.compile("/" + "proc"), re.compile(r"""(set_start_method|get_context)\(\s*["']fork["']"""))


def test_the_code_makes_no_linux_only_calls():
    # macOS has no proc filesystem and no safe fork start method: psutil and spawn work everywhere.
    offenders = [f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
                 for folder in ("helpers", "course", "tests") for path in sorted((ROOT / folder).rglob("*.py"))
                 for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
                 if any(pattern.search(line) for pattern in LINUX_ONLY)]
    assert offenders == []


def test_no_helper_shadows_a_builtin_name():
    """No module-level class, function or constant of helpers/ takes a built-in's name (read by AST: fast)."""
    import ast
    import builtins

    from course.layout import HELPERS

    shadowed = []
    for path in sorted(HELPERS.rglob("*.py")):
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            names = [node.name] if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) else \
                [t.id for t in getattr(node, "targets", []) if isinstance(t, ast.Name)]
            shadowed += [f"{path.relative_to(HELPERS.parent)}: {name}" for name in names if hasattr(builtins, name)]
    assert shadowed == []
