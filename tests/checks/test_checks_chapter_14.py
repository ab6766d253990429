"""Wrong answers and copy attacks for chapter 14's exercises must fail with a hint."""

import asyncio
import hashlib
import uuid

import pytest
from langchain_core.messages import HumanMessage
from psycopg.rows import dict_row, tuple_row

from helpers.checks import FAILED, PASSED, evaluate
from helpers.ledger import ids
from helpers.persistent_service import CONNECTION_KWARGS, ThreadLocks

# -- 14.1 ------------------------------------------------------------------------------


def right_kwargs(pooler):
    return {"autocommit": True, "row_factory": dict_row, "prepare_threshold": None if pooler == "transaction" else 0}


def always_zero(pooler):
    return dict(CONNECTION_KWARGS)


def always_none(pooler):
    return {**CONNECTION_KWARGS, "prepare_threshold": None}


def none_behind_every_transaction_pooler(pooler):
    return {**CONNECTION_KWARGS, "prepare_threshold": None if pooler and pooler.startswith("transaction") else 0}


def no_autocommit(pooler):
    return {**right_kwargs(pooler), "autocommit": False}


def tuple_rows(pooler):
    return {**right_kwargs(pooler), "row_factory": tuple_row}


def session_too(pooler):
    return {**right_kwargs(pooler), "prepare_threshold": None if pooler in ("session", "transaction") else 0}


def default_threshold(pooler):
    kwargs = right_kwargs(pooler)
    del kwargs["prepare_threshold"]
    return kwargs


def extra_key(pooler):
    return {**right_kwargs(pooler), "check": True}


# -- 14.2 ------------------------------------------------------------------------------


async def turn(graph, thread_id, text, context):
    result = await graph.ainvoke({"messages": [HumanMessage(text)]}, {"configurable": {"thread_id": thread_id}},
                                 context=context)
    return result["messages"][-1].content


async def unguarded(busy, graph, thread_id, text, context):
    return await turn(graph, thread_id, text, context)


async def locks_hold(busy, graph, thread_id, text, context):
    async with busy.hold(thread_id):  # the cell 'send_message' with its guard renamed: busy is a set
        return await turn(graph, thread_id, text, context)


LOCKS = ThreadLocks()


async def waits_for_the_lock(busy, graph, thread_id, text, context):
    async with LOCKS.hold(thread_id):  # serialized: the second click waits, then runs again
        return await turn(graph, thread_id, text, context)


async def await_between_check_and_mark(busy, graph, thread_id, text, context):
    if thread_id in busy:
        return None
    await asyncio.sleep(0)  # another call checks here too, before this one marks the thread
    busy.add(thread_id)
    try:
        return await turn(graph, thread_id, text, context)
    finally:
        busy.discard(thread_id)


async def never_cleared(busy, graph, thread_id, text, context):
    if thread_id in busy:
        return None
    busy.add(thread_id)
    return await turn(graph, thread_id, text, context)


async def cleared_only_on_success(busy, graph, thread_id, text, context):
    if thread_id in busy:
        return None
    busy.add(thread_id)
    reply = await turn(graph, thread_id, text, context)
    busy.discard(thread_id)
    return reply


async def one_flag_for_all(busy, graph, thread_id, text, context):
    if busy:
        return None
    busy.add(thread_id)
    try:
        return await turn(graph, thread_id, text, context)
    finally:
        busy.discard(thread_id)


async def no_context(busy, graph, thread_id, text, context):
    if thread_id in busy:
        return None
    busy.add(thread_id)
    try:
        return await turn(graph, thread_id, text, None)
    finally:
        busy.discard(thread_id)


async def returns_state(busy, graph, thread_id, text, context):
    if thread_id in busy:
        return None
    busy.add(thread_id)
    try:
        return await graph.ainvoke({"messages": [HumanMessage(text)]}, {"configurable": {"thread_id": thread_id}},
                                   context=context)
    finally:
        busy.discard(thread_id)


def sync_invoke(busy, graph, thread_id, text, context):
    return graph.invoke({"messages": [HumanMessage(text)]}, {"configurable": {"thread_id": thread_id}},
                        context=context)["messages"][-1].content


async def right_send(busy, graph, thread_id, text, context):
    if thread_id in busy:
        return None
    busy.add(thread_id)
    try:
        result = await graph.ainvoke({"messages": [HumanMessage(text)]},
                                     {"configurable": {"thread_id": thread_id}}, context=context)
    finally:
        busy.remove(thread_id)
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


def no_tenant(conversation_id):
    return "conv-" + hashlib.sha256(conversation_id.encode()).hexdigest()[:40]


def tenant_with_slash(conversation_id):
    return conversation_id.split("/")[0] + "/" + hashlib.sha256(conversation_id.encode()).hexdigest()[:40]


def right_thread_id(conversation_id):
    return conversation_id.split("/")[0] + ":" + str(uuid.uuid5(uuid.NAMESPACE_URL, conversation_id))


WRONG_ANSWERS = {
    "14.1": [
        ((always_zero,), "prepare_threshold=None turns preparing off"),
        ((always_none,), "prepared statements work here"),
        ((none_behind_every_transaction_pooler,), "tracks prepared statements"),
        ((no_autocommit,), "autocommit must be True"),
        ((tuple_rows,), "dict_row"),
        ((session_too,), "stays on its server connection"),
        ((default_threshold,), "say prepare_threshold explicitly"),
        ((extra_key,), "is not one of the saver's connection settings"),
    ],
    "14.2": [
        ((unguarded,), "two turns on one thread ran at once"),
        ((waits_for_the_lock,), "must return None at once"),
        ((await_between_check_and_mark,), "before the first await"),
        ((never_cleared,), "stop being busy when its turn ends"),
        ((cleared_only_on_success,), "remove it in a finally block"),
        ((one_flag_for_all,), "not the whole service"),
        ((no_context,), "pass context=context"),
        ((returns_state,), "return the reply's text"),
        ((sync_invoke,), "your function raised"),
        ((locks_hold,), "your function raised AttributeError"),
    ],
    "14.3": [
        ((identity,), "at most 64 ASCII characters"),
        ((prefix_only,), "contains the conversation's text"),
        ((hash_of_prefix,), "use the whole ID"),
        ((random_each_time,), "the same conversation must get the same one"),
        ((full_sha256_with_prefix,), "at most 64 ASCII characters"),
        ((no_tenant,), "does not start with 'acme:'"),
        ((tenant_with_slash,), "contains the conversation's text"),
    ],
}

# What a learner gets by pasting the nearest visible cell into the exercise cell.
COPY_ATTACKS = {
    "14.1": [((always_zero,), "CONNECTION_KWARGS of section 'PostgreSQL, async, through a pool', returned for "
                              "every pooler"),
             ((always_none,), "CONNECTION_KWARGS with the prepare_threshold=None of section 'Behind a "
                              "transaction-mode pooler', for every pooler")],
    "14.2": [((unguarded,), "the ainvoke call of cell 'send_message' in section 'The service', without its "
                            "service.serialized(...) guard"),
             ((locks_hold,), "cell 'send_message' with service.serialized(setup, thread_id) renamed to "
                             "busy.hold(thread_id), as ThreadLocks has it"),
             ((waits_for_the_lock,), "cell 'send_message' guarded by a ThreadLocks (section 'The service'): the "
                                     "second click waits and runs again")],
    "14.3": [((random_each_time,), "a fresh random ID per call, like secrets.token_hex(...) in the cell of "
                                   "section 'A thread_id that is too long'"),
             ((identity,), "the conversation ID used as the thread_id, as every visible cell does with its IDs"),
             ((ids.fingerprint,), "the saved helper ids.fingerprint (chapter 11): a sha256 of the whole ID, "
                                  "without the tenant"),
             ((lambda c: ids.stable_id(uuid.NAMESPACE_URL, c),), "the saved helper ids.stable_id (chapter 11): a "
                                                                 "uuid5 of the whole ID, without the tenant")],
}


@pytest.mark.parametrize("exercise_id,answer", [("14.1", right_kwargs), ("14.2", right_send),
                                                 ("14.3", right_thread_id)])
def test_other_right_answers_pass(exercise_id, answer):
    assert evaluate(exercise_id, answer).status == PASSED, evaluate(exercise_id, answer)


def test_a_wrong_answer_reports_failed_not_an_exception():
    assert evaluate("14.2", unguarded).status == FAILED
