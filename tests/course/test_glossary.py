"""GLOSSARY.md stays true: every ID a chapter names has an entry, and every chapter it links exists."""

import re

from course.layout import NOTEBOOKS, ROOT, chapters
from course.notebook_format import source
from tests.conftest import SOLUTIONS, read

GLOSSARY = (ROOT / "GLOSSARY.md").read_text(encoding="utf-8")
ID_NAME = re.compile(r"`([a-z][a-z_]*_(?:id|ns))`")  # thread_id, checkpoint_ns, ledger_run_id, ...


def glossary_terms() -> set[str]:
    return {m.strip("`") for m in re.findall(r"^\| (`?[^|`]+`?) \|", GLOSSARY, re.M)} - {"term"}


def test_every_id_a_chapter_names_has_an_entry():
    missing = {}
    for path in SOLUTIONS:
        for cell in read(path).cells:
            if cell.cell_type == "markdown":
                for name in set(ID_NAME.findall(source(cell))) - glossary_terms():
                    missing.setdefault(name, path.stem)
    assert missing == {}, f"add these IDs to GLOSSARY.md (first chapter that names each): {missing}"


def test_every_chapter_link_exists_and_matches_its_number():
    links = re.findall(r"\[(\d\d)\]\(notebooks/([^)]+)\)", GLOSSARY)
    assert links, "the glossary links the chapter that teaches each term"
    names = {p.name for p in chapters(NOTEBOOKS)}
    for number, target in links:
        assert target in names, f"GLOSSARY.md links {target}, which is not a chapter"
        assert target.startswith(number + "_"), f"[{number}] links {target}"


def test_the_readme_links_the_glossary():
    assert "(GLOSSARY.md)" in (ROOT / "README.md").read_text(encoding="utf-8")
