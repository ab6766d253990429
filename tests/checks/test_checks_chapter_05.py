"""Wrong answers for chapter 05's exercises must fail with a hint (see test_checks_chapter_00)."""

from helpers.checks import PASSED, evaluate


def path_split_colon(ns):
    return ns.split(":")


def path_root_blank(ns):
    return [segment.split(":")[0] for segment in ns.split("|")]


def path_keeps_ids(ns):
    return ns.split("|") if ns else []


def path_last_only(ns):
    return [ns.split("|")[-1].split(":")[0]] if ns else []


def path_as_string(ns):
    return ns.replace("|", "/")


def _without_id(config):
    return {**config, "configurable": {k: v for k, v in config["configurable"].items() if k != "checkpoint_id"}}


def page_right(graph, config, n):
    return list(graph.get_state_history(_without_id(config), before=config, limit=n))


def page_keeps_id(graph, config, n):
    return list(graph.get_state_history(config, before=config, limit=n))


def page_no_before(graph, config, n):
    return list(graph.get_state_history(_without_id(config), limit=n))


def page_no_limit(graph, config, n):
    return list(graph.get_state_history(_without_id(config), before=config))


def page_root_only(graph, config, n):
    root = {"configurable": {"thread_id": config["configurable"]["thread_id"]}}
    return list(graph.get_state_history(root, before=config, limit=n))


def page_oldest_first(graph, config, n):
    return list(reversed(page_right(graph, config, n)))


def page_raises(graph, config, n):
    return list(graph.get_state_history(config["configurable"]["checkpoint_id"]))


def resolve_concat(conversations, tenant_id, conversation_id):
    return {"configurable": {"thread_id": f"{tenant_id}:{conversation_id}"}}


def resolve_no_check(conversations, tenant_id, conversation_id):
    return {"configurable": {"thread_id": conversations[conversation_id]["thread_id"]}}


def resolve_key_error(conversations, tenant_id, conversation_id):
    row = conversations[conversation_id]
    if row["tenant_id"] != tenant_id:
        raise PermissionError("not yours")
    return {"configurable": {"thread_id": row["thread_id"]}}


def resolve_bare_id(conversations, tenant_id, conversation_id):
    row = conversations.get(conversation_id)
    if row is None or row["tenant_id"] != tenant_id:
        raise PermissionError("not yours")
    return row["thread_id"]


def resolve_lookup_error(conversations, tenant_id, conversation_id):
    row = conversations.get(conversation_id)
    if row is None:
        raise LookupError("no such conversation")
    if row["tenant_id"] != tenant_id:
        raise PermissionError("not yours")
    return {"configurable": {"thread_id": row["thread_id"]}}


WRONG_ANSWERS = {
    "05.1": [
        ((path_split_colon,), "return []"),
        ((path_root_blank,), "return []"),
        ((path_keeps_ids,), "split levels on NS_SEP"),
        ((path_last_only,), "outermost first"),
        ((path_as_string,), "expected a list"),
    ],
    "05.2": [
        (({None: 3, True: 3, False: 1},), "checkpointer=None"),
        (({None: 7, True: 7, False: 1},), "checkpointer=True"),
        (({None: 7, True: 3, False: 3},), "checkpointer=False"),
        (({None: 7, True: 3},), "missing False"),
        (([7, 3, 1],), "expected a dict"),
        (({None: "7", True: 3, False: 1},), "expected an int"),
    ],
    "05.3": [
        ((page_keeps_id,), "exact-match filter"),
        ((page_no_before,), "pass before=config"),
        ((page_no_limit,), "pass limit=n"),
        ((page_root_only,), "keep checkpoint_ns"),
        ((page_oldest_first,), "newest first"),
        ((page_raises,), "raised"),
    ],
    "05.4": [
        ((resolve_concat,), "guessable"),
        ((resolve_no_check,), "raise PermissionError otherwise"),
        ((resolve_key_error,), "raised KeyError"),
        ((resolve_lookup_error,), "raised LookupError"),
        ((resolve_bare_id,), "not the bare thread id"),
    ],
}


def test_page_solution_passes():
    assert evaluate("05.3", page_right).status == PASSED


def test_string_keys_are_accepted_for_05_2():
    assert evaluate("05.2", {"None": 7, "True": 3, "False": 1}).status == PASSED
