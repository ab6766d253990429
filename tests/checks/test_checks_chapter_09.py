"""Wrong answers for chapter 09's exercises must fail with a hint (same shape as chapter 00)."""


from helpers.checks import PASSED, evaluate
from helpers.history_tree import history_tree

RIGHT_PREDICTION = {"C9": ("fork", 1, "C1"), "C10": ("loop", 2, "C9"), "messages": 2, "reply_calls": 1}


def predicted(**changes):
    return {**RIGHT_PREDICTION, **changes}


# -- 09.2: realistic wrong functions ---------------------------------------------------
def keeps_thread_config(graph, config):
    return config  # no checkpoint_id: "continues from the head"


def head_config(graph, config):
    return graph.get_state(config).config


def parent_of_head(graph, config):
    return graph.get_state(config).parent_config  # right for reply-only graphs, wrong after log_answer


def last_input_checkpoint(graph, config):
    branch = history_tree(graph, config).branch()
    return dict([n for n in branch if n.next == ("__start__",)][-1].config)


def oldest_waiting_for_reply(graph, config):
    branch = history_tree(graph, config).branch()
    return dict([n for n in branch if n.next == ("reply",)][0].config)


def returns_a_label(graph, config):
    tree = history_tree(graph, config)
    return [n for n in tree.branch() if n.next == ("reply",)][-1].label


# -- 09.3: realistic wrong functions ---------------------------------------------------
def first_bad_in_whole_history(graph, config, is_bad):
    tree = history_tree(graph, config)
    return next((n.label for n in tree if is_bad(n.values)), None)  # ignores branches


def first_bad_on_branch(graph, config, is_bad):
    return next((n.label for n in history_tree(graph, config).branch() if is_bad(n.values)), None)


def always_head(graph, config, is_bad):
    tree = history_tree(graph, config)
    return tree.head if is_bad(tree[tree.head].values) else None


def returns_the_node(graph, config, is_bad):
    entry = None
    for node in history_tree(graph, config).branch():
        entry = None if not is_bad(node.values) else (entry or node)
    return entry


def empty_string_when_fine(graph, config, is_bad):
    entry = None
    for node in history_tree(graph, config).branch():
        entry = None if not is_bad(node.values) else (entry or node.label)
    return entry or ""


def one_too_early(graph, config, is_bad):
    branch = history_tree(graph, config).branch()
    entry = None
    for parent, node in zip([None, *branch[:-1]], branch, strict=True):
        if not is_bad(node.values):
            entry = None
        elif entry is None:
            entry = parent.label if parent is not None else node.label
    return entry


def raises(graph, config, is_bad):
    raise KeyError("seat")


WRONG_ANSWERS = {
    "09.1": [
        ((predicted(C9=("loop", 1, "C1"), C10=("loop", 2, "C1")),), "1.0.5"),
        ((predicted(C9=("fork", 0, "C1")),), "parent's step + 1"),
        ((predicted(C9=("fork", 8, "C1")),), "not the next step after"),
        ((predicted(C10=("loop", 2, "C1")),), "chains from the fork"),
        ((predicted(C10=("loop", 1, "C9")),), "each edge adds 1"),
        ((predicted(messages=6),), "later turns"),
        ((predicted(messages=3),), "C1 holds 1 message"),
        ((predicted(reply_calls=3),), "does not re-send the later questions"),
        ((predicted(reply_calls=0),), "re-executes"),
        (({"C9": ("fork", 1, "C1")},), "missing key"),
        ((predicted(C9="fork"),), "triple"),
        ((["fork", 1, "C1"],), "expected a dict"),
    ],
    "09.2": [
        ((keeps_thread_config,), "checkpoint_id"),
        ((head_config,), "nothing is left to run"),
        ((parent_of_head,), "reply already ran there"),
        ((last_input_checkpoint,), "input checkpoint"),
        ((oldest_waiting_for_reply,), "not for the last answer"),
        ((returns_a_label,), "expected a dict"),
        (("C4",), "expected a function"),
    ],
    "09.3": [
        ((first_bad_in_whole_history,), "another branch"),
        ((first_bad_on_branch,), "fixed later"),
        ((always_head,), "is the head"),
        ((returns_the_node,), "use its .label"),
        ((empty_string_when_fine,), "return None"),
        ((one_too_early,), "still fine"),
        ((raises,), "raised KeyError"),
    ],
}


# what a learner gets by pasting the nearest visible cell (or reading a visible output) into the exercise cell
COPY_ATTACKS = {
    "09.1": [(({"C9": ("fork", 4, "C4"), "C10": ("loop", 5, "C9"), "messages": 4, "reply_calls": 1},),
              "trip-1's replay from C4 (C6, C7) in section 'Predict, then run: regenerate the last answer', "
              "relabelled for trip-9")],
    "09.2": [((lambda graph, config: next(s for s in graph.get_state_history(config) if s.next == ("reply",)).config,),
              "cell 'before_answer' of section 'Predict, then run: regenerate the last answer'")],
    "09.3": [((lambda graph, config, is_bad: next((n.label for n in history_tree(graph, config).branch()
                                                   if is_bad(n.values)), None),),
              "the audit loop of section 'History as an audit trail' (the first bad checkpoint)")],
}


def test_right_prediction_passes_and_lists_are_fine():
    assert evaluate("09.1", RIGHT_PREDICTION).status == PASSED
    as_lists = {**RIGHT_PREDICTION, "C9": ["fork", 1, "C1"], "C10": ["loop", 2, "C9"]}
    assert evaluate("09.1", as_lists).status == PASSED


def test_reference_functions_pass():
    def regenerate_from(graph, config):
        return dict([n for n in history_tree(graph, config).branch() if n.next == ("reply",)][-1].config)

    def entered_at(graph, config, is_bad):
        entry = None
        for node in history_tree(graph, config).branch():
            entry = None if not is_bad(node.values) else (entry or node.label)
        return entry

    assert evaluate("09.2", regenerate_from).status == PASSED
    assert evaluate("09.3", entered_at).status == PASSED


def test_a_replay_from_the_original_checkpoint_also_counts_as_regenerating():
    # after one regeneration, both C4 (original) and C6 (its fork copy) wait for the same answer
    def oldest_of_the_last_turn(graph, config):
        branch = history_tree(graph, config).branch()
        last_input = max(i for i, n in enumerate(branch) if n.next == ("__start__",))
        return dict(branch[last_input + 1].config)

    assert evaluate("09.2", oldest_of_the_last_turn).status == PASSED
