"""Grade submitted notebooks: one row per exercise, a score per file, a CSV on request.

    python -m course.grade SUBMISSION.ipynb [MORE.ipynb | FOLDER ...] [--csv FILE]
                            [--timeout SECONDS] [--jobs N] [--solutions DIR] [--keep DIR] [--whole]

Each submission prints a table (exercise, status, message) and its score (passed/total).
``--csv FILE`` writes one row per exercise with the columns ``submission, chapter,
exercise, status, message``. A folder argument grades every ``*.ipynb`` below it.

Statuses
    passed, failed, not-attempted   what the chapter's check said (failed carries the hint)
    error      the exercise (or its check) raised, or the kernel died before it finished
    timeout    the exercise cell or its check ran longer than ``--timeout`` seconds
    invalid    the file could not be graded: missing, unreadable, not JSON, JSON but not a
               notebook, unknown chapter, or an exercise cell far too large

Exit code 0 when every file was processed, whatever the scores: a bad file (also a path
that does not exist) is reported as ``invalid`` rows and grading goes on. Exit code 2 for
usage errors (bad options, an unwritable ``--csv``). Exit code 1 only when the grader
itself broke on some file (e.g. no Jupyter kernel could start): that file gets one row
``error`` / ``internal grader error while <step>: <ExceptionType>: <first line>``, the
other files are still graded, and stderr lists the files that broke.

How a submission is graded
    1. The chapter comes from the notebook metadata the build writes (``course.slug``, then
       ``course.chapter``), else from the file name (``NN_...``). The pristine source is
       ``solutions/<slug>.ipynb`` next to this package.
    2. The grader builds the notebook it runs from the PRISTINE LEARNER COPY of that chapter
       (``make_learner_copy(annotate(solution))``) and takes only the exercise cells' sources
       from the submission (matched by ``course.exercise`` metadata, then by cell id
       ``exercise-NN-k``, then by "the code cell before the submission's
       ``check("NN.k"`` cell"; when several cells match, the last one). Every other cell
       of the submission is ignored: edited or deleted check cells, edited setup cells and
       cells the learner added never run. An exercise cell that is missing, empty or no
       longer a code cell keeps the pristine stub and is reported ``not-attempted`` with
       the reason ("exercise cell missing from the submission").
    3. Each check cell is replaced by grader code that runs the original ``check(...)``
       call against a FRESH copy of ``helpers/checks`` (``protocol.py`` and the chapter's
       module, loaded from disk under a private package name, so monkeypatching
       ``helpers.checks`` or rebinding ``check`` in an exercise cell has no effect; what a
       chapter module imports from other helpers modules is the kernel's shared copy) and
       signs the result with an HMAC key that is random per check cell and appears nowhere
       before that cell runs.
    4. Only the code cells a grade can depend on run (:mod:`course.grade.slicing`): the setup,
       exercise and check cells, every earlier cell that binds a name one of them reads (now,
       or later inside a function), and every cell that acts on the whole process (the
       environment, a module's attribute, a magic). A server the exercises never read is not
       started. ``--whole`` runs every cell; ``tests/course/test_grade_slicing.py`` shows the
       rows are the same.
    5. The notebook runs in a fresh kernel (nbclient) in a private temporary folder: its
       working directory, its TMPDIR, and the IPC sockets it talks over (no loopback ports,
       see :mod:`course.grade.kernels`); the folder goes when the kernel stops.
       ``allow_errors`` is on, one timeout per cell. A cell that times out is interrupted;
       if the kernel does not answer afterwards it is restarted and the earlier non-check
       cells are replayed, so later exercises are still graded. A kernel that dies
       (``os._exit``, out of memory) makes that exercise and all later ones ``error``; the
       next submission is graded normally. A submission that kills the worker process
       grading it gets an internal-error row; the others are graded again in a fresh
       worker. Captured output is capped per cell.
    6. Only signed results from the check cell of each exercise count. A bundle printed by
       an exercise cell, an unsigned or wrongly signed bundle, or a bundle for another
       exercise is ignored; a check cell with no valid result is ``error`` with the reason.

Threat model (honest version). This stops the tampering a learner can do by editing the
notebook: deleting or editing check cells, rebinding ``check``, monkeypatching the check
modules, printing a fake result bundle, hiding the answer cell. It does NOT stop a
determined attacker: exercise code runs with full rights in the same kernel and before the
checks, so it can, e.g., install IPython hooks that read the next check cell's source (and
key), inspect stack frames during a check, patch ``hmac``/``json``/builtins, hand the
checker objects whose ``__eq__`` always agrees, or read files on the grading machine.
Grade untrusted submissions in a throw-away container or VM, and read suspicious
submissions yourself (``--keep DIR`` stores the executed notebooks).

Modules: ``results`` (statuses, rows), ``reading`` (the submission, its chapter and answers),
``rewriting`` (the notebook that runs, signed check cells), ``slicing`` (which cells it
keeps), ``graded_check`` (what a rewritten
check cell runs in the kernel, and the one signing function), ``kernels`` (one kernel's
lifecycle), ``execution`` (cells, timeouts, restarts), ``scoring`` (verdicts), ``submission``
(one file), ``batch`` (many files), ``cli`` (tables, CSV, exit code).
"""

from __future__ import annotations

import importlib
from typing import Any

# The public names, and the submodule each lives in. They are imported on first use (PEP 562
# module ``__getattr__``): ``python -m course.grade`` with ``--jobs 2`` never executes a
# notebook in its own process, so it need not import nbformat, nbclient and jsonschema
# (about 1.3 s of CPU); its worker processes import what grading needs.
_EXPORTS = {
    "ROOT": "..layout", "SOLUTIONS": "..layout",
    "expand": ".batch", "grade_paths": ".batch", "grade_file": ".submission",
    "main": ".cli", "report": ".cli", "write_csv": ".cli",
    "MAX_OUTPUT_CHARS": ".execution", "REPLY_GRACE": ".execution", "TIMEOUT_ENAME": ".execution",
    "CellRun": ".execution", "Step": ".execution", "run_notebook": ".execution",
    "GradingKernel": ".kernels", "kernel_env": ".kernels",
    "MAX_FILE_BYTES": ".reading", "Invalid": ".reading", "chapter_solutions": ".reading", "exercise_ids": ".reading",
    "find_answers": ".reading", "identify_chapter": ".reading", "pristine_learner_copy": ".reading",
    "read_submission": ".reading",
    "CSV_COLUMNS": ".results", "DEFAULT_TIMEOUT": ".results", "ERROR": ".results", "INTERNAL_ERROR": ".results",
    "INVALID": ".results", "STATUSES": ".results", "TIMEOUT": ".results", "Graded": ".results", "Row": ".results",
    "internal_error_message": ".results",
    "CHECKS_DIR": ".rewriting", "MAX_SOURCE_CHARS": ".rewriting", "SIGNATURE_KEY": ".rewriting", "Plan": ".rewriting",
    "graded_notebook": ".rewriting", "sign": ".graded_check", "trusted_check_source": ".rewriting",
    "signed_result": ".scoring", "verdicts": ".scoring",
}
SUBMODULES = ("batch", "cli", "execution", "graded_check", "kernels", "reading", "results", "rewriting", "scoring",
              "submission")

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    """``grade.<name>`` imports the submodule that defines it, once."""
    if name in _EXPORTS:
        value = getattr(importlib.import_module(_EXPORTS[name], __name__), name)
        globals()[name] = value
        return value
    if name in SUBMODULES:
        return importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS) | set(SUBMODULES))
