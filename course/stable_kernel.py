"""ipykernel's kernel, reporting Python's version as major.minor: the same on every machine.

JupyterLab copies the kernel's ``language_info`` into the open notebook when the kernel
starts, and marks the notebook modified unless the copy deep-equals what is stored
(``YNotebook.setMetadata`` returns early on equal values). ipykernel reports the full
version (``3.11.7`` here, another patch release on Binder or a learner's laptop), so no
stored value could match everywhere, and closing an untouched chapter asked "Save your
work?". This kernel reports ``3.11``; the build stores the identical dict
(:data:`course.notebook_format.LANGUAGE_INFO`), so an untouched notebook stays clean.

Selected by the ipykernel config file that ``python -m course.jupyter_kernels install``
writes into the environment (the Makefile and ``binder/postBuild`` run it). Nothing else
changes: ``sys.version`` in a cell still shows the full version.
"""

from __future__ import annotations

import sys

from ipykernel.ipkernel import IPythonKernel

PYTHON_VERSION = f"{sys.version_info.major}.{sys.version_info.minor}"


class StableVersionKernel(IPythonKernel):
    """An ``IPythonKernel`` whose ``language_info.version`` is ``major.minor``."""

    language_info = {**IPythonKernel.language_info, "version": PYTHON_VERSION}
