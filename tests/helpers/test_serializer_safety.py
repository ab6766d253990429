"""helpers.serializer_safety: events and warnings are captured, allowlists behave, versions compare."""

import logging

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.postgres import PostgresSaver
from langgraph.checkpoint.serde.base import CipherProtocol
from langgraph.checkpoint.serde.encrypted import EncryptedSerializer
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

from helpers.serializer_safety import (
    ADVISORIES,
    SERDE_LOGGER,
    Cabin,
    FareQuote,
    SeatHold,
    advisory_rows,
    at_least,
    build_quote_graph,
    planted_call,
    release,
    rows_showing,
    type_names,
    watch_serde,
)
from helpers.servers import leftover_server_processes, postgres_server


def roundtrip(serde, value):
    return serde.loads_typed(serde.dumps_typed(value))


def test_quote_graph_stores_custom_types():
    graph = build_quote_graph(InMemorySaver())
    out = graph.invoke({"route": "PEK-SFO"}, {"configurable": {"thread_id": "q"}})
    assert out["quote"] == FareQuote("PEK-SFO", 540, Cabin.ECONOMY)
    assert out["extras"] == [SeatHold("12A")]
    assert type_names(out) == {"route": "str", "quote": "FareQuote", "extras": ["SeatHold"]}


def test_default_serializer_reports_unregistered_types_on_every_load():
    serde = JsonPlusSerializer()
    for _ in range(2):
        with watch_serde() as watch:
            assert roundtrip(serde, FareQuote("A-B", 1, Cabin.BUSINESS)) == FareQuote("A-B", 1, Cabin.BUSINESS)
        assert watch.kinds() == {"msgpack_unregistered_allowed": 2}
        assert watch.types("msgpack_unregistered_allowed") == ["helpers.serializer_safety.Cabin",
                                                               "helpers.serializer_safety.FareQuote"]


def test_allowlist_rebuilds_listed_types_and_blocks_the_rest():
    serde = JsonPlusSerializer(allowed_msgpack_modules=[FareQuote])
    with watch_serde() as watch:
        value = roundtrip(serde, {"q": FareQuote("A-B", 1, Cabin.BUSINESS), "h": SeatHold("1A")})
    assert value == {"q": FareQuote("A-B", 1, "business"), "h": {"seat": "1A"}}
    assert watch.kinds() == {"msgpack_blocked": 2}


def test_watch_serde_keeps_warnings_off_stderr_and_restores_the_logger(capsys):
    logger = logging.getLogger(SERDE_LOGGER)
    propagate, handlers = logger.propagate, list(logger.handlers)
    with watch_serde() as watch:
        logger.warning("Deserializing unregistered type x.Y from checkpoint. This will be blocked")
        logger.warning("Blocked deserialization of a.B - not in allowed_msgpack_modules.")
    assert watch.warning_heads() == ["Deserializing unregistered type x.Y", "Blocked deserialization of a.B"]
    assert capsys.readouterr().err == ""
    assert logger.propagate == propagate and logger.handlers == handlers


def test_planted_call_calls_the_named_function_unless_blocked(capsys):
    planted = planted_call("builtins", "print", "called on load")
    with watch_serde():
        assert JsonPlusSerializer().loads_typed(planted) is None
    assert capsys.readouterr().out == "called on load\n"
    with watch_serde() as watch:
        assert JsonPlusSerializer(allowed_msgpack_modules=[FareQuote]).loads_typed(planted) == "called on load"
    assert capsys.readouterr().out == ""
    assert watch.types("msgpack_blocked") == ["builtins.print"]


@pytest.mark.parametrize("installed,fixed,ok", [
    ("4.3.2", "4.1.1", True), ("4.1.1", "4.1.1", True), ("4.1.0", "4.1.1", False), ("1.0.10", "1.0.9", True),
    ("1.0.9", "1.0.10", False), ("3.1", "3.0.1", True), ("1.0.10rc1", "1.0.10", False),
    ("1.0.10.post1", "1.0.10", True),
    (None, "1.0", False), ("garbage", "1.0", False),
])
def test_at_least(installed, fixed, ok):
    assert at_least(installed, fixed) is ok


def test_release_parses_numbers():
    assert release("1.2.24") == (1, 2, 24)
    with pytest.raises(ValueError):
        release("v1")


def test_advisory_rows_flag_old_or_missing_packages():
    versions = {"langgraph-checkpoint": "3.0.1", "langgraph-checkpoint-sqlite": "3.1.2"}
    rows = advisory_rows(version_of=versions.get)
    by_id = {r["advisory"]: r for r in rows}
    assert by_id["CVE-2025-64439"]["ok"] == "yes"
    assert by_id["CVE-2026-27794"]["ok"] == "NO"
    assert by_id["CVE-2026-28277"]["installed"] == "not installed" and by_id["CVE-2026-28277"]["ok"] == "NO"
    assert len(rows) == len(ADVISORIES)


def test_installed_versions_are_safe():
    assert all(row["ok"] == "yes" for row in advisory_rows()), advisory_rows()


class XorCipher(CipherProtocol):
    """Not encryption, only enough to make bytes unreadable for this test."""

    def encrypt(self, plaintext: bytes) -> tuple[str, bytes]:
        return "xor", bytes(b ^ 0x5A for b in plaintext)

    def decrypt(self, ciphername: str, ciphertext: bytes) -> bytes:
        assert ciphername == "xor"
        return bytes(b ^ 0x5A for b in ciphertext)


def test_rows_showing_finds_text_where_postgres_keeps_it_readable():
    with postgres_server() as pg, PostgresSaver.from_conn_string(pg.url) as saver:
        saver.setup()
        plain = build_quote_graph(saver)
        hidden = build_quote_graph(PostgresSaver(saver.conn, serde=EncryptedSerializer(XorCipher())))
        for graph, thread in ((plain, "plain"), (hidden, "hidden")):
            graph.invoke({"route": "PEK-SFO"}, {"configurable": {"thread_id": thread, "passenger": "Ada Lovelace"}})
        # the route is a str in the state (inline in 2 checkpoints) and inside the FareQuote blob and its write
        assert rows_showing(saver.conn, "plain", "PEK-SFO") == {"checkpoint JSON": 2, "metadata": 0, "blobs": 2,
                                                               "writes": 2}
        # encrypted: blobs and writes hide it, the inline string and the metadata do not
        assert rows_showing(saver.conn, "hidden", "PEK-SFO") == {"checkpoint JSON": 2, "metadata": 0, "blobs": 0,
                                                                "writes": 0}
        assert rows_showing(saver.conn, "hidden", "Ada Lovelace")["metadata"] == 3
        assert rows_showing(saver.conn, "hidden", "nowhere") == dict.fromkeys(("checkpoint JSON", "metadata", "blobs",
                                                                               "writes"), 0)
        assert hidden.get_state({"configurable": {"thread_id": "hidden"}}).values["route"] == "PEK-SFO"
    assert leftover_server_processes() == []
