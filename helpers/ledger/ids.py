"""IDs, validation and payload fingerprints of the command ledger (:mod:`helpers.ledger`).

Import it through :mod:`helpers.ledger`, which re-exports every public name here. Chapter 11
uses these functions without showing them: what they decide is listed here instead.

* ``new_command_id()`` (uuid4), ``new_time_ordered_id()`` (uuid7), ``stable_id(ns, name)``
  (uuid5) and ``run_id_for(tenant_id, command_id)``, the ledger's run ID of a command.
* ``validate_id(field, value)``: exactly a ``str`` (``type(value) is str``: a subclass with
  a lying ``__len__`` is refused) of 1..128 characters from ``[A-Za-z0-9._:-]``.
* ``canonical_json(value)`` and ``fingerprint(value)``: what "the same payload" means.
  Decided and tested:

  - key order does not matter (keys are sorted);
  - Unicode strings are compared in NFC, so a composed and a decomposed "é" are the same
    text (two keys that become equal under NFC are refused as duplicates);
  - ``-0.0`` and ``0.0`` are the same number (RFC 8785 writes both as ``0``);
  - ``1`` and ``1.0`` stay different, and so do ``True`` and ``1``: their JSON differs;
  - NaN, infinities, lone surrogates, non-``str`` keys, nesting deeper than 64 levels and
    any type outside ``None``/``bool``/``int``/``float``/``str``/``list``/``tuple``/``dict``
    (exact types, no subclasses) raise :class:`~helpers.ledger.records.InvalidPayload`.

* ``payload_json(value)``: the JSON the ledger stores and delivers. It is the payload *as
  the client sent it* (its own key order, its own Unicode form), not the canonical form,
  so a model sees exactly the text the user typed.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import unicodedata
import uuid
from collections.abc import Callable
from json.encoder import c_make_encoder, encode_basestring  # type: ignore[attr-defined]
from typing import Any

from helpers.ledger.records import InvalidId, InvalidPayload

try:  # Python 3.14+ has uuid7 in the standard library.
    from uuid import uuid7 as _uuid7  # type: ignore[attr-defined]
except ImportError:  # pragma: no cover - depends on the interpreter
    from uuid6 import uuid7 as _uuid7

__all__ = ["MAX_ID_LENGTH", "MAX_PAYLOAD_DEPTH", "RUN_NAMESPACE", "canonical_json", "fingerprint",
           "new_command_id", "new_time_ordered_id", "payload_json", "run_id_for", "stable_id", "validate_id"]

RUN_NAMESPACE = uuid.uuid5(uuid.NAMESPACE_URL, "urn:langgraph-persistence-course:ledger:run")
MAX_ID_LENGTH = 128
MAX_PAYLOAD_DEPTH = 64
_ID_RE = re.compile(r"[A-Za-z0-9._:-]+")
_SCALARS = (type(None), bool, int, float, str)
_RUN_HASH = hashlib.sha1(RUN_NAMESPACE.bytes, usedforsecurity=False)  # uuid5 hashes namespace + name
_VARIANT = {digit: "89ab"[int(digit, 16) & 3] for digit in "0123456789abcdef"}  # the top bits become 10


def _json_encoder(sort_keys: bool) -> Callable[[Any], str]:
    """A compact JSON encoding function (raw UTF-8 text, no NaN), built once.

    ``JSONEncoder.encode`` builds a new C encoder on every call, so this keeps one. No cycle
    check: ``_normalise`` has refused cycles (as too deep) before anything is encoded.
    """
    options = json.JSONEncoder(sort_keys=sort_keys, separators=(",", ":"), ensure_ascii=False, allow_nan=False,
                               check_circular=False)
    try:
        c_encoder = c_make_encoder(None, options.default, encode_basestring, None, ":", ",", sort_keys, False, False)
        sample = {"b": [1.5, None, (True,)], "a": "\u00e9\n"}
        if "".join(c_encoder(sample, 0)) != "".join(options.iterencode(sample)):  # pure Python without _one_shot
            raise ValueError("the C encoder disagrees with the pure-Python one")
    except Exception:  # no C accelerator, or another signature: the pure-Python path
        return options.encode
    return lambda value: "".join(c_encoder(value, 0))


_ENCODERS = {sort_keys: _json_encoder(sort_keys) for sort_keys in (False, True)}


def new_command_id() -> str:
    """A fresh random command id (uuid4). Create one per new intent, reuse it on retry."""
    return str(uuid.uuid4())


def new_time_ordered_id() -> str:
    """A uuid7 (millisecond time prefix): good index locality, but not a strict order."""
    return str(_uuid7())


def stable_id(namespace: uuid.UUID | str, name: str) -> str:
    """A deterministic uuid5: the same namespace and name always give the same id."""
    ns = namespace if isinstance(namespace, uuid.UUID) else uuid.UUID(str(namespace))
    return str(uuid.uuid5(ns, name))


def run_id_for(tenant_id: str, command_id: str) -> str:
    """The ledger's run ID of a command: uuid5 of ``tenant/command`` (``/`` is not an ID character).

    One per command, shared by every delivery attempt of it; the attempt number tells the
    deliveries apart. Equal to ``stable_id(RUN_NAMESPACE, f"{tenant_id}/{command_id}")``
    (a test checks it), spelled out on the hash because ``submit`` computes it every time.
    """
    digest = _RUN_HASH.copy()
    digest.update(f"{tenant_id}/{command_id}".encode())
    h = digest.hexdigest()  # RFC 9562 uuid5: the first 16 bytes of sha1, version 5, variant 10
    return f"{h[:8]}-{h[8:12]}-5{h[13:16]}-{_VARIANT[h[16]]}{h[17:20]}-{h[20:32]}"


def _clip(text: str, limit: int = 40) -> str:
    # Never echo a huge hostile value back into logs or error pages.
    return repr(text) if len(text) <= limit else f"{text[:limit]!r}... ({len(text)} chars)"


def validate_id(field: str, value: object) -> str:
    """Return ``value`` if it is a valid ID, else raise ``InvalidId`` naming the field."""
    # exact type: a str subclass can lie about its length or text
    if type(value) is str and len(value) <= MAX_ID_LENGTH and _ID_RE.fullmatch(value):
        return value
    if type(value) is not str:
        raise InvalidId(field, f"must be a str, got {type(value).__name__}")
    text = value
    if not text:
        raise InvalidId(field, "must not be empty")
    if len(text) > MAX_ID_LENGTH:
        raise InvalidId(field, f"{len(text)} chars, at most {MAX_ID_LENGTH} allowed: {_clip(text)}")
    if "\x00" in text:
        raise InvalidId(field, f"contains a NUL character: {_clip(text)}")
    bad = sorted({c for c in text if not _ID_RE.fullmatch(c)})[:5]
    raise InvalidId(field, f"only [A-Za-z0-9._:-] allowed, found {''.join(bad)!r} in {_clip(text)}")


class _BadValue(Exception):
    """Raised inside ``_normalise``; each level adds its key on the way out, so the happy
    path never builds a path string."""

    def __init__(self, problem: str) -> None:
        super().__init__(problem)
        self.problem, self.steps = problem, []

    def payload_error(self, label: str) -> InvalidPayload:
        return InvalidPayload(f"{label}{''.join(reversed(self.steps))}: {self.problem}")


def _normalise(value: Any, depth: int) -> Any:
    if depth > MAX_PAYLOAD_DEPTH:
        raise _BadValue(f"nested deeper than {MAX_PAYLOAD_DEPTH} levels")
    kind = type(value)
    if kind in _SCALARS:
        if kind is str:
            return unicodedata.normalize("NFC", value)
        if kind is float:
            if not math.isfinite(value):
                raise _BadValue(f"{value!r} is not allowed in JSON")
            return 0.0 if value == 0.0 else value  # -0.0 and 0.0 are one number
        return value
    if kind is dict:
        out: dict[str, Any] = {}
        for key, item in value.items():
            if type(key) is not str:
                raise _BadValue(f"keys must be str, got {type(key).__name__}")
            nkey = unicodedata.normalize("NFC", key)
            if nkey in out:  # e.g. NFC and NFD spellings of one key in the same object
                raise _BadValue(f"duplicate key {_clip(nkey)} after NFC normalisation")
            try:
                out[nkey] = _normalise(item, depth + 1)
            except _BadValue as exc:
                exc.steps.append(f"[{_clip(nkey, 20)}]")
                raise
        return out
    if kind is list or kind is tuple:
        items = []
        for i, item in enumerate(value):
            try:
                items.append(_normalise(item, depth + 1))
            except _BadValue as exc:
                exc.steps.append(f"[{i}]")
                raise
        return items
    raise _BadValue(f"{kind.__name__} is not a JSON type (exact types only)")


def _canonical(value: Any, label: str) -> bytes:
    # Validate and normalise, then encode: sorted keys, no whitespace, raw UTF-8 (encoding
    # to UTF-8 also refuses lone surrogates, which have no UTF-8 form).
    try:
        normal = _normalise(value, 0)
    except _BadValue as exc:
        raise exc.payload_error(label) from None
    try:
        return _ENCODERS[True](normal).encode("utf-8")
    except (ValueError, UnicodeEncodeError) as exc:
        raise InvalidPayload(f"{label}: cannot encode as JSON: {exc}") from None


def canonical_json(value: Any, *, label: str = "payload") -> str:
    """Canonical JSON: sorted keys, no whitespace, raw unicode in NFC, ``-0.0`` as ``0.0``.

    Raises ``InvalidPayload`` (its message starts with ``label``) for non-JSON values,
    non-str keys, keys that collide after NFC, lone surrogates and nesting over 64 levels.
    ``1`` and ``1.0`` stay different (as their JSON text differs).
    """
    return _canonical(value, label).decode("utf-8")


def fingerprint(value: Any) -> str:
    """sha256 hex digest of ``canonical_json(value)``."""
    return hashlib.sha256(_canonical(value, "payload")).hexdigest()


def payload_json(value: Any, *, label: str = "payload") -> tuple[str, str]:
    """``(the JSON to store, its fingerprint)``: stored as sent, fingerprinted canonically."""
    digest = hashlib.sha256(_canonical(value, label)).hexdigest()  # validates everything first
    # The stored form has the same characters up to NFC, so it encodes wherever the canonical
    # form did: one more JSON encoding, no second check. submit calls this every time.
    return _ENCODERS[False](value), digest
