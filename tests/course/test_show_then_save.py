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


def test_saved_definitions_inside_a_package(tmp_path):
    """``helpers.pkg.mod.name`` is helpers/pkg/mod.py; ``helpers.pkg.name`` is helpers/pkg/__init__.py."""
    package = tmp_path / "helpers" / "pkg"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("from helpers.pkg.mod import build\n\nLIMIT = 3\n")
    (package / "mod.py").write_text(textwrap.dedent('''
        from langgraph.graph import StateGraph

        def build():
            return StateGraph(dict)
    '''))
    cell = "# saved as {}\ndef build():\n    return StateGraph(dict)\n"
    assert sts.module_path("helpers.pkg.mod", tmp_path) == package / "mod.py"
    assert sts.module_path("helpers.pkg", tmp_path) == package / "__init__.py"
    assert sts.mismatch(sts.Saved("01_x", 3, "helpers.pkg.mod.build", cell.format("helpers.pkg.mod.build")),
                        tmp_path) is None
    assert sts.mismatch(sts.Saved("01_x", 3, "helpers.pkg.LIMIT", "# saved as helpers.pkg.LIMIT\nLIMIT = 3\n"),
                        tmp_path) is None
    reexported = sts.mismatch(sts.Saved("01_x", 3, "helpers.pkg.build", cell.format("helpers.pkg.build")), tmp_path)
    assert "has no top-level 'build'" in reexported  # an import in __init__.py is not the definition
    assert sts.graph_builders(tmp_path / "helpers", tmp_path) == ["helpers.pkg.mod.build"]
    assert sts.module_name(package / "__init__.py", tmp_path) == "helpers.pkg"
