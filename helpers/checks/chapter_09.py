"""Checks for chapter 09 (time travel).

09.1 is a prediction about a replay on a fixed, deterministic thread (three turns of the
chapter's chat graph), so its expected values are constants. 09.2 and 09.3 are functions;
their checkers build fresh threads of their own (never the notebook's objects) and test
the learner's function on several shapes of history, including branches.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping
from typing import Any, TypedDict

from langchain_core.messages import AIMessage, HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, MessagesState, StateGraph

from ..history_tree import HistoryTree, history_tree
from ..travel_graphs import stand_in_reply
from .protocol import Fail, call_answer, exercise, expect_keys, expect_type

# --------------------------------------------------------------------------- 09.1
# A three-turn thread: C0..C8 (steps -1..7); C1 (step 0) waits for the first answer.
EXPECTED_REPLAY = {"C9": ("fork", 1, "C1"), "C10": ("loop", 2, "C9"), "messages": 2, "reply_calls": 1}


def _expect_replay_count(answer: Mapping[str, Any], key: str, what: str, tempting: Mapping[int, str],
                         why: str) -> None:
    """``answer[key]`` must equal ``EXPECTED_REPLAY[key]``; a tempting wrong value gets its own hint."""
    value = answer[key]
    expect_type(value, int, what)
    if value in tempting:
        raise Fail(f"{key} {value}: {tempting[value]}")
    if value != EXPECTED_REPLAY[key]:
        raise Fail(f"{key} {value} is off: {why}")


@exercise("09.1")
def check_replay_prediction(answer: Any) -> str:
    expect_type(answer, dict, "the prediction: 'C9', 'C10', 'messages', 'reply_calls'")
    expect_keys(answer, EXPECTED_REPLAY)
    for label in ("C9", "C10"):
        value = answer[label]
        if not isinstance(value, (tuple, list)) or len(value) != 3:
            raise Fail(f"{label!r} should be a (source, step, parent label) triple like ('loop', 2, 'C1'), "
                       f"got {value!r}")
    triples = {label: tuple(answer[label]) for label in ("C9", "C10")}
    fork = triples["C9"]
    if fork == ("loop", 1, "C1"):
        raise Fail("C9 = ('loop', 1, 'C1') is how langgraph 1.0.5 recorded a replay; current versions first "
                   "write a copy of C1 (which source?), and the re-run chains from that copy")
    if fork[0] != "fork":
        raise Fail(f"C9's source {fork[0]!r} is off: the first checkpoint of a replay is a copy of the old checkpoint; "
                   "look at C6 in the 'Predict, then run' section")
    if fork[2] != "C1":
        raise Fail(f"C9's parent {fork[2]!r} is off: the copy's parent is the checkpoint you replay from")
    if fork[1] == 8:
        raise Fail("C9's step 8 is off: a new checkpoint's step is its parent's step + 1, not the next step after "
                   "the newest checkpoint (C1 has step 0)")
    if fork[1] != 1:
        raise Fail(f"C9's step {fork[1]!r} is off: every new checkpoint's step is its parent's step + 1 "
                   "(C1 has step 0)")
    rerun = triples["C10"]
    if rerun[2] == "C1":
        raise Fail("C10's parent is not C1: the re-run chains from the fork copy, not from the old checkpoint")
    if rerun[2] != "C9":
        raise Fail(f"C10's parent {rerun[2]!r} is off: the re-run starts from the newest checkpoint of the replay")
    if rerun[0] != "loop":
        raise Fail(f"C10's source {rerun[0]!r} is off: a checkpoint written after a node ran inside a run "
                   "is a 'loop' checkpoint")
    if rerun[1] != 2:
        raise Fail(f"C10's step {rerun[1]!r} is off: its parent C9 has step 1, and each edge adds 1")
    later_turns = ("that would keep later turns, but they live on the old branch (C2-C8); the result holds only "
                   "what C1 holds plus the new answer")
    _expect_replay_count(answer, "messages", "the number of messages in the result",
                         tempting={6: later_turns, 5: later_turns, 4: later_turns},
                         why="C1 holds 1 message (the first question) and the replay adds one answer")
    _expect_replay_count(answer, "reply_calls", "how many times reply runs",
                         tempting={0: "a replay re-executes the nodes after the checkpoint; "
                                      "it does not reuse the stored answer",
                                   3: "a replay does not re-send the later questions: the run stops at END of "
                                      "C1's turn"},
                         why="only nodes after C1 run, and the run stops at END of that turn")
    return "fork copy first, then the re-run; the later turns stay on the old branch"


# --------------------------------------------------------------------------- shared graphs
class _Drafts:
    """A chat graph whose reply numbers its drafts; optional log_answer node after reply."""

    def __init__(self, log_answer: bool = False) -> None:
        self.calls: Counter[str] = Counter()
        builder = StateGraph(MessagesState)
        builder.add_node("reply", self._reply)
        builder.add_edge(START, "reply")
        if log_answer:
            builder.add_node("log_answer", self._log)
            builder.add_edge("reply", "log_answer")
            builder.add_edge("log_answer", END)
        else:
            builder.add_edge("reply", END)
        self.graph = builder.compile(checkpointer=InMemorySaver())

    def _reply(self, state: MessagesState) -> dict:
        self.calls["reply"] += 1
        answer = stand_in_reply(state["messages"]).content
        return {"messages": [AIMessage(f"{answer} (draft {self.calls['reply']})")]}

    def _log(self, state: MessagesState) -> dict:
        self.calls["log_answer"] += 1
        return {}

    def say(self, thread: str, text: str) -> None:
        self.graph.invoke({"messages": [HumanMessage(text)]}, _config(thread))


def _config(thread: str) -> dict[str, Any]:
    return {"configurable": {"thread_id": thread}}


def _lines(messages: list[Any]) -> list[str]:
    return [f"{m.type}: {m.content}" for m in messages]


# --------------------------------------------------------------------------- 09.2
def _regenerate_scenarios() -> list[tuple[str, _Drafts]]:
    scenarios = []
    one = _Drafts()
    one.say("t", "I'd like a window seat")
    scenarios.append(("a one-turn thread", one))
    two = _Drafts()
    two.say("t", "I'd like a window seat")
    two.say("t", "Which seat did I ask for?")
    scenarios.append(("a two-turn thread", two))
    logged = _Drafts(log_answer=True)
    logged.say("t", "I'd like an aisle seat")
    logged.say("t", "Which seat did I ask for?")
    scenarios.append(("a reply -> log_answer graph", logged))
    again = _Drafts()
    again.say("t", "I'd like a window seat")
    again.say("t", "Which seat did I ask for?")
    tree = history_tree(again.graph, _config("t"))
    again.graph.invoke(None, tree.config(tree[tree.head].parent))  # regenerated once already
    scenarios.append(("a thread regenerated once before", again))
    edited = _Drafts()
    edited.say("t", "I'd like a window seat")
    edited.say("t", "Which seat did I ask for?")
    tree = history_tree(edited.graph, _config("t"))
    edited.graph.update_state(tree.config("C2"), {"messages": [HumanMessage("Actually, make that a middle seat")]})
    edited.say("t", "Which seat did I ask for?")
    scenarios.append(("a thread edited with update_state", edited))
    side = _Drafts()
    side.say("t", "I'd like a window seat")
    side.say("t", "Which seat did I ask for?")
    tree = history_tree(side.graph, _config("t"))
    # an edit on a side branch that waits for reply (newer than the head branch's C4) ...
    side.graph.update_state(tree.config("C2"), {"messages": [HumanMessage("Actually, make that a middle seat")]},
                            as_node="__start__")
    # ... then the head branch's last answer corrected in place, which makes that branch the head again
    answer = side.graph.get_state(tree.config("C5")).values["messages"][-1]
    side.graph.update_state(tree.config("C5"), {"messages": [AIMessage("You asked for a window seat.", id=answer.id)]},
                            as_node="reply")
    scenarios.append(("a thread with a newer side branch that waits for reply", side))
    return scenarios


@exercise("09.2")
def check_regenerate_from(func: Any) -> str:
    scenarios = _regenerate_scenarios()
    for name, case in scenarios:
        graph, config = case.graph, _config("t")
        head = graph.get_state(config)
        chosen = call_answer(func, graph, config, what="regenerate_from(graph, config)")
        expect_type(chosen, dict, "a config: {'configurable': {..., 'checkpoint_id': ...}}")
        tree = history_tree(graph, config)
        label = tree.label_of(chosen) if isinstance(chosen.get("configurable"), Mapping) else None
        if label is None:
            raise Fail(f"on {name}: return the config of one checkpoint (it carries a checkpoint_id), e.g. "
                       "node.config from history_tree(...).branch(); without a checkpoint_id invoke continues "
                       "from the head")
        picked = tree[label]
        if picked.next == ():
            raise Fail(f"on {name}: {label} has next == (): the answer is already in it and nothing is left to run; "
                       "go back along the parents to the checkpoint whose next is ('reply',)")
        if picked.next == ("__start__",):
            raise Fail(f"on {name}: {label} is an input checkpoint (next == ('__start__',)); replaying from it "
                       "re-runs the input step too; take the checkpoint right before the answer, whose next is "
                       "('reply',)")
        if picked.next != ("reply",):
            raise Fail(f"on {name}: at {label} next is {picked.next}: reply already ran there; "
                       "look further back along the parents for next == ('reply',)")
        if _lines(picked.values.get("messages", [])) != _lines(head.values["messages"])[:-1]:
            raise Fail(f"on {name}: {label} waits for reply, but not for the last answer of the current branch "
                       "(its messages differ from the head's minus the answer); walk the head's branch "
                       "(tree.branch()), newest first")
        before = case.calls["reply"]
        result = graph.invoke(None, tree.config(label))
        old, new = _lines(head.values["messages"]), _lines(result["messages"])
        if case.calls["reply"] - before != 1 or new[:-1] != old[:-1] or new[-1] == old[-1]:
            raise Fail(f"on {name}: replaying from {label} did not give exactly one new draft of the last answer")
    return f"the last answer was regenerated on {len(scenarios)} differently shaped threads"


# --------------------------------------------------------------------------- 09.3
class _Seat(TypedDict, total=False):
    seat: str
    request: str


class _SeatGraph:
    """remember_seat takes the seat from the request; suggest_upgrade (buggy) overwrites it on 'upgrade'."""

    def __init__(self) -> None:
        builder = StateGraph(_Seat)
        builder.add_node("remember_seat", self._remember)
        builder.add_node("suggest_upgrade", self._upgrade)
        builder.add_edge(START, "remember_seat")
        builder.add_edge("remember_seat", "suggest_upgrade")
        builder.add_edge("suggest_upgrade", END)
        self.graph = builder.compile(checkpointer=InMemorySaver())

    @staticmethod
    def _remember(state: _Seat) -> dict:
        words = [w for w in ("window", "aisle", "middle") if w in state.get("request", "")]
        return {"seat": words[0]} if words else {}

    @staticmethod
    def _upgrade(state: _Seat) -> dict:
        return {"seat": "middle"} if "upgrade" in state.get("request", "") else {}

    def turn(self, request: str, config: dict[str, Any] | None = None) -> None:
        self.graph.invoke({"request": request}, config or _config("t"))


def _is_middle(values: Mapping[str, Any]) -> bool:
    return values.get("seat") == "middle"


def _reference_entry(tree: HistoryTree, is_bad: Callable[[Mapping[str, Any]], bool]) -> str | None:
    entry = None
    for node in tree.branch():
        entry = None if not is_bad(node.values) else (entry or node.label)
    return entry


def _audit_scenarios() -> list[tuple[str, _SeatGraph]]:
    scenarios = []
    linear = _SeatGraph()
    for request in ("window please", "any news?", "upgrade me", "thanks"):
        linear.turn(request)
    scenarios.append(("a thread where the buggy node overwrote the seat on turn 3", linear))
    branched = _SeatGraph()
    for request in ("window please", "upgrade me", "hm"):
        branched.turn(request)
    tree = history_tree(branched.graph, _config("t"))
    first_turn_end = [n for n in tree.branch() if n.next == ()][0]
    branched.turn("window still", tree.config(first_turn_end.label))  # a new branch off turn 1
    for request in ("still fine", "upgrade now"):
        branched.turn(request)
    scenarios.append(("a thread with an abandoned branch that went bad earlier", branched))
    fixed = _SeatGraph()
    for request in ("aisle please", "upgrade me"):
        fixed.turn(request)
    tree = history_tree(fixed.graph, _config("t"))
    fixed.graph.update_state(tree.config(tree.head), {"seat": "aisle"}, as_node="suggest_upgrade")
    for request in ("thanks", "upgrade me again", "ok"):
        fixed.turn(request)
    scenarios.append(("a thread that went bad, was fixed with update_state, and went bad again", fixed))
    early = _SeatGraph()
    for request in ("middle seat please", "thanks"):
        early.turn(request)
    scenarios.append(("a thread that asked for a middle seat in its first input", early))
    fine = _SeatGraph()
    for request in ("window please", "upgrade me", "window again please"):
        fine.turn(request)
    scenarios.append(("a thread whose head is fine again", fine))
    return scenarios


@exercise("09.3")
def check_entered_at(func: Any) -> str:
    for name, case in _audit_scenarios():
        graph, config = case.graph, _config("t")
        tree = history_tree(graph, config)
        expected = _reference_entry(tree, _is_middle)
        got = call_answer(func, graph, config, _is_middle, what="entered_at(graph, config, is_bad)")
        if got is not None and not isinstance(got, str):
            got_label = getattr(got, "label", None)
            hint = f" (use its .label: {got_label!r})" if isinstance(got_label, str) else ""
            raise Fail(f"on {name}: return a label string like 'C7' or None, got {type(got).__name__}{hint}")
        if expected is None:
            if got is not None:
                raise Fail(f"on {name}: the head's seat is fine, so return None (not {got!r}): "
                           "there is no current bad value")
            continue
        if got == expected:
            continue
        raise Fail(f"on {name}: {_why_wrong(tree, got, expected)}")
    return "found where the current bad value entered, on 5 threads (with branches and a fix in between)"


def _why_wrong(tree: HistoryTree, got: str | None, expected: str) -> str:
    if got is None:
        return "you returned None, but the head's seat is bad: find the checkpoint where it became bad"
    if got not in tree.nodes:
        return f"{got!r} is not a label of this thread (labels run {tree.labels[0]}..{tree.labels[-1]})"
    on_branch = {n.label for n in tree.branch()}
    if got not in on_branch:
        return (f"{got} is on another branch (not an ancestor of the head); walk the head's branch through "
                "parent links (tree.branch()) instead of the whole history")
    node = tree[got]
    if not _is_middle(node.values):
        return f"at {got} the value is still fine (is_bad is False there): the bad value entered later"
    if node.label == tree.head and got != expected:
        return f"{got} is the head; the bad value entered earlier: walk back while is_bad holds"
    if node.parent is not None and _is_middle(tree[node.parent].values):
        return f"at {got}'s parent {node.parent} the value was already bad: go further back"
    return (f"the value went bad at {got}, but was fixed later and went bad again; report where the "
            "current bad value entered (the latest entry)")
