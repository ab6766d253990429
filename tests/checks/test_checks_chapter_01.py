"""Wrong answers for chapter 01's exercises must fail with a hint, and pasted cells must not pass (see chapter 00)."""

from langchain_core.messages import AIMessage, RemoveMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, MessagesState, StateGraph

from helpers.checks import PASSED, evaluate
from helpers.travel_graphs import build_chat_graph, reply, reply_to_last_only, stand_in_reply


def builder_with(node):
    builder = StateGraph(MessagesState)
    builder.add_node("reply", node)
    builder.add_edge(START, "reply")
    builder.add_edge("reply", END)
    return builder


def right_build(checkpointer, node):
    return builder_with(node).compile(checkpointer=checkpointer)


def right_config(conversation_id):
    return {"configurable": {"thread_id": conversation_id}}


def right_turns(graph, conversation_id):
    messages = graph.get_state(right_config(conversation_id)).values.get("messages", [])
    return sum(1 for m in messages if m.type == "human")


# -- 01.1 turns_so_far: realistic mistakes ---------------------------------------------------
def turns_all_messages(graph, conversation_id):
    """Cell 'message_count' of section 'Other threads, other savers, other graph objects', pasted."""
    return len(graph.get_state({"configurable": {"thread_id": conversation_id}}).values.get("messages", []))


def turns_strict_values(graph, conversation_id):
    return sum(1 for m in graph.get_state(right_config(conversation_id)).values["messages"] if m.type == "human")


def turns_by_invoking(graph, conversation_id):
    result = graph.invoke({"messages": []}, right_config(conversation_id))
    return sum(1 for m in result["messages"] if m.type == "human")


def turns_fixed_thread(graph, conversation_id):
    """The section's config, {"thread_id": "trip-1"}, pasted instead of config_for."""
    messages = graph.get_state({"configurable": {"thread_id": "trip-1"}}).values.get("messages", [])
    return sum(1 for m in messages if m.type == "human")


# -- 01.1: realistic mistakes ---------------------------------------------------------------
def build_without_checkpointer(checkpointer, node):
    return builder_with(node).compile()


def build_with_own_saver(checkpointer, node):
    return builder_with(node).compile(checkpointer=InMemorySaver())


def build_not_compiled(checkpointer, node):
    return builder_with(node)


def build_short_sighted(checkpointer, node):
    """The node argument ignored, and the careless node of section 'Saved state is not what the model sees' used."""
    return builder_with(reply_to_last_only).compile(checkpointer=checkpointer)


def build_last_message_only(checkpointer, node):
    """The node given, but handed only the newest message: the graph must run the node it is given, unchanged."""
    return builder_with(lambda state: node({"messages": state["messages"][-1:]})).compile(checkpointer=checkpointer)


# -- 01.1: pasted cells ---------------------------------------------------------------------
def pasted_builder_lines(checkpointer, node):
    """The four builder lines of section 'The graph: one node, two edges', pasted: the node is always reply."""
    return builder_with(reply).compile(checkpointer=checkpointer)


def pasted_build_chat_graph(checkpointer, node):
    """The saved helper of section 'The same graph in one call', called: its node is reply or reply_to_last_only."""
    return build_chat_graph(checkpointer)


# -- 01.2: learner nodes -------------------------------------------------------------------
def recent_two(state):
    return {"messages": [stand_in_reply(state["messages"][-2:])]}


def recent_all(state):
    return {"messages": [stand_in_reply(state["messages"])]}


def recent_by_trimming(state):
    """Trims the saved conversation instead of choosing what to hand the model."""
    stale = [RemoveMessage(id=m.id) for m in state["messages"][:-3]]
    return {"messages": stale + [stand_in_reply(state["messages"][-3:])]}


def recent_oldest_three(state):
    """learner-E's trial: three messages, but the oldest three."""
    return {"messages": [stand_in_reply(state["messages"][:3])]}


SURVIVAL = {
    "InMemorySaver, new graph, same process": True,
    "InMemorySaver, kernel restarted": False,
    "SQLite file, kernel restarted": True,
    "SQLite ':memory:', kernel restarted": False,
    "SQLite ':memory:', new graph, same saver": True,
}

WRONG_ANSWERS = {
    "01.1": [((build_without_checkpointer, right_config, right_turns), "compile(checkpointer=checkpointer)"),
             ((build_with_own_saver, right_config, right_turns), "a checkpointer of its own"),
             ((build_not_compiled, right_config, right_turns), "returned the builder"),
             ((build_short_sighted, right_config, right_turns), "did not run the node it was given"),
             ((build_last_message_only, right_config, right_turns), "must run the node it is given, and nothing else"),
             ((right_build, lambda c: {"thread_id": c}, right_turns), "inside config['configurable']"),
             ((right_build, lambda c: {"configurable": {"thread_id": "chat"}}, right_turns), "same thread_id"),
             ((right_build, lambda c: {"configurable": {"user": c}}, right_turns), "needs {'configurable'"),
             ((right_build, lambda c: None, right_turns), "expected a dict"),
             ((right_build, right_config, turns_all_messages), "count only the user's"),
             ((right_build, right_config, turns_strict_values), "values.get('messages', [])"),
             ((right_build, right_config, turns_by_invoking), "it ran the graph"),
             ((right_build, right_config, turns_fixed_thread), "gave 0 although"),
             ((right_build, right_config, lambda g, c: "2"), "return an int")],
    "01.2": [((recent_two,),  "state['messages'][-3:]"),
             ((recent_oldest_three,), "state['messages'][:3] is the oldest three"),
             ((recent_all,), "more than the newest three"),
             ((recent_by_trimming,), "must not remove saved messages"),
             ((lambda state: stand_in_reply(state["messages"][-3:]),), "a dict like"),
             ((lambda state: {"messages": [AIMessage("Sure.")]},), "answered 'Sure.'")],
    "01.3": [(({**SURVIVAL, "SQLite ':memory:', kernel restarted": True},), "1 of 5 is off"),
             (({**SURVIVAL, "InMemorySaver, new graph, same process": False, "InMemorySaver, kernel restarted": True},),
              "2 of 5 are off; 'InMemorySaver, new graph, same process': state belongs to"),
             (({**SURVIVAL, "SQLite file, kernel restarted": "yes"},), "expected a bool"),
             (({"InMemorySaver, kernel restarted": False},), "missing"),
             (({**SURVIVAL, "Postgres": True},), "unexpected")],
}


COPY_ATTACKS = {
    "01.1": [((pasted_build_chat_graph, right_config, right_turns),
              "the saved build_chat_graph of section 'The same graph in one call', called"),
             ((pasted_builder_lines, right_config, right_turns),
              "the four builder lines of section 'The graph: one node, two edges', pasted"),
             ((pasted_build_chat_graph, right_config, turns_all_messages),
              "build_chat_graph and cell 'message_count' of section 'Other threads, other savers, other graph "
              "objects', pasted"),
             ((right_build, lambda c: {"configurable": {"thread_id": "trip-1"}}, turns_fixed_thread),
              "the four builder lines of section 'The graph: one node, two edges' and its config for trip-1")],
    "01.2": [((reply_to_last_only,), "cell 'reply_to_last_only' of section 'Saved state is not what the model sees'"),
             ((reply,), "cell 'reply' of section 'The graph: one node, two edges'")],
    "01.3": [(({"InMemorySaver, new graph, same process": False, "InMemorySaver, kernel restarted": False,
                "SQLite file, kernel restarted": True, "SQLite ':memory:', kernel restarted": True,
                "SQLite ':memory:', new graph, same saver": True},),
              "the restart section's result read as a rule per class: InMemorySaver forgets, SqliteSaver keeps")],
}


def test_right_answers_pass():
    assert evaluate("01.1", right_build, right_config, right_turns).status == PASSED
    assert evaluate("01.1", lambda saver, node: builder_with(node).compile(checkpointer=saver), right_config,
                    right_turns).status == PASSED
    assert evaluate("01.2", lambda state: {"messages": [stand_in_reply(state["messages"][-3:])]}).status == PASSED
    assert evaluate("01.3", dict(SURVIVAL)).status == PASSED
