"""The command ledger in front of a real graph: a tiny chat API, its worker and its dispatcher (chapter 11).

:class:`ChatService` is what an HTTP handler of the travel assistant and its worker would
do, without HTTP. Requests only *submit*:

* ``handle(tenant_id, command_id, conversation_id, payload)`` validates the payload
  (:func:`validate_chat_payload`, ``InvalidPayload`` before anything is written), submits it
  to :class:`helpers.ledger.Ledger` and returns a :class:`Response` with the command's status
  (``accepted``, ``running`` = still processing, ``done``, ``failed``, ``dead``) and answer;
* ``status(tenant_id, command_id)`` is what a client polls;
* ``dispatch()`` is one sweep of a dispatcher: claim each claimable command under a lease,
  run :meth:`ChatService.work` while a heartbeat renews the lease, record the answer. Run it
  as a process with ``python -m helpers.ledger.service dispatch DIRECTORY`` (``--help``).

Payloads are ``{"kind": "message", "message_id": ..., "text": ...}`` (a new user message,
sent as a ``HumanMessage`` with that id, starting from the thread's last answer, or from its
first, empty checkpoint before any answer: never from a dead run's checkpoints, which hold
the buried command's message) or ``{"kind": "regenerate"}`` (fork from the checkpoint
before the last answer, the last answer's parent, as in chapter 09, and let the reply node
run again).

The worker is an **idempotent receiver**, :func:`receive` (chapter 11 shows it in a cell).
Every checkpoint a run writes carries the ledger's run ID in its metadata
(``configurable["ledger_run_id"]`` is copied there by the checkpointer's ``put``, through
``get_checkpoint_metadata``; it is *not* passed as ``config["run_id"]``, which is LangChain's
tracing ID and must be new per execution). Before running, the worker looks for that tag
among the root graph's checkpoints (``saver.list(root, filter=tag, limit=1)``, ``root``
naming ``checkpoint_ns=""``: a subgraph's checkpoints carry the tag too): a finished run
(``get_state(seen.config).next`` is empty) is not run again, its answer is read back from
the checkpoint; an unfinished one is resumed with ``invoke(None, ...)``. Every invoke uses
``durability="sync"``: each checkpoint is on disk before the next step starts, so a
redelivery after a process crash finds every step the crashed attempt finished (a raised
error leaves a checkpoint to resume from in every mode). This needs
per-thread FIFO (the ledger's) so that the run's last checkpoint is the thread's head, and
leases so that two workers do not run it at once. ``dedupe=False`` turns the check off to
show what at-least-once delivery does without it. The receiver does not make the *model
call* idempotent: a crash inside it repeats it.

Both files run with ``synchronous="FULL"`` by default: the ledger's "accepted" and "done"
and the checkpoints they point to survive a power cut, as far as the OS's sync reaches the
disk (on macOS not past the drive's cache: ``PRAGMA fullfsync`` is not set). ``"NORMAL"`` is faster on a slow
disk and loses only the last commits, and only in a power cut or an OS crash.

``calls`` is a :class:`collections.Counter` that outlives a simulated crash (think of the
model provider's bill): ``calls["reply"]`` counts reply-node runs, ``calls["deliveries"]``
deliveries, ``calls["deduplicated"]`` deliveries the receiver recognised as done.
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from langchain_core.messages import AIMessage, HumanMessage
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.graph.state import CompiledStateGraph

from helpers import ledger, travel_graphs
from helpers.processes import CRASH_EXIT_CODE

__all__ = ["RUN_TAG", "ChatService", "Response", "build_counting_chat_graph", "main", "receive",
           "validate_chat_payload"]

DISPATCH_CRASH_EXIT = CRASH_EXIT_CODE  # exit code of a dispatcher told to crash inside a model call


@dataclass(frozen=True)
class Response:
    """What the API returns to the client."""

    status: str  # accepted / running (still processing) / done / failed / dead
    created: bool  # this request created the command (False for a retry or a poll)
    answer: str | None
    error: str | None = None  # why a dead command gave up


# shown in solutions/11_command_ledger.ipynb
def build_counting_chat_graph(checkpointer: BaseCheckpointSaver | None, calls: Counter,
                              model_call: Callable[[], None] | None = None) -> CompiledStateGraph:
    """START -> reply -> END; reply is the stand-in model and counts its calls in calls["reply"].

    model_call() runs inside the node, where a real model would be called: a demo uses it
    to hold the call open, to fail it, or to crash the process in the middle of it.
    """
    lock = threading.Lock()

    def reply(state: MessagesState) -> dict[str, list[AIMessage]]:
        with lock:
            calls["reply"] += 1
            n = calls["reply"]
        if model_call is not None:
            model_call()  # the call to the model provider would start here
        text = travel_graphs.stand_in_reply(state["messages"]).content
        return {"messages": [AIMessage(content=f"{text} (reply #{n})")]}

    builder = StateGraph(MessagesState)
    builder.add_node("reply", reply)
    builder.add_edge(START, "reply")
    builder.add_edge("reply", END)
    return builder.compile(checkpointer=checkpointer)


# shown in solutions/11_command_ledger.ipynb
RUN_TAG = "ledger_run_id"  # a configurable key: the checkpointer copies it into each checkpoint's metadata


# shown in solutions/11_command_ledger.ipynb
def receive(graph: CompiledStateGraph, saver: BaseCheckpointSaver, delivery: ledger.Delivery, *,
            dedupe: bool = True) -> str:
    """Run a delivered command on its thread at most once per ledger run ID; say what was done."""
    root = {"configurable": {"thread_id": delivery.thread_id, "checkpoint_ns": ""}}  # not a subgraph's checkpoints
    tag = {RUN_TAG: delivery.run_id}
    tagged = {"configurable": {"thread_id": delivery.thread_id, **tag}}
    seen = next(iter(saver.list(root, filter=tag, limit=1)), None) if dedupe else None
    if seen is not None and not graph.get_state(seen.config).next:
        return "deduplicated"  # an earlier delivery finished this run
    if seen is not None:
        graph.invoke(None, tagged, durability="sync")  # an earlier delivery stopped inside it: resume
        return "resumed"
    history = list(graph.get_state_history(root))  # newest first
    answered = next((s for s in history if not s.next), None)  # the last answer: a dead run left none
    if delivery.payload["kind"] == "message":
        message = HumanMessage(content=delivery.payload["text"], id=delivery.payload["message_id"])
        start = answered or (history[-1] if history else None)  # else the first, empty checkpoint
        config = tagged if start is None else {"configurable": {**start.config["configurable"], **tag}}
        graph.invoke({"messages": [message]}, config, durability="sync")
        return "ran"
    if answered is None:
        raise LookupError("nothing to regenerate: the thread has no answer yet")
    graph.invoke(None, {"configurable": {**answered.parent_config["configurable"], **tag}},
                 durability="sync")  # a fork from the checkpoint before the last answer
    return "forked"


def validate_chat_payload(payload: object, *, has_message: bool) -> None:
    """Refuse a malformed command before it is accepted (``InvalidPayload``).

    ``has_message``: the conversation already holds a message command, so a regenerate has
    something to answer again.
    """
    if type(payload) is not dict:
        raise ledger.InvalidPayload(f"payload must be a dict, got {type(payload).__name__}")
    kind = payload.get("kind")
    if kind == "regenerate":
        extra = sorted(set(payload) - {"kind"})
        if extra:
            raise ledger.InvalidPayload(f"a regenerate carries only 'kind', not {extra}")
        if not has_message:
            raise ledger.InvalidPayload("a regenerate needs an earlier message in the conversation: "
                                        "there is no answer to give again")
        return
    if kind != "message":
        raise ledger.InvalidPayload(f"payload['kind'] must be 'message' or 'regenerate', got {kind!r}")
    extra = sorted(set(payload) - {"kind", "message_id", "text"})
    if extra:
        raise ledger.InvalidPayload(f"unexpected key(s) in a message: {extra}")
    text = payload.get("text")
    if type(text) is not str or not text.strip():
        got = "nothing" if text is None else repr(text)[:40] if type(text) is str else type(text).__name__
        raise ledger.InvalidPayload(f"a message needs 'text', a non-empty str; got {got}")
    try:
        ledger.validate_id("message_id", payload.get("message_id"))
    except ledger.InvalidId as exc:
        raise ledger.InvalidPayload(f"payload: {exc}") from None


def _checkpoint_id(config: dict[str, Any] | None) -> str | None:
    return None if config is None else config.get("configurable", {}).get("checkpoint_id")


class ChatService:
    """Ledger + SqliteSaver + graph in ``directory`` (files ledger.db and checkpoints.db).

    ``model_call`` (settable later) runs inside the reply node where the model would be called.
    Leases last ``lease_seconds`` and are renewed every ``renew_every`` (default a third of
    the lease) while a run is in progress; ``renew=False`` turns renewal off for the demo of
    a lease that ends in the middle of a run. Both files run with ``synchronous="FULL"``
    unless told otherwise (with ``"NORMAL"`` a commit survives a crash of the process, not
    a power cut).
    """

    def __init__(self, directory: str | Path, *, crash_at: str | None = None, calls: Counter | None = None,
                 dedupe: bool = True, synchronous: str = "FULL", lease_seconds: float = 30.0,
                 renew: bool = True, renew_every: float | None = None, max_attempts: int = 3,
                 clock: Callable[[], float] = time.time, model_call: Callable[[], None] | None = None,
                 name: str | None = None) -> None:
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self.calls = calls if calls is not None else Counter()
        self.dedupe, self.renew, self.renew_every = dedupe, renew, renew_every
        self._options = {"synchronous": synchronous, "lease_seconds": lease_seconds, "max_attempts": max_attempts,
                         "clock": clock}
        self.model_call = model_call
        self.ledger = ledger.Ledger(self.directory / "ledger.db", crash_at=crash_at, name=name, **self._options)
        # check_same_thread=False: the saver is used from LangGraph's background thread.
        self._conn = sqlite3.connect(self.directory / "checkpoints.db", check_same_thread=False, timeout=30)
        if synchronous.upper() in ("OFF", "NORMAL", "FULL", "EXTRA"):  # a fixed list: safe to format
            self._conn.execute(f"PRAGMA synchronous = {synchronous.upper()}")
        self.saver = SqliteSaver(self._conn)
        self.graph = build_counting_chat_graph(self.saver, self.calls, self._model_call)

    def _model_call(self) -> None:
        if self.model_call is not None:  # replaceable at any time, e.g. to hold a call open
            self.model_call()

    # ------------------------------------------------------------------ the API
    def open_conversation(self, tenant_id: str, conversation_id: str) -> None:
        """Create the conversation (idempotent); its thread_id is minted server-side."""
        self.ledger.create_conversation(tenant_id, conversation_id)

    def handle(self, tenant_id: str, command_id: str, conversation_id: str, payload: dict[str, Any]) -> Response:
        """Validate and accept the command once; return its current state. Nothing runs here."""
        has_message = False
        if type(payload) is dict and payload.get("kind") == "regenerate":
            commands = self.ledger.list_commands(tenant_id, conversation_id)
            has_message = any(c.payload.get("kind") == "message" and c.status != "dead" for c in commands)
        validate_chat_payload(payload, has_message=has_message)
        submitted = self.ledger.submit(tenant_id, command_id, conversation_id, payload)
        return self._response(submitted.record, created=submitted.created)

    def status(self, tenant_id: str, command_id: str) -> Response:
        """What a client polling for its command sees."""
        return self._response(self.ledger.get_command(tenant_id, command_id), created=False)

    @staticmethod
    def _response(record: ledger.CommandRecord, *, created: bool) -> Response:
        answer = record.result.get("answer") if isinstance(record.result, dict) else None
        return Response(status=record.status, created=created, answer=answer, error=record.error)

    def dispatch(self) -> int:
        """One dispatcher sweep over the outbox; returns the number of results recorded."""
        return len(self.ledger.dispatch_pending(self.work, renew_every=self.renew_every, heartbeat=self.renew))

    def thread_config(self, tenant_id: str, conversation_id: str) -> dict[str, Any]:
        """The graph config of a conversation, resolved on the server side."""
        thread_id = self.ledger.get_conversation(tenant_id, conversation_id).thread_id
        return {"configurable": {"thread_id": thread_id}}

    # ------------------------------------------------------------------ the worker
    def work(self, delivery: ledger.Delivery) -> ledger.Completed:
        """Run one delivered command (once per ledger run ID, if ``dedupe``); return its answer."""
        self.calls["deliveries"] += 1
        if receive(self.graph, self.saver, delivery, dedupe=self.dedupe) == "deduplicated":
            self.calls["deduplicated"] += 1  # this run already finished: its answer is read back
        return self._completed({"configurable": {"thread_id": delivery.thread_id, "checkpoint_ns": ""}},
                               {RUN_TAG: delivery.run_id})

    def _completed(self, thread: dict[str, Any], tag: dict[str, str]) -> ledger.Completed:
        run = list(self.saver.list(thread, filter=tag))  # newest first: this run's checkpoints (the root's)
        answer = self.graph.get_state(run[0].config).values["messages"][-1].content
        return ledger.Completed({"answer": str(answer)}, start_checkpoint_id=_checkpoint_id(run[-1].parent_config),
                                end_checkpoint_id=_checkpoint_id(run[0].config))

    # ------------------------------------------------------------------ lifecycle
    def restart(self, *, dedupe: bool | None = None) -> ChatService:
        """Close this object and open a new service on the same files, then sweep once."""
        self.close()
        fresh = ChatService(self.directory, calls=self.calls, dedupe=self.dedupe if dedupe is None else dedupe,
                            renew=self.renew, renew_every=self.renew_every, **self._options)
        fresh.dispatch()
        return fresh

    def close(self) -> None:
        self.ledger.close()
        self._conn.close()

    def __enter__(self) -> ChatService:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# ---------------------------------------------------------------------- the dispatcher process
def _crash_once_model_call(bill: Path | None, token: Path | None) -> Callable[[], None]:
    """A model call that writes a line to ``bill`` and, if it can take ``token``, dies."""

    def model_call() -> None:
        if bill is not None:
            with open(bill, "a", encoding="utf-8") as file:  # the provider bills the call
                file.write(f"{os.getpid()}\n")
        if token is not None:
            try:
                os.unlink(token)  # atomic: only one model call in all processes gets the token
            except FileNotFoundError:
                return
            os._exit(DISPATCH_CRASH_EXIT)  # a real crash: no cleanup, no finally, no result

    return model_call


def main(argv: list[str] | None = None) -> int:
    """``python -m helpers.ledger.service dispatch DIRECTORY``: a dispatcher process."""
    parser = argparse.ArgumentParser(prog="python -m helpers.ledger.service")
    commands = parser.add_subparsers(dest="command", required=True)
    run = commands.add_parser("dispatch", help="sweep the outbox of DIRECTORY/ledger.db and run each command")
    run.add_argument("directory", type=Path)
    run.add_argument("--lease", type=float, default=30.0, help="lease length in seconds (renewed every third)")
    run.add_argument("--poll", type=float, default=0.05, help="seconds between sweeps when idle")
    run.add_argument("--max-seconds", type=float, default=None, help="stop after this long")
    run.add_argument("--until-drained", action="store_true", help="stop once no command is pending")
    run.add_argument("--bill", type=Path, help="append one line per model call to this file")
    run.add_argument("--crash-once", type=Path, metavar="TOKEN",
                     help="the model call that manages to delete TOKEN kills its process (os._exit)")
    run.add_argument("--name", help="this dispatcher's name in the runs table")
    args = parser.parse_args(argv)
    service = ChatService(args.directory, lease_seconds=args.lease, name=args.name,
                          model_call=_crash_once_model_call(args.bill, args.crash_once))
    try:
        recorded = ledger.run_dispatcher(service.ledger, service.work, poll=args.poll,
                                         until_drained=args.until_drained, max_seconds=args.max_seconds)
    finally:
        service.close()
    print(f"recorded {recorded} result(s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
