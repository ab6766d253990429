"""Grade submitted notebooks: one row per exercise, a score per file, a CSV on request.

    python -m course.grade SUBMISSION.ipynb [MORE.ipynb | FOLDER ...] [--csv FILE]
                            [--timeout SECONDS] [--jobs N] [--solutions DIR] [--keep DIR]

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
    4. The notebook runs in a fresh kernel (nbclient) in a private temporary folder: its
       working directory, its TMPDIR, and the IPC sockets it talks over (no loopback ports,
       see :mod:`course.grade.kernels`); the folder goes when the kernel stops.
       ``allow_errors`` is on, one timeout per cell. A cell that times out is interrupted;
       if the kernel does not answer afterwards it is restarted and the earlier non-check
       cells are replayed, so later exercises are still graded. A kernel that dies
       (``os._exit``, out of memory) makes that exercise and all later ones ``error``; the
       next submission is graded normally. A submission that kills the worker process
       grading it gets an internal-error row; the others are graded again in a fresh
       worker. Captured output is capped per cell.
    5. Only signed results from the check cell of each exercise count. A bundle printed by
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
``rewriting`` (the notebook that runs, signed check cells), ``kernels`` (one kernel's
lifecycle), ``execution`` (cells, timeouts, restarts), ``scoring`` (verdicts), ``batch``
(one file, many files), ``cli`` (tables, CSV, exit code).
"""

from __future__ import annotations

from ..layout import ROOT, SOLUTIONS
from .batch import expand, grade_file, grade_paths
from .cli import main, report, write_csv
from .execution import MAX_OUTPUT_CHARS, REPLY_GRACE, TIMEOUT_ENAME, CellRun, Step, run_notebook
from .kernels import GradingKernel, kernel_env
from .reading import (
    MAX_FILE_BYTES,
    Invalid,
    chapter_solutions,
    exercise_ids,
    find_answers,
    identify_chapter,
    pristine_learner_copy,
    read_submission,
)
from .results import (
    CSV_COLUMNS,
    DEFAULT_TIMEOUT,
    ERROR,
    INTERNAL_ERROR,
    INVALID,
    STATUSES,
    TIMEOUT,
    Graded,
    Row,
    internal_error_message,
)
from .rewriting import CHECKS_DIR, MAX_SOURCE_CHARS, SIGNATURE_KEY, Plan, graded_notebook, sign, trusted_check_source
from .scoring import signed_result, verdicts

__all__ = [
    "CHECKS_DIR", "CSV_COLUMNS", "DEFAULT_TIMEOUT", "ERROR", "INTERNAL_ERROR", "INVALID", "MAX_FILE_BYTES",
    "MAX_OUTPUT_CHARS", "MAX_SOURCE_CHARS", "REPLY_GRACE", "ROOT", "SIGNATURE_KEY", "SOLUTIONS", "STATUSES",
    "TIMEOUT", "TIMEOUT_ENAME", "CellRun", "Graded", "GradingKernel", "Invalid", "Plan", "Row", "Step",
    "chapter_solutions", "exercise_ids", "expand", "find_answers", "grade_file", "grade_paths", "graded_notebook",
    "identify_chapter", "internal_error_message", "kernel_env", "main", "pristine_learner_copy", "read_submission",
    "report", "run_notebook", "sign", "signed_result", "trusted_check_source", "verdicts", "write_csv",
]
