from enum import Enum
from typing import Dict, List, Optional
from pydantic import BaseModel
from sandbox.runners import CellRunResult, CommandRunResult, RunJupyterRequest  # noqa: F401


class RunCodeRequest(BaseModel):
    compile_timeout: float = 10
    run_timeout: float = 10
    memory_limit_MB: int = -1
    code: str
    stdin: Optional[str] = None
    language: str
    files: Dict[str, Optional[str]] = {}
    fetch_files: List[str] = []


class RunStatus(str, Enum):
    Success = 'Success'
    Failed = 'Failed'
    SandboxError = 'SandboxError'


class RunCodeResponse(BaseModel):
    status: RunStatus
    message: str
    compile_result: Optional[CommandRunResult] = None
    run_result: Optional[CommandRunResult] = None
    executor_pod_name: Optional[str] = None
    files: Dict[str, str] = {}


class RunJupyterResponse(BaseModel):
    status: RunStatus
    message: str
    driver: Optional[CommandRunResult] = None
    cells: List[CellRunResult] = []
    executor_pod_name: Optional[str] = None
    files: Dict[str, str] = {}
