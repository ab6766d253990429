"""Course kernels: quiet (IPC transport), a language_info that is the same on every machine,
and the throw-away `make lab` copy the browser test runs on."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import nbformat
import pytest
from ipykernel.ipkernel import IPythonKernel
from jupyter_core.paths import jupyter_runtime_dir
from nbclient import NotebookClient
from traitlets.config import Config

from course import jupyter_kernels, lab_session
from course.jupyter_kernels import IpcBlockingKernelManager, IpcKernelManager
from course.notebook_format import LANGUAGE_INFO, normalize
from course.stable_kernel import StableVersionKernel


def test_the_kernel_reports_exactly_what_the_build_stores():
    # JupyterLab marks a notebook modified unless the kernel's language_info deep-equals the stored one.
    assert StableVersionKernel.language_info == LANGUAGE_INFO
    assert {**IPythonKernel.language_info, "version": LANGUAGE_INFO["version"]} == LANGUAGE_INFO
    assert LANGUAGE_INFO["version"] == f"{sys.version_info.major}.{sys.version_info.minor}"
    assert normalize(nbformat.v4.new_notebook()).metadata["language_info"] == LANGUAGE_INFO


def test_install_adds_the_kernel_class_once_and_keeps_existing_config(tmp_path: Path):
    path = jupyter_kernels.kernel_config_path(tmp_path)
    path.parent.mkdir(parents=True)
    path.write_text("c.InteractiveShell.colors = 'nocolor'")
    assert jupyter_kernels.install(tmp_path) == path
    jupyter_kernels.install(tmp_path)
    text = path.read_text()
    assert text.startswith("c.InteractiveShell.colors = 'nocolor'\n")
    assert text.count(jupyter_kernels.KERNEL_CLASS) == 1


@pytest.mark.parametrize("manager_class", [IpcKernelManager, IpcBlockingKernelManager])
def test_both_kernel_managers_default_to_ipc_sockets_in_the_private_runtime_folder(manager_class):
    # Neither starts a kernel: the defaults are what nbclient (async) and nbval (blocking) get.
    first, second = manager_class(), manager_class()
    runtime = Path(jupyter_runtime_dir())
    assert (first.transport, second.transport) == ("ipc", "ipc")
    assert Path(first.connection_file).parent == runtime and first.ip.startswith(str(runtime))
    assert runtime.stat().st_mode & 0o077 == 0, "the sockets' folder is open to other users"
    assert first.connection_file != second.connection_file  # parallel kernels never share sockets
    assert manager_class(config=Config({"KernelManager": {"transport": "tcp"}})).transport == "tcp"


def test_an_ipc_kernel_runs_the_stable_kernel_and_leaves_no_files():
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(
        "k = get_ipython().kernel\nprint(type(k).__name__, k.language_info['version'])")])
    client = NotebookClient(nb, kernel_name="python3", kernel_manager_class=IpcKernelManager, timeout=60,
                            extra_arguments=[f"--IPKernelApp.kernel_class={jupyter_kernels.KERNEL_CLASS}"])
    with client.setup_kernel():
        assert client.km.transport == "ipc" and client.km.ip.startswith(jupyter_runtime_dir())
        stem = Path(client.km.connection_file).stem
        assert len([n for n in os.listdir(jupyter_runtime_dir()) if n.startswith(stem)]) == 6  # file + 5 sockets
        client.execute_cell(nb.cells[0], 0)
    assert nb.cells[0].outputs[0]["text"] == f"StableVersionKernel {LANGUAGE_INFO['version']}\n"
    assert not [n for n in os.listdir(jupyter_runtime_dir()) if n.startswith(stem)]  # connection file, sockets: gone


def test_the_lab_copy_leaves_out_the_virtualenv_and_keeps_file_times(tmp_path: Path):
    source = tmp_path / "course"
    for name in ("Makefile", "notebooks/00_x.ipynb", ".venv/bin/python", "helpers/__pycache__/x.pyc", "a.egg-info/P"):
        (source / name).parent.mkdir(parents=True, exist_ok=True)
        (source / name).write_text("x")
    os.utime(source / "Makefile", (1_000_000, 1_000_000))
    copy = lab_session.copy_course(source, tmp_path / "copy")
    copied = sorted(str(p.relative_to(copy)) for p in copy.rglob("*") if p.is_file())
    assert copied == ["Makefile", "notebooks/00_x.ipynb"]
    assert (copy / "Makefile").stat().st_mtime == 1_000_000  # make must not think requirements changed
    lab_session.write_lab_settings(tmp_path / "s", {"@jupyterlab/notebook-extension:tracker": {"a": 1}})
    assert (tmp_path / "s/@jupyterlab/notebook-extension/tracker.jupyterlab-settings").read_text() == '{"a": 1}'


def test_install_culls_idle_kernels_and_jupyter_server_reads_it(tmp_path: Path, monkeypatch):
    from jupyter_server.serverapp import ServerApp

    existing = jupyter_kernels.culling_config_path(tmp_path)
    existing.parent.mkdir(parents=True)
    existing.write_text('{"ServerApp": {"open_browser": false}}')
    jupyter_kernels.install(tmp_path)
    jupyter_kernels.install(tmp_path)  # idempotent
    monkeypatch.setenv("JUPYTER_CONFIG_PATH", str(tmp_path / "etc" / "jupyter"))  # searched first
    app = ServerApp()
    app.load_config_file()
    culling = app.config.MappingKernelManager
    assert culling.cull_idle_timeout == jupyter_kernels.CULL_IDLE_SECONDS == 20 * 60
    assert culling.cull_connected is False and culling.cull_busy is False and culling.cull_interval == 60
    assert app.config.ServerApp.open_browser is False  # the other settings stay


def test_make_lab_and_binder_both_install_the_culling_config():
    from course.layout import ROOT

    makefile = (ROOT / "Makefile").read_text()
    lab_recipe = makefile.split("\nlab:", 1)[1].split("\n\n", 1)[0]
    assert "-m course.jupyter_kernels install" in lab_recipe
    assert "python -m course.jupyter_kernels install" in (ROOT / "binder" / "postBuild").read_text()
