"""What a rewritten check cell runs in the learner's kernel, as a plain (linted, tested) module.

:func:`course.grade.rewriting.trusted_check_source` writes a check cell from the source of
the two functions below, then one call with the cell's own arguments (the original check
code, a fresh HMAC key, the checks folders), then ``del`` of both names::

    def _lgcourse_sign(...): ...          # the source of this module's function
    def _lgcourse_graded_check(...): ...  # likewise
    _lgcourse_graded_check('check("03.1", route)', 'KEY', ('/.../helpers/checks',), ..., sign=_lgcourse_sign,
                           namespace=globals())
    del _lgcourse_graded_check, _lgcourse_sign

The names start with ``_lgcourse_`` because the cell defines them in the learner's
namespace (and deletes them again): a learner's own ``sign`` or ``check`` is left alone.
For the same reason the module imports nothing at its top and its annotations are
builtins: everything a function needs is imported inside it, when the cell runs.

:func:`_lgcourse_sign` is the one HMAC signing function: the kernel signs with its source,
and the grader (:func:`course.grade.scoring.signed_result`) verifies with this very
function (``sign``). The check function receives it as an argument, bound before any
learner code runs in the cell, so a learner function called by a checker cannot swap the
signer by rebinding a global.
"""


def _lgcourse_sign(key: str, exercise: str, status: str, message: str) -> str:
    """HMAC-SHA256, under ``key``, of the JSON list ``[exercise, status, message]``."""
    import hashlib
    import hmac
    import json

    text = json.dumps([exercise, status, message])
    return hmac.new(key.encode(), text.encode(), hashlib.sha256).hexdigest()


def _lgcourse_graded_check(source: str, key: str, paths: tuple[str, ...], mime: str, signature_key: str, *,
                           sign, namespace: dict) -> None:
    """Run the check cell's ``source`` against a fresh copy of ``helpers/checks`` and publish
    each result with its signature.

    ``paths``: the checks folders, searched in order; the last one holds ``protocol.py``.
    ``namespace``: the learner's globals; ``source`` runs in a copy of them whose ``check``
    records results instead of showing them.
    """
    import hashlib
    import importlib.util
    import sys
    import types

    from IPython.display import publish_display_data

    import helpers  # noqa: F401  (the fresh package sits inside it, so "from ..travel_graphs import" works)

    package = "helpers._grading_" + hashlib.sha256(key.encode()).hexdigest()[:16]
    module = types.ModuleType(package)
    module.__path__ = list(paths)
    sys.modules[package] = module
    results = []
    try:
        spec = importlib.util.spec_from_file_location(package + ".protocol", paths[-1] + "/protocol.py")
        protocol = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = protocol
        spec.loader.exec_module(protocol)

        def check(exercise_id, *answers):
            results.append(protocol.evaluate(exercise_id, *answers))

        names = dict(namespace)
        names["check"] = check
        exec(compile(source, "<check cell>", "exec"), names)
    finally:
        for name in [n for n in sys.modules if n == package or n.startswith(package + ".")]:
            del sys.modules[name]
    for result in results:
        payload = {"exercise": result.exercise, "status": result.status, "message": result.message}
        signature = sign(key, payload["exercise"], payload["status"], payload["message"])
        publish_display_data({"text/plain": result.line, mime: payload},
                             metadata={signature_key: {"signature": signature}})


sign = _lgcourse_sign  # the grader's name for the one signing function
