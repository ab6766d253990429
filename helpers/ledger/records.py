"""Errors and records of the command ledger (:mod:`helpers.ledger` re-exports them all).

Errors: ``LedgerError`` > ``InvalidId``, ``InvalidPayload``, ``PayloadMismatch``,
``Forbidden`` > ``ConversationNotFound``, ``CommandNotFound``, ``LedgerBusy``,
``SchemaVersionError``, ``StaleLease``, ``InvalidDelivery``. ``SimulatedCrash`` is a ``BaseException`` (like
``SystemExit``) so that ``except Exception`` cannot swallow it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Literal

__all__ = ["CommandNotFound", "CommandRecord", "Completed", "Conversation", "ConversationNotFound", "Delivery",
           "Forbidden", "InvalidDelivery", "InvalidId", "InvalidPayload", "LedgerBusy", "LedgerError",
           "PayloadMismatch", "RunRecord", "SchemaVersionError", "SimulatedCrash", "StaleLease", "Status",
           "SubmitResult"]

Status = Literal["accepted", "running", "done", "failed", "dead"]
_DECODER = json.JSONDecoder()


# --------------------------------------------------------------------------- errors
class LedgerError(Exception):
    """Base class of every error the ledger raises on purpose."""


class InvalidId(LedgerError, ValueError):
    """An ID is not exactly a str of 1..128 characters from ``[A-Za-z0-9._:-]``."""

    def __init__(self, field: str, reason: str) -> None:
        self.field, self.reason = field, reason
        super().__init__(f"invalid {field}: {reason}")


class InvalidPayload(LedgerError, ValueError):
    """A payload or result is refused before anything is written (not JSON, or malformed)."""


class PayloadMismatch(LedgerError):
    """The command id was already accepted with another payload or conversation."""

    def __init__(self, tenant_id: str, command_id: str, detail: str) -> None:
        self.tenant_id, self.command_id = tenant_id, command_id
        super().__init__(
            f"command {command_id!r} of tenant {tenant_id!r} was already accepted with "
            f"{detail}; a retry must resend the same request, a new intent needs a new command id")


class Forbidden(LedgerError):
    """The caller may not act on the resource it named."""


class ConversationNotFound(Forbidden, LookupError):
    """No conversation with this id *for this tenant*.

    Raised both for unknown ids and for another tenant's conversation: answering
    differently would let a caller probe which ids other tenants use.
    """


class CommandNotFound(LedgerError, LookupError):
    """No command with this (tenant_id, command_id)."""


class LedgerBusy(LedgerError):
    """The database stayed locked by another writer for the whole busy timeout.

    The call that raised it changed nothing (its transaction never started or was rolled
    back), so retrying the same call is safe; a submit retry is deduplicated as usual.
    """


class SchemaVersionError(LedgerError):
    """The file holds a ledger with another schema version (``PRAGMA user_version``)."""


class StaleLease(LedgerError):
    """A newer delivery attempt holds the command: this worker's lease was taken over.

    Raised by ``record_result`` for an attempt that is no longer current while the command
    is still open. Nothing was written.
    """

    def __init__(self, command_id: str, attempt: int, current: int) -> None:
        self.command_id, self.attempt, self.current = command_id, attempt, current
        super().__init__(f"attempt {attempt} of command {command_id!r} is stale: attempt {current} holds "
                         "the lease now, so this result was refused")


class InvalidDelivery(LedgerError):
    """A delivery that no claim of this ledger made; nothing was written.

    A renew, release or record names its delivery in full: ``seq``, ``tenant_id``,
    ``command_id``, ``conversation_id``, ``thread_id``, ``run_id`` must be the stored
    command's, and ``attempt`` (the fencing token) an int from 1 up to the command's
    current attempt. An older attempt is *stale* (``renew``/``release`` return False,
    ``record_result`` raises ``StaleLease``); anything else is refused with this error.
    """


class SimulatedCrash(BaseException):
    """Raised at an injected crash point. A BaseException, so it is never swallowed."""

    def __init__(self, point: str) -> None:
        self.point = point
        super().__init__(f"simulated crash at {point!r}")


# --------------------------------------------------------------------------- records
@dataclass(frozen=True)
class Conversation:
    tenant_id: str
    conversation_id: str
    thread_id: str  # opaque, minted by the server; pass it to LangGraph's config
    created_at: str


@dataclass(frozen=True)
class CommandRecord:
    seq: int  # ledger-wide order of acceptance
    tenant_id: str
    command_id: str
    conversation_id: str
    thread_id: str
    run_id: str  # the ledger's run ID: run_id_for(tenant_id, command_id), one per command
    fingerprint: str
    payload: Any  # as the client sent it
    status: Status
    result: Any
    error: str | None  # the last failed attempt's error, until a result is recorded
    created_at: str

    @classmethod
    def from_row(cls, row: tuple) -> CommandRecord:
        """A record from a row of ``SELECT {COMMAND_COLUMNS}`` (payload and result decoded)."""
        # raw_decode: the ledger wrote this JSON itself, so there is no whitespace around it for
        # json.loads to strip (two regex passes that every submit would pay for).
        seq, tenant_id, command_id, conversation_id, thread_id, run_id, digest, payload, status, result, error, \
            created_at = row
        return cls(seq, tenant_id, command_id, conversation_id, thread_id, run_id, digest,
                   _DECODER.raw_decode(payload)[0], status,
                   None if result is None else _DECODER.raw_decode(result)[0], error, created_at)


@dataclass(frozen=True)
class SubmitResult:
    record: CommandRecord
    created: bool  # True only for the one call that inserted the command

    @property
    def result(self) -> Any:
        return self.record.result


@dataclass(frozen=True)
class Delivery:
    """One claimed command. May arrive more than once: dedupe on ``run_id``.

    ``attempt`` is the fencing token: every write this delivery makes (renew, release,
    record) names it, and the ledger ignores or refuses it once a newer attempt exists.
    """

    seq: int
    attempt: int
    tenant_id: str
    command_id: str
    conversation_id: str
    thread_id: str
    run_id: str
    payload: Any

    @property
    def idempotency_key(self) -> str:
        return self.run_id


@dataclass(frozen=True)
class Completed:
    """What a delivery handler may return: the result, and the run's first and last checkpoint."""

    result: Any
    start_checkpoint_id: str | None = None
    end_checkpoint_id: str | None = None
    status: Literal["done", "failed"] = "done"


@dataclass(frozen=True)
class RunRecord:
    """One delivery attempt of a command (a row of the ``runs`` table)."""

    run_id: str
    attempt: int
    command_id: str
    dispatcher: str
    start_checkpoint_id: str | None
    end_checkpoint_id: str | None
    outcome: str | None  # done / failed / error / dead; None: running, crashed or lease lost
