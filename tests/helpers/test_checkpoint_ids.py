"""helpers.checkpoint_ids decodes LangGraph's uuid6 checkpoint IDs correctly."""

import itertools
import time
import uuid
from datetime import UTC, datetime

import uuid6 as uuid6_package
from hypothesis import given
from hypothesis import strategies as st
from langgraph.checkpoint.base.id import uuid6
from langgraph.checkpoint.memory import InMemorySaver

from helpers import checkpoint_ids as cid
from helpers.travel_graphs import build_chat_graph, say

WHEN = datetime(2025, 3, 14, 9, 26, 53, 123456, tzinfo=UTC)


@given(step=st.integers(min_value=-1, max_value=16382))
def test_step_and_fourth_group_round_trip(step):
    made = uuid6(clock_seq=step)
    assert cid.step_of(made) == step
    assert cid.fourth_group(made) == cid.expected_fourth_group(step)


def test_steps_wrap_after_14_bits():
    assert [cid.step_of(uuid6(clock_seq=s)) for s in (8191, 8192, 16382, 16383, 16389)] == [8191, 8192, 16382, -1, 5]


def test_fourth_group_examples():
    assert [cid.expected_fourth_group(s) for s in (-1, 0, 3, 16389)] == ["bfff", "8000", "8003", "8005"]


@given(when=st.datetimes(min_value=datetime(1600, 1, 1), max_value=datetime(5000, 1, 1),
                         timezones=st.just(UTC)),
       seq=st.integers(0, 0x3FFF), node=st.integers(0, 2**48 - 1))
def test_specimen_matches_the_uuid6_package(when, seq, node):
    made = cid.make_uuid6(when, seq, node)
    assert made.version == 6 and (made.int >> 62) & 0b11 == 0b10
    assert cid.timestamp_100ns(made) == uuid6_package.UUID(str(made)).time
    assert cid.decoded_datetime(made) == when
    assert cid.fields(made)["node"] == node and cid.fields(made)["clock_seq"] == seq


def test_real_ids_decode_to_now_and_stdlib_does_not():
    before = time.time()
    made = uuid6(clock_seq=0)
    assert abs(cid.unix_seconds(made) - before) < 1
    assert cid.stdlib_time(made) != cid.timestamp_100ns(made)
    assert cid.stdlib_time(made) == uuid.UUID(str(made)).time


def test_layout_rows_cover_128_bits():
    rows = cid.layout_rows(cid.make_uuid6(WHEN, 2, 0x0123456789AB))
    assert sum(r["width"] for r in rows) == 128
    assert [r["hex"] for r in rows if r["field"] in ("version", "clock_seq", "node")] == ["6", "0002", "0123456789ab"]


def test_bucket_labels():
    assert cid.bucket_seconds(-0.1) == "negative"
    assert cid.bucket_seconds(0.5) == "< 1 s" and cid.bucket_seconds(2) == ">= 1 s"
    assert cid.bucket_seconds(0.002, (0.01, 1.0)) == "< 10 ms"


def test_generator_profiles():
    v4 = cid.generator_profile("v4", uuid.uuid4, n=500)
    v6 = cid.generator_profile("v6", lambda: uuid6(clock_seq=0), n=500, decode=cid.unix_seconds)
    v7 = cid.generator_profile("v7", uuid6_package.uuid7, n=500, decode=cid.uuid7_unix_seconds)
    assert (v4["version"], v6["version"], v7["version"]) == ([4], [6], [7])
    assert not v4["string_order_is_creation_order"] and v6["string_order_is_creation_order"]
    assert v7["string_order_is_creation_order"] and v6["embeds_time"] and not v4["embeds_time"]
    assert v6["last_id_ahead_of_clock"] == "< 10 ms"


def test_uuid7_profile_in_a_fresh_process_starts_from_the_clock_every_time():
    # 2,000 IDs put uuid7 up to 2 s ahead; in one process the next profile would start there
    rows = [cid.uuid7_profile_in_fresh_process("v7", n=2000) for _ in range(2)]
    assert rows[0] == rows[1]
    assert rows[0]["generator"] == "v7" and rows[0]["version"] == [7] and rows[0]["first_id_vs_clock"] == "< 1 s"
    assert rows[0]["string_order_is_creation_order"] and rows[0]["last_id_ahead_of_clock"] == ">= 1 s"
    cid.generator_profile("v7", uuid6_package.uuid7, n=2000, decode=cid.uuid7_unix_seconds)
    again = cid.generator_profile("v7", uuid6_package.uuid7, n=10, decode=cid.uuid7_unix_seconds)
    assert again["first_id_vs_clock"] == ">= 1 s"


def _thread():
    saver = InMemorySaver()
    graph = build_chat_graph(saver)
    say(graph, "t", "I prefer a window seat")
    say(graph, "t", "Which seat do I prefer?")
    return saver, graph


def test_parent_chain_links_and_order():
    saver, _ = _thread()
    rows = cid.walk_parent_chain(saver, {"configurable": {"thread_id": "t"}})
    assert [r["step"] for r in rows] == [4, 3, 2, 1, 0, -1]
    assert all(r["parent_stored"] and r["parent_sorts_first"] for r in rows[:-1])
    assert rows[-1]["parent_id"] is None and rows[-1]["parent_stored"] is None
    labels = {r["id"]: f"X{i}" for i, r in enumerate(rows)}
    assert cid.labelled(rows, labels)[0]["parent_id"] == "X1"


def test_copy_with_new_ids_keeps_order_with_uuid6_and_scrambles_with_uuid4():
    saver, _ = _thread()
    for mint, latest_step in [(lambda: uuid6(clock_seq=0), 4)]:
        target = InMemorySaver()
        mapping = cid.copy_with_new_ids(saver, target, "t", "copy", mint)
        assert len(mapping) == 6
        latest = build_chat_graph(target).get_state({"configurable": {"thread_id": "copy"}})
        assert latest.metadata["step"] == latest_step
    seeded = (cid.seeded_uuid4(n) for n in itertools.count(1))
    target = InMemorySaver()
    cid.copy_with_new_ids(saver, target, "t", "copy", lambda: next(seeded))
    history = build_chat_graph(target).get_state_history({"configurable": {"thread_id": "copy"}})
    steps = [s.metadata["step"] for s in history]
    assert sorted(steps) == [-1, 0, 1, 2, 3, 4] and steps != [4, 3, 2, 1, 0, -1]


def test_seeded_uuid4_is_reproducible_version_4():
    assert cid.seeded_uuid4(5) == cid.seeded_uuid4(5) and cid.seeded_uuid4(5).version == 4


def test_seeded_minter_restarts_identically():
    a, b = cid.seeded_uuid4_minter(), cid.seeded_uuid4_minter()
    assert [a() for _ in range(3)] == [b() for _ in range(3)] == [cid.seeded_uuid4(n) for n in (1, 2, 3)]
