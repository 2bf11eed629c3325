"""Shim: the response models of SandboxFusion's runner tests, written from its documented field list, so its
test files run unchanged against a live HTTP server (SFSUITE_URL)."""
from enum import Enum
from typing import Any, Dict, List, Optional
from pydantic import BaseModel, Field


class CommandRunStatus(str, Enum):
    Finished = 'Finished'
    Error = 'Error'
    TimeLimitExceeded = 'TimeLimitExceeded'


class CommandRunResult(BaseModel):
    status: CommandRunStatus
    execution_time: Optional[float] = None
    return_code: Optional[int] = None
    stdout: Optional[str] = None
    stderr: Optional[str] = None


class CellRunResult(BaseModel):
    stdout: str
    stderr: str
    display: List[Dict[str, Any]]
    error: List[Dict[str, Any]]


class RunJupyterRequest(BaseModel):
    cells: List[str]
    cell_timeout: float = 0
    total_timeout: float = 45
    memory_limit_MB: int = -1
    kernel: str = 'python3'
    files: Dict[str, str] = {}
    fetch_files: List[str] = []
