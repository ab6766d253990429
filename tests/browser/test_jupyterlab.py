"""JupyterLab as a learner meets it: `make lab`, then chapters 00 and 09 in headless Chromium.

Each check has a time limit (``STEP_TIMEOUT_MS`` per wait, ``RUN_ALL_TIMEOUT_MS`` for a
whole chapter). The notebooks are those of a throw-away copy of the course: editing an
exercise here never changes a committed file.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator

import nbformat
import psutil
import pytest
from playwright.sync_api import Locator, Page

from course.lab_session import LabSession
from course.layout import NOTEBOOKS, SOLUTIONS
from course.learner_copies import FOLDED_METADATA, REVEAL_SUMMARY
from course.notebook_format import BEGIN, END, source
from tests.checks.test_checks_chapter_00 import WRONG_ANSWERS

CHAPTER_00 = "00_start_here.ipynb"
CHAPTER_09 = "09_time_travel.ipynb"
RUN_ALL_TIMEOUT_MS = 240_000
LANGUAGE_INFO_SETTLE_S = 2.0  # after "Idle": the kernel's language_info reaches the model within this
PROBLEM_OUTPUTS = ('.jp-OutputArea-output[data-mime-type="application/vnd.jupyter.stderr"], '
                   '.jp-OutputArea-output[data-mime-type="application/vnd.jupyter.error"]')
WIDGET_ERROR = "Error displaying widget"


# --- Driving JupyterLab ------------------------------------------------------------------


def open_notebook(page: Page, lab: LabSession, name: str, workspace: str) -> None:
    """Open notebooks/<name> in a workspace of its own (so tabs of other tests are not restored)."""
    page.goto(f"{lab.base_url}/lab/workspaces/{workspace}/tree/notebooks/{name}?reset&token={lab.token}")
    current_tab(page, name)
    wait_for_idle_kernel(page)


def current_tab(page: Page, name: str) -> Locator:
    tab = page.locator(".lm-DockPanel-tabBar .lm-TabBar-tab.lm-mod-current", has_text=name)
    tab.wait_for()
    return tab


def wait_for_idle_kernel(page: Page) -> None:
    page.wait_for_function("[...document.querySelectorAll('.jp-StatusBar-Widget')]"
                           ".some(e => /\\| Idle/.test(e.innerText))")


def run_all_cells(page: Page) -> None:
    """Run → Run All Cells, then wait until every code cell shows an execution count."""
    page.locator(".lm-MenuBar-itemLabel", has_text=re.compile(r"^Run$")).click()
    page.locator(".lm-Menu-itemLabel", has_text=re.compile(r"^Run All Cells$")).click()
    page.wait_for_function("""() => {
        const visible = '.jp-NotebookPanel:not(.lm-mod-hidden) .jp-CodeCell .jp-InputPrompt';
        const prompts = [...document.querySelectorAll(visible)].map(e => e.innerText.trim());
        return prompts.length > 0 && prompts.every(p => /^\\[\\d+\\]:$/.test(p));
    }""", timeout=RUN_ALL_TIMEOUT_MS)
    wait_for_idle_kernel(page)


def problem_outputs(page: Page) -> list[str]:
    """Error and stderr outputs, and widgets that failed to display, each as its first line."""
    shown = [text.strip().splitlines()[0] if text.strip() else "(empty)"
             for text in page.locator(PROBLEM_OUTPUTS).all_inner_texts()]
    # The widget manager writes its error into the widget's own node (class jupyter-widgets);
    # chapter 09's text output quotes the same words in its hint, which must not count.
    failed_widgets = page.locator(".jupyter-widgets").filter(has_text=re.compile(rf"^\s*{WIDGET_ERROR}"))
    return shown + [WIDGET_ERROR] * failed_widgets.count()


def cell_index(page: Page, text: str) -> int:
    """Index of the first cell whose input contains ``text``."""
    inputs = page.locator(".jp-NotebookPanel:not(.lm-mod-hidden) .jp-Cell .jp-InputArea").all_inner_texts()
    return next(i for i, t in enumerate(inputs) if text in t)


def cells(page: Page) -> Locator:
    return page.locator(".jp-NotebookPanel:not(.lm-mod-hidden) .jp-Cell")


def replace_source_and_run(page: Page, index: int, new_source: str) -> None:
    """Type ``new_source`` over cell ``index``, then Shift+Enter it and the cell after it."""
    editor = cells(page).nth(index).locator(".cm-content")
    editor.click()
    page.keyboard.press("ControlOrMeta+a")
    page.keyboard.insert_text(new_source)  # as pasted text: no auto-closed brackets
    page.keyboard.press("Shift+Enter")
    page.keyboard.press("Shift+Enter")


def wait_for_output(page: Page, index: int, pattern: str) -> str:
    output = cells(page).nth(index).locator(".jp-OutputArea-output")
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        text = " ".join(output.all_inner_texts())
        if re.search(pattern, text):
            return text
        time.sleep(0.1)
    raise AssertionError(f"cell {index} never showed {pattern!r}; it shows {text!r}")


# --- Exercise 00.1, from the repository's own files --------------------------------------


def solution_source(exercise: str) -> str:
    """The answer between the solution markers of ``exercise``'s cell in solutions/."""
    nb = nbformat.read(SOLUTIONS / CHAPTER_00, as_version=4)
    cell = next(c for c in nb.cells if c.metadata.get("course") == {"role": "exercise", "exercise": exercise})
    return source(cell).split(BEGIN, 1)[1].split(END, 1)[0].strip("\n")


def answer_name(exercise: str) -> str:
    """The variable the check cell hands to ``check`` (``kinds`` in ``check("00.1", kinds)``)."""
    nb = nbformat.read(NOTEBOOKS / CHAPTER_00, as_version=4)
    calls = (re.search(rf"""check\(\s*["']{re.escape(exercise)}["']\s*,\s*(\w+)""", source(c)) for c in nb.cells)
    return next(m.group(1) for m in calls if m)


# --- The checks --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def landing(lab: LabSession, new_page) -> Iterator[Page]:
    """What `make lab` shows first: the page a learner's browser opens."""
    page = new_page()
    page.goto(lab.url)
    yield page


def test_make_lab_lands_on_chapter_00(landing: Page) -> None:
    current_tab(landing, CHAPTER_00)
    assert landing.url.split("?")[0].endswith(f"/lab/tree/notebooks/{CHAPTER_00}")
    # Rooted at the course folder, as on Binder: the file browser shows notebooks/ as a
    # folder of the root, and the root holds solutions/ and README.md.
    assert "notebooks" in landing.locator(".jp-BreadCrumbs").inner_text()
    landing.locator(".jp-BreadCrumbs-home").click()
    for name in ("solutions", "README.md"):
        landing.locator(".jp-DirListing-itemText", has_text=re.compile(rf"^{re.escape(name)}$")).wait_for()


def test_the_lab_s_terminals_do_not_inherit_make_s_level(lab: LabSession) -> None:
    # A terminal in JupyterLab gets the server's environment: with MAKELEVEL set, `make
    # progress` typed there would print "make[1]: Entering directory" lines.
    servers = [p for p in psutil.Process(lab.pid).children(recursive=True) if "jupyter-lab" in " ".join(p.cmdline())]
    assert servers, "no JupyterLab process under `make lab`"
    assert not {"MAKELEVEL", "MAKEFLAGS", "MFLAGS"} & set(servers[0].environ())


def test_an_untouched_notebook_closes_without_a_save_prompt(landing: Page) -> None:
    tab = current_tab(landing, CHAPTER_00)
    wait_for_idle_kernel(landing)
    time.sleep(LANGUAGE_INFO_SETTLE_S)
    assert "jp-mod-dirty" not in (tab.get_attribute("class") or ""), "the untouched notebook counts as modified"
    tab.locator(".lm-TabBar-tabCloseIcon").click()
    time.sleep(1.0)
    assert landing.locator(".jp-Dialog").count() == 0, landing.locator(".jp-Dialog").inner_text()
    assert landing.locator(".lm-DockPanel-tabBar .lm-TabBar-tab", has_text=CHAPTER_00).count() == 0


def folded_reveal_first_line(name: str) -> str:
    """The first line of notebooks/<name>'s first folded reveal, without markdown markup."""
    nb = nbformat.read(NOTEBOOKS / name, as_version=4)
    cell = next(c for c in nb.cells if c.metadata.get("course", {}).get(FOLDED_METADATA))
    line = source(cell).split(f"{REVEAL_SUMMARY}\n\n", 1)[1].splitlines()[0]
    return re.sub(r"[*`_]", "", line).strip()


def test_a_prediction_s_answer_stays_folded_until_the_learner_opens_it(lab: LabSession, new_page) -> None:
    page = new_page()
    open_notebook(page, lab, CHAPTER_00, "folded-reveal")
    answer = folded_reveal_first_line(CHAPTER_00)
    fold = page.locator(".jp-MarkdownCell details", has_text=answer)
    fold.scroll_into_view_if_needed()
    summary = fold.locator("summary")
    assert summary.is_visible() and "Run the cell above first" in summary.inner_text()
    text = fold.locator("p", has_text=answer)
    assert not text.is_visible(), "the answer shows before the learner opens it"
    summary.click()
    text.wait_for(state="visible")
    page.close()


def open_and_run_all(lab: LabSession, new_page, name: str) -> Page:
    """A new page with notebooks/<name> open in a workspace of its own, after Run All."""
    page = new_page()
    open_notebook(page, lab, name, f"chapter-{name[:2]}")
    run_all_cells(page)
    return page


@pytest.fixture(scope="module")
def chapter_00(lab: LabSession, new_page) -> Page:
    return open_and_run_all(lab, new_page, CHAPTER_00)


@pytest.fixture(scope="module")
def chapter_09(lab: LabSession, new_page) -> Page:
    return open_and_run_all(lab, new_page, CHAPTER_09)


@pytest.mark.parametrize("chapter", ["chapter_00", "chapter_09"])
def test_run_all_shows_no_error(chapter: str, request: pytest.FixtureRequest) -> None:
    assert problem_outputs(request.getfixturevalue(chapter)) == []


def test_exercise_00_1_says_failed_then_passed(chapter_00: Page) -> None:
    wrong_value = WRONG_ANSWERS["00.1"][0][0][0]
    check = cell_index(chapter_00, 'check("00.1"')
    replace_source_and_run(chapter_00, check - 1, f"{answer_name('00.1')} = {wrong_value!r}")
    assert "passed" not in wait_for_output(chapter_00, check, r"failed:")
    replace_source_and_run(chapter_00, check - 1, solution_source("00.1"))
    assert "failed" not in wait_for_output(chapter_00, check, r"passed")


def test_the_explorer_widget_changes_when_its_slider_moves(chapter_09: Page) -> None:
    # Chapter 09's cells change: find the widget by what it is, the first slider in an output.
    output = chapter_09.locator(".jp-OutputArea-output", has=chapter_09.locator(".widget-slider")).first
    output.scroll_into_view_if_needed()
    before = output.inner_text()
    handle = output.locator(".widget-slider .noUi-handle").first
    at_start = handle.get_attribute("aria-valuenow") == handle.get_attribute("aria-valuemin")
    handle.focus()
    chapter_09.keyboard.press("ArrowRight" if at_start else "ArrowLeft")
    deadline = time.monotonic() + 30
    while output.inner_text() == before and time.monotonic() < deadline:
        time.sleep(0.1)
    after = output.inner_text()
    assert after != before, f"the widget still shows the same after the slider moved:\n{before}"
    assert WIDGET_ERROR not in before + after


def test_a_widget_that_cannot_display_is_reported(lab: LabSession, new_page) -> None:
    """The detector's own control: a saved widget whose model no kernel holds (what a saved
    and reopened chapter 09 shows) counts as a problem, and the hint text alone does not."""
    nb = nbformat.v4.new_notebook(metadata=nbformat.read(NOTEBOOKS / CHAPTER_09, as_version=4).metadata)
    nb.cells = [nbformat.v4.new_code_cell("explorer_view", execution_count=1, outputs=[
        nbformat.v4.new_output("display_data", data={
            "text/plain": "No widget below, or 'Error displaying widget: model not found'? Re-run this cell.",
            "application/vnd.jupyter.widget-view+json": {"version_major": 2, "version_minor": 0,
                                                         "model_id": "0" * 32}})])]
    nbformat.write(nb, lab.copy / "notebooks" / "zz_stale_widget.ipynb")
    page = new_page()
    open_notebook(page, lab, "zz_stale_widget.ipynb", "stale-widget")
    assert problem_outputs(page) == []  # untrusted: JupyterLab shows only the text, our hint
    # Trusting it (as saving does) makes JupyterLab render the widget, whose model is gone.
    page.keyboard.press("ControlOrMeta+Shift+c")
    page.keyboard.insert_text("Trust Notebook")
    page.keyboard.press("Enter")
    page.locator(".jp-Dialog button", has_text=re.compile(r"^Trust$")).click()
    page.locator(".jupyter-widgets", has_text=WIDGET_ERROR).wait_for()
    assert problem_outputs(page) == [WIDGET_ERROR]
    page.close()  # before any autosave: the file lives in the throw-away copy, but a save signs it
