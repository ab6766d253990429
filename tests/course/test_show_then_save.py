"""Show, then save: every lesson helper is a chapter cell first, and stays identical to it."""

import textwrap

from course import show_then_save as sts


def test_every_saved_definition_is_identical_to_its_cell():
    problems = [m for m in (sts.mismatch(s) for s in sts.saved_lines()) if m]
    assert not problems, "\n".join(problems)


def test_every_graph_builder_in_helpers_is_shown_in_a_chapter():
    shown = {s.target for s in sts.saved_lines()}
    hidden = [t for t in sts.graph_builders() if t not in shown]
    assert not hidden, ("these helpers build a StateGraph that no chapter cell shows with a "
                        f"'# saved as' line: {hidden}")


def test_no_chapter_uses_a_saved_name_before_showing_it():
    problems = sts.used_before_shown()
    assert not problems, "\n".join(problems)


def test_the_rules_catch_a_drifted_copy(tmp_path):
    helpers = tmp_path / "helpers"
    helpers.mkdir()
    (helpers / "graphs.py").write_text(textwrap.dedent('''
        from langgraph.graph import StateGraph

        def build(x):
            return StateGraph(dict) if x else None

        def hidden_builder():
            return StateGraph(dict)
    '''))
    same = sts.Saved("01_x", 3, "helpers.graphs.build", "# saved as helpers.graphs.build\n"
                     "def build(x):\n    # a comment is not code\n    return StateGraph(dict) if x else None\n")
    drifted = sts.Saved("01_x", 3, "helpers.graphs.build", "def build(x):\n    return StateGraph(dict)\n")
    missing = sts.Saved("01_x", 3, "helpers.graphs.other", "x = 1\n")
    assert sts.mismatch(same, tmp_path) is None
    assert "differs" in sts.mismatch(drifted, tmp_path)
    assert "defines no top-level 'other'" in sts.mismatch(missing, tmp_path)
    assert sts.graph_builders(helpers, tmp_path) == ["helpers.graphs.build", "helpers.graphs.hidden_builder"]


def test_names_are_read_as_tokens_not_text():
    assert "say" in sts.names_used("print(say(graph, 't', 'x'))")
    assert "say" not in sts.names_used("print('where did I say it?')  # say")


def test_sync_on_the_synced_tree_changes_nothing():
    changed = sts.sync(write=False)
    assert not changed, (f"{[str(p) for p in changed]} differ from the chapter cells that show them (the "
                         "chapter is the source): run python -m course.show_then_save --sync and commit")


def test_sync_writes_the_cell_into_a_package_module_and_keeps_the_rest(tmp_path):
    ledger = tmp_path / "helpers" / "ledger"
    ledger.mkdir(parents=True)
    (ledger / "__init__.py").write_text('"""The ledger."""\n\nSCHEMA = "old"\n\nfrom .acceptance import accept\n')
    acceptance = ledger / "acceptance.py"
    acceptance.write_text(textwrap.dedent('''\
        """Acceptance."""

        import functools


        def before():
            return 1


        # saved as helpers.ledger.acceptance.accept (a hand-written marker, replaced)
        @functools.cache
        def accept(x):
            return x


        def after():
            return accept(2)
    '''))
    cell = ("%%time\n# saved as helpers.ledger.acceptance.accept\n# saved as helpers.ledger.SCHEMA\n"
            "SCHEMA = 'new'\n\n@functools.cache\ndef accept(x):\n    # the chapter's comment\n    return x + 1\n"
            "\nprint(accept(1))\n")
    saved = [sts.Saved("11_command_ledger", 4, target, cell)
             for target in sts.SAVED_AS.findall(cell)]
    assert [s.module for s in saved] == ["helpers.ledger.acceptance", "helpers.ledger"]
    assert sts.module_path("helpers.ledger", tmp_path) == ledger / "__init__.py"

    assert sorted(sts.sync(saved, tmp_path)) == [ledger / "__init__.py", acceptance]
    assert acceptance.read_text() == textwrap.dedent('''\
        """Acceptance."""

        import functools


        def before():
            return 1


        # shown in solutions/11_command_ledger.ipynb
        @functools.cache
        def accept(x):
            # the chapter's comment
            return x + 1


        def after():
            return accept(2)
    ''')
    assert (ledger / "__init__.py").read_text() == (
        '"""The ledger."""\n\n# shown in solutions/11_command_ledger.ipynb\nSCHEMA = \'new\'\n\n'
        'from .acceptance import accept\n')
    assert all(sts.mismatch(s, tmp_path) is None for s in saved)
    assert sts.sync(saved, tmp_path) == []  # a second run changes nothing


def test_sync_appends_a_definition_the_module_lacks(tmp_path):
    (tmp_path / "helpers").mkdir()
    module = tmp_path / "helpers" / "graphs.py"
    module.write_text("import os\n")
    saved = [sts.Saved("01_threads", 2, "helpers.graphs.LIMIT", "# saved as helpers.graphs.LIMIT\nLIMIT = 3\n")]
    assert sts.sync(saved, tmp_path) == [module]
    assert module.read_text() == "import os\n\n\n# shown in solutions/01_threads.ipynb\nLIMIT = 3\n"
    assert sts.sync(saved, tmp_path) == []
