"""The saver the Agent Server of chapter 16 loads: ``langgraph.json`` names it by import path.

``"checkpointer": {"backend": "custom", "path": "helpers.server_checkpointer:folder_checkpointer"}``
makes the server call :func:`folder_checkpointer` once per event loop and use what it
yields instead of its own persistence. The folder comes from the environment variable
:data:`ROOT_ENV`, which the chapter sets for the server's process.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from .folder_saver import FolderSaver

ROOT_ENV = "COURSE_FOLDER_SAVER_ROOT"


@asynccontextmanager
async def folder_checkpointer() -> AsyncIterator[FolderSaver]:
    """Yield a :class:`~helpers.folder_saver.FolderSaver` on the folder named by ``$COURSE_FOLDER_SAVER_ROOT``."""
    yield FolderSaver(os.environ[ROOT_ENV])
