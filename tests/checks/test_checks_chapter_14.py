"""Wrong answers and copy attacks for chapter 14's exercises must fail with a hint."""

import asyncio
import hashlib
import uuid

import pytest
from langchain_core.messages import HumanMessage
from psycopg.rows import dict_row, tuple_row

from helpers.checks import FAILED, PASSED, evaluate
from helpers.persistent_service import CONNECTION_KWARGS

# -- 14.1 ------------------------------------------------------------------------------


def right_kwargs(pooler):
    return {"autocommit": True, "row_factory": dict_row, "prepare_threshold": None if pooler == "transaction" else 0}


def always_zero(pooler):
    return dict(CONNECTION_KWARGS)


def always_none(pooler):
    return {"autocommit": True, "row_factory": dict_row, "prepare_threshold": None}


def no_autocommit(pooler):
    return {**right_kwargs(pooler), "autocommit": False}


def tuple_rows(pooler):
    return {**right_kwargs(pooler), "row_factory": tuple_row}


def session_too(pooler):
    return {**right_kwargs(pooler), "prepare_threshold": None if pooler else 0} | (
        {} if pooler != "session" else {"prepare_threshold": 5})


def default_threshold(pooler):
    kwargs = right_kwargs(pooler)
    del kwargs["prepare_threshold"]
    return kwargs


def extra_key(pooler):
    return {**right_kwargs(pooler), "check": True}


# -- 14.2 ------------------------------------------------------------------------------


async def unguarded(locks, graph, thread_id, text, context):
    result = await graph.ainvoke({"messages": [HumanMessage(text)]}, {"configurable": {"thread_id": thread_id}},
                                 context=context)
    return result["messages"][-1].content


GLOBAL = {}


async def one_lock_for_all(locks, graph, thread_id, text, context):
    lock = GLOBAL.setdefault(id(asyncio.get_running_loop()), asyncio.Lock())
    async with lock:
        result = await graph.ainvoke({"messages": [HumanMessage(text)]},
                                     {"configurable": {"thread_id": thread_id}}, context=context)
    return result["messages"][-1].content


async def no_context(locks, graph, thread_id, text, context):
    async with locks.hold(thread_id):
        result = await graph.ainvoke({"messages": [HumanMessage(text)]}, {"configurable": {"thread_id": thread_id}})
    return result["messages"][-1].content


async def returns_state(locks, graph, thread_id, text, context):
    async with locks.hold(thread_id):
        return await graph.ainvoke({"messages": [HumanMessage(text)]}, {"configurable": {"thread_id": thread_id}},
                                   context=context)


async def lock_per_call(locks, graph, thread_id, text, context):
    async with asyncio.Lock():  # a new lock each call guards nothing
        result = await graph.ainvoke({"messages": [HumanMessage(text)]},
                                     {"configurable": {"thread_id": thread_id}}, context=context)
    return result["messages"][-1].content


def sync_invoke(locks, graph, thread_id, text, context):
    return graph.invoke({"messages": [HumanMessage(text)]}, {"configurable": {"thread_id": thread_id}},
                        context=context)["messages"][-1].content


async def right_send(locks, graph, thread_id, text, context):
    async with locks.hold(thread_id):
        result = await graph.ainvoke({"messages": [HumanMessage(text)]},
                                     {"configurable": {"thread_id": thread_id}}, context=context)
    return result["messages"][-1].content


# -- 14.3 ------------------------------------------------------------------------------


def identity(conversation_id):
    return conversation_id


def prefix_only(conversation_id):
    return conversation_id[:64]


def hash_of_prefix(conversation_id):
    return hashlib.sha256(conversation_id[:40].encode()).hexdigest()


def random_each_time(conversation_id):
    return str(uuid.uuid4())


def full_sha256_with_prefix(conversation_id):
    return "conversation-" + hashlib.sha256(conversation_id.encode()).hexdigest()


def right_thread_id(conversation_id):
    return str(uuid.uuid5(uuid.NAMESPACE_URL, conversation_id))


WRONG_ANSWERS = {
    "14.1": [
        ((always_zero,), "prepare_threshold=None turns preparing off"),
        ((no_autocommit,), "autocommit must be True"),
        ((tuple_rows,), "dict_row"),
        ((session_too,), "use 0 (what from_conn_string uses) or None"),
        ((default_threshold,), "say prepare_threshold explicitly"),
        ((extra_key,), "is not one of the saver's connection settings"),
    ],
    "14.2": [
        ((unguarded,), "hold locks.hold(thread_id) around the run"),
        ((one_lock_for_all,), "not one lock for every thread"),
        ((no_context,), "pass context=context"),
        ((returns_state,), "return the reply's text"),
        ((lock_per_call,), "hold locks.hold(thread_id) around the run"),
        ((sync_invoke,), "your function raised"),
    ],
    "14.3": [
        ((identity,), "at most 64 ASCII characters"),
        ((prefix_only,), "contains the conversation's text"),
        ((hash_of_prefix,), "use the whole ID"),
        ((random_each_time,), "the same conversation must get the same one"),
        ((full_sha256_with_prefix,), "at most 64 ASCII characters"),
    ],
}

# What a learner gets by pasting the nearest visible cell into the exercise cell.
COPY_ATTACKS = {
    "14.1": [((always_zero,), "CONNECTION_KWARGS of section 'PostgreSQL, async, through a pool', returned for "
                              "every pooler")],
    "14.2": [((unguarded,), "the ainvoke call of cell 'send_message' in section 'The service', without its "
                            "service.serialized(...) guard")],
    "14.3": [((random_each_time,), "a fresh random ID per call, like secrets.token_hex(...) in the cell of "
                                   "section 'A thread_id that is too long'"),
             ((identity,), "the conversation ID used as the thread_id, as every visible cell does with its IDs")],
}


@pytest.mark.parametrize("exercise_id,answer", [("14.1", right_kwargs), ("14.2", right_send),
                                                 ("14.3", right_thread_id)])
def test_other_right_answers_pass(exercise_id, answer):
    assert evaluate(exercise_id, answer).status == PASSED, evaluate(exercise_id, answer)


def test_a_wrong_answer_reports_failed_not_an_exception():
    assert evaluate("14.2", unguarded).status == FAILED
