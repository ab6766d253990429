"""How the course's commands run Jupyter kernels: quietly, and the same on every machine.

    python -m course.jupyter_kernels install [--prefix PREFIX]

Two things a learner or maintainer would otherwise see:

* **"Kernel is running over TCP without encryption …"** ipykernel logs this warning at
  every kernel start over TCP. Course kernels only ever talk to a client on the same
  machine, so they use the IPC transport instead: Unix domain sockets, next to the
  connection file in Jupyter's runtime folder (private to the user), and no warning.
  ``make lab`` passes ``--KernelManager.transport=ipc``; commands that run notebooks with
  nbclient (build, bench; the grader can do the same) pass
  ``kernel_manager_class=IpcKernelManager``; the test suite gives nbval
  :class:`IpcBlockingKernelManager`. Sockets also cannot collide: a TCP kernel binds
  ports that were free a moment earlier, and on a busy machine another process can take
  one first (7 of 24 concurrent kernel starts died of it in one measurement here).
* **"Save your work?" on an untouched notebook.** ``install`` writes the ipykernel config
  file of the environment (``PREFIX/etc/ipython/ipython_kernel_config.py``, PREFIX
  defaulting to this interpreter's ``sys.prefix``) so that its kernels are
  :class:`course.stable_kernel.StableVersionKernel` (see there why). An existing config
  file keeps its content; the course's lines are added once.
* **Kernels that pile up.** A kernel keeps running after its tab is closed, and each
  chapter's holds about 90-230 MB: a learner who opened every chapter runs out of a Binder
  session's 1-2 GB. ``install`` also sets JupyterLab's own culling
  (``MappingKernelManager.cull_*``) in the environment's Jupyter server config
  (``PREFIX/etc/jupyter/jupyter_server_config.json``, keeping any other setting there):
  a kernel idle for :data:`CULL_IDLE_SECONDS` with no tab open is stopped. ``make lab``
  and Binder's ``postBuild`` both run it. (The ``jupyter_server_config.d`` folder next to
  it only enables extensions; the server reads no other setting from there.)
"""

from __future__ import annotations

import argparse
import json
import secrets
import sys
import uuid
from pathlib import Path
from typing import Any

from jupyter_client import AsyncKernelManager, KernelManager
from jupyter_core.paths import jupyter_runtime_dir
from traitlets import HasTraits, default

from .forked_kernels import ForkingProvisioner, forking_enabled

KERNEL_CLASS = "course.stable_kernel.StableVersionKernel"
CONFIG_MARKER = "# course: kernels report language_info that is the same on every machine"
CONFIG_LINES = (
    f"{CONFIG_MARKER} (python -m course.jupyter_kernels install)\n"
    f"c.IPKernelApp.kernel_class = {KERNEL_CLASS!r}\n"
)


def ipc_connection_file() -> str:
    """A fresh connection file path in Jupyter's runtime folder (its sockets go beside it)."""
    runtime = Path(jupyter_runtime_dir())
    runtime.mkdir(mode=0o700, parents=True, exist_ok=True)
    return str(runtime / f"kernel-{secrets.token_hex(6)}.json")


class IpcDefaults(HasTraits):
    """The defaults both course kernel managers share: IPC transport, a fresh connection file.

    The connection file (and the sockets beside it) go to Jupyter's runtime folder under a
    fresh name, so parallel kernels never collide, and are removed when the kernel is shut
    down. Configuration (``--KernelManager.transport=tcp``) still overrides both defaults.

    It is a ``HasTraits`` class, not a plain mixin, because traitlets registers an
    ``@default`` handler only on a class built by its metaclass; and it comes first in the
    bases, because traitlets looks for a trait's default only in the classes that precede
    the one declaring the trait (jupyter_client's ``ConnectionFileMixin``) in the MRO.
    Either mistake silently leaves the TCP default in place.

    Kernels are forked from a zygote that imported ipykernel and LangGraph once
    (:mod:`course.forked_kernels`), each a new process as before; ``fork_kernels = False``
    on a manager (or ``COURSE_FORK_KERNELS=0``) starts them as fresh interpreters.
    """

    fork_kernels = True  # False: every kernel is a fresh interpreter (as everywhere with COURSE_FORK_KERNELS=0)

    async def _async_pre_start_kernel(self, **kw: Any) -> tuple[list[str], dict[str, Any]]:
        """As jupyter_client's, with :class:`~course.forked_kernels.ForkingProvisioner` for a kernel spec that
        names no provisioner of its own (jupyter_client would use its ``LocalProvisioner``)."""
        spec = self.kernel_spec
        if (self.provisioner is None and self.fork_kernels and forking_enabled() and spec is not None
                and "kernel_provisioner" not in spec.metadata):
            self.kernel_id = self.kernel_id or kw.pop("kernel_id", str(uuid.uuid4()))
            self.provisioner = ForkingProvisioner(kernel_id=self.kernel_id, kernel_spec=spec, parent=self)
        return await super()._async_pre_start_kernel(**kw)

    @default("transport")
    def _default_transport(self) -> str:
        return "ipc"

    @default("connection_file")
    def _default_connection_file(self) -> str:
        return ipc_connection_file()


class IpcKernelManager(IpcDefaults, AsyncKernelManager):
    """An nbclient-ready kernel manager whose kernel listens on Unix sockets, not TCP."""


class IpcBlockingKernelManager(IpcDefaults, KernelManager):
    """The same for blocking clients (nbval's)."""

CULL_IDLE_SECONDS = 20 * 60
# A kernel with an open tab is never culled (cull_connected False), nor one that is running
# a cell (cull_busy False): only a kernel nobody looks at, idle for 20 minutes, is stopped.
CULLING = {"MappingKernelManager": {"cull_idle_timeout": CULL_IDLE_SECONDS, "cull_interval": 60,
                                    "cull_connected": False, "cull_busy": False}}


def culling_config_path(prefix: str | Path = sys.prefix) -> Path:
    """The Jupyter server config file (of the environment at ``prefix``) that culls idle kernels."""
    return Path(prefix) / "etc" / "jupyter" / "jupyter_server_config.json"


def kernel_config_path(prefix: str | Path = sys.prefix) -> Path:
    """The ipykernel config file that kernels of the environment at ``prefix`` read."""
    return Path(prefix) / "etc" / "ipython" / "ipython_kernel_config.py"


def install(prefix: str | Path = sys.prefix) -> Path:
    """Make the environment's kernels :class:`~course.stable_kernel.StableVersionKernel`, and cull idle ones.

    Idempotent; returns the kernel config file's path.
    """
    path = kernel_config_path(prefix)
    path.parent.mkdir(parents=True, exist_ok=True)
    text = path.read_text() if path.exists() else ""
    if CONFIG_MARKER not in text:
        path.write_text(text + ("\n" if text and not text.endswith("\n") else "") + CONFIG_LINES)
    culling = culling_config_path(prefix)
    culling.parent.mkdir(parents=True, exist_ok=True)
    settings = json.loads(culling.read_text()) if culling.exists() else {}
    for section, values in CULLING.items():
        settings.setdefault(section, {}).update(values)
    culling.write_text(json.dumps(settings, indent=2, sort_keys=True) + "\n")
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("command", choices=["install"])
    parser.add_argument("--prefix", default=sys.prefix, help="environment to configure (default: this one)")
    args = parser.parse_args(argv)
    print(f"kernel config: {install(args.prefix)}; idle-kernel culling: {culling_config_path(args.prefix)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
