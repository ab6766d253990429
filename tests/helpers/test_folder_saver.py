"""The saved saver of chapter 16 and the course's CountingSaver under LangGraph's conformance suite."""

import asyncio
import json

import pytest
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.memory import InMemorySaver

from helpers import conformance, counting_saver, folder_saver, travel_graphs


def test_folder_saver_passes_every_base_capability_and_copy_thread():
    report = conformance.run_suite(folder_saver.FolderSaver)
    assert report.passed_all_base(), conformance.report_rows(report)
    assert report.results["copy_thread"].passed is True
    assert {cap: report.results[cap].detected for cap in ("delete_for_runs", "prune")} == \
        {"delete_for_runs": False, "prune": False}


def test_counting_saver_passes_the_base_capabilities_and_lacks_the_extended_ones_as_its_docstring_says():
    report = conformance.run_suite(lambda folder: counting_saver.CountingSaver(InMemorySaver()))
    assert report.passed_all_base(), conformance.report_rows(report)
    assert [report.results[cap].detected for cap in conformance.EXTENDED] == [False, False, False]
    doc = counting_saver.__doc__
    assert "passes all five base capabilities" in doc and "copy_thread``, ``delete_for_runs`` and ``prune" in doc
    with pytest.raises(NotImplementedError):
        counting_saver.CountingSaver(InMemorySaver()).copy_thread("a", "b")


@pytest.mark.parametrize("step,failing", [
    (folder_saver.PutGetSaver, {"get_tuple": "test_get_tuple_pending_writes"}),
    (folder_saver.ListingSaver, {"get_tuple": "test_get_tuple_pending_writes",
                                 "list": "test_list_includes_pending_writes"}),
    (folder_saver.WritesSaver, {}),
])
def test_each_step_fails_only_what_it_leaves_out(step, failing):
    wanted = ["put", "get_tuple"] + (["list"] if step is not folder_saver.PutGetSaver else [])
    if step is folder_saver.WritesSaver:
        wanted.append("put_writes")
    report = conformance.run_suite(step, wanted)
    got = {cap: [f.split(":", 1)[0] for f in report.results[cap].failures] for cap in wanted}
    assert got == {cap: [failing[cap]] if cap in failing else [] for cap in wanted}


def test_a_new_saver_object_on_the_same_folder_sees_the_thread(tmp_path):
    chat = travel_graphs.build_chat_graph(folder_saver.FolderSaver(tmp_path))
    travel_graphs.say(chat, "t", "I'd like an aisle seat")
    again = travel_graphs.build_chat_graph(folder_saver.FolderSaver(tmp_path))
    assert travel_graphs.say(again, "t", "Which seat did I ask for?") == "You asked for an aisle seat."


def test_odd_thread_ids_and_namespaces_are_quoted_into_file_names(tmp_path):
    saver = folder_saver.FolderSaver(tmp_path)
    chat = travel_graphs.build_chat_graph(saver)
    odd = "../trip/1?*:é"
    travel_graphs.say(chat, odd, "I'd like a window seat")
    assert saver.thread_ids() == [odd]
    assert all(p.resolve().is_relative_to(tmp_path.resolve()) for p in tmp_path.rglob("*"))
    saver.delete_thread(odd)
    assert saver.thread_ids() == []


def test_files_are_json_and_values_go_through_serde(tmp_path):
    saver = folder_saver.FolderSaver(tmp_path)
    travel_graphs.say(travel_graphs.build_chat_graph(saver), "t", "I'd like a window seat")
    docs = [json.loads(p.read_text()) for p in tmp_path.rglob("*.json")]
    assert docs and all(isinstance(d, dict) for d in docs)
    assert not any(".tmp" in p.name for p in tmp_path.rglob("*"))
    kinds = {d["type"] for d in docs if "type" in d} | {d["checkpoint"]["type"] for d in docs if "checkpoint" in d}
    assert "pickle" not in kinds


def test_ainvoke_runs_on_the_async_methods(tmp_path):
    chat = travel_graphs.build_chat_graph(folder_saver.FolderSaver(tmp_path))
    result = asyncio.run(chat.ainvoke({"messages": [HumanMessage("I'd like a window seat")]},
                                      {"configurable": {"thread_id": "a"}}))
    assert result["messages"][-1].content == "Noted: a window seat."


def test_journal_saver_reads_the_last_line_per_slot_and_leaves_put_writes_to_the_learner(tmp_path):
    saver = folder_saver.JournalSaver(tmp_path)
    config = {"configurable": {"thread_id": "t", "checkpoint_ns": "", "checkpoint_id": "c"}}
    row = {"task_id": "a", "idx": 0, "channel": "x", "task_path": ""}
    saver.append_journal(config, [{**row, "value": saver.encode(1)}, {**row, "value": saver.encode(2)}])
    assert saver._pending_writes("t", "", "c") == [("a", "x", 2)]
    with pytest.raises(NotImplementedError, match="16.3"):
        saver.put_writes(config, [], "a")


def test_report_rows_and_verdict():
    report = conformance.run_suite(folder_saver.PutGetSaver, ["get_tuple"])
    rows = conformance.report_rows(report, ["get_tuple", "list"])
    assert [r["result"] for r in rows] == ["FAILED 1 of 10", "not run"]
    ok, hint = conformance.verdict(report, ["get_tuple"])
    assert not ok and "test_get_tuple_pending_writes" in hint and "pending_writes" in hint
    with pytest.raises(ValueError, match="unknown capabilities"):
        conformance.run_suite(folder_saver.PutGetSaver, ["puts"])


def test_server_checkpointer_yields_a_folder_saver_on_the_folder_in_its_environment(tmp_path, monkeypatch):
    from helpers import server_checkpointer

    monkeypatch.setenv(server_checkpointer.ROOT_ENV, str(tmp_path))

    async def enter():
        async with server_checkpointer.folder_checkpointer() as saver:
            return saver

    saver = asyncio.run(enter())
    assert isinstance(saver, folder_saver.FolderSaver) and saver.root == tmp_path


def test_side_by_side_marks_every_line_and_says_whether_all_match(capsys):
    conformance.side_by_side(["a", "b"], ["a", "c", "d"])
    out = capsys.readouterr().out.splitlines()
    assert [line.split()[-1] for line in out[2:5]] == ["yes", "NO", "NO"]
    assert out[-1] == "identical: False"
