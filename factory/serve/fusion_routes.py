"""SandboxFusion's endpoints: ``POST /run_code`` (RunCodeRequest -> RunCodeResponse; verl's ``sandbox_fusion``
utility and the ``sandbox-fusion`` client call it unchanged) and ``POST /submit`` (SubmitRequest -> EvalResult,
tests from ``config.provided_data``)."""
from __future__ import annotations

import hashlib
import time

from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from factory.sandbox import Job

from .protocol import (BadRequest, _get, _positive, check_language, memory_field, parse_run_code,
                       program_from_completion, provided_truth, request_limits, run_code_response, score, verdict_rows)
from .routing import NotStarted, RetryPlaces, Service, error_response

START_MARGIN_S = 2.0        # a /run_code program must start this long before (its client's deadline - its run)


def routes(svc: Service, queue_timeout_s: float | None = None, client_retries: int = 2) -> list[Route]:
    """``queue_timeout_s``/``client_retries``: see :func:`factory.serve.app.create_app`."""
    engine, caps = svc.engine, svc.caps
    places = RetryPlaces()

    @svc.endpoint("run_code")
    async def run_code(request: Request, rid: str):
        arrived = time.monotonic()
        raw = await svc.read_body(request)
        body = await svc.read_json(request, raw)
        job, limits, client_wait = parse_run_code(body, engine, caps)
        budget = queue_timeout_s
        if budget is None:   # start early enough that even a program using its whole CPU limit answers in time
            run_s = engine.prefetch * (job.limits_for(limits).cpu_s + 1.0)
            budget = max(1.0, client_wait - run_s - START_MARGIN_S)
        key = hashlib.sha1(raw).hexdigest()
        priority, expired_before = places.take(key)
        priority = arrived if priority is None else priority
        # the client's last attempt gets no 504 (scored as an error): it waits, taken back if the client gives up
        deadline = arrived + budget if expired_before < client_retries else None
        try:
            ticket = (await svc.run_jobs([job], limits, request, deadline=deadline,
                                         priority=priority))[job.program_id]
        except NotStarted:
            places.keep(key, priority, expired_before + 1)   # the retry of this body starts where this one stood
            raise
        return JSONResponse(run_code_response(ticket, rid))

    @svc.endpoint("submit")
    async def submit(request: Request, rid: str):
        body = await svc.read_json(request, needs="")
        _get(body, "dataset", str, required=True)
        sub_id = _get(body, "id", (str, int), required=True)
        completion = _get(body, "completion", str, required=True)
        config = _get(body, "config", dict, required=True)
        lang = check_language(config, where="config.")
        for key in ("dataset_type", "locale"):
            _get(config, key, str, where="config.")
        _get(config, "is_fewshot", bool, where="config.")
        if _get(config, "custom_extract_logic", str, where="config."):
            raise BadRequest("field 'config.custom_extract_logic' is not supported by this verifier (it extracts "
                             "the code itself)", "config.custom_extract_logic")
        extra = _get(config, "extra", dict, default={}, where="config.")
        _get(extra, "entry_point", str, where="config.extra.")
        _positive(config.get("compile_timeout"), "config.compile_timeout", 3600.0, zero_ok=True)
        provided = config.get("provided_data")
        if provided is None:
            raise BadRequest("config.provided_data is required: this verifier judges the tests you send "
                             "(registered SandboxFusion datasets are not served)", "config.provided_data")
        if isinstance(provided, list):   # a list of problems: the one with this id
            match = [p for p in provided if isinstance(p, dict) and str(p.get("id")) == str(sub_id)]
            if not match:
                raise BadRequest(f"config.provided_data has no problem with id {sub_id!r}", "config.provided_data")
            provided = match[0]
        gt = provided_truth(provided, language=lang)   # a JSON string is read the same way
        tests, preamble, lang = gt.tests, gt.preamble, gt.language
        entry = extra.get("entry_point") or gt.entry_point
        limits = request_limits(engine, caps, cpu_s=config.get("run_timeout"),
                                memory_mb=memory_field(extra, "memory_limit_MB", caps),
                                where="config.", names=("run_timeout", "extra.memory_limit_MB"))
        wall = config.get("run_timeout") if caps.run_timeout_clock == "wall" else None   # checked just above
        code, status, kind = program_from_completion(completion, entry, tests, lang, gt.harness)
        base = {"id": sub_id, "extracted_code": code or "", "full_code": code, "test_code": None,
                "extracted_type": kind}
        if code is None:
            return JSONResponse({**base, "accepted": False, "tests": [],
                                 "extra": {"request_id": rid, "extraction": status}})
        job = Job("submit", code, tests, entry_point=entry, preamble=preamble, language=lang, wall_s=wall,
                  own_network=True)
        ticket = (await svc.run_jobs([job], limits, request))["submit"]
        if ticket.error or any(v.status == "infra_error" for v in ticket.verdicts):
            why = ticket.error or next(f"{v.error_type}: {v.error_message}" for v in ticket.verdicts
                                       if v.status == "infra_error")
            return error_response(503, f"verifier failed, not your code: {why}", rid, retry_after=2)
        rows = verdict_rows(ticket, str(sub_id))
        cases = []
        for row in rows:
            ok = row["status"] == "pass"
            exec_info = {"status": "Success" if ok else "Failed", "message": row["error_message"] or "",
                         "compile_result": None, "executor_pod_name": None, "files": {},
                         "run_result": {"status": "TimeLimitExceeded" if row["status"] == "timeout" else "Finished",
                                        "execution_time": (row["wall_ms"] or 0) / 1000, "return_code": 0 if ok else 1,
                                        "stdout": row["stdout"], "stderr": row["stderr"]}}
            cases.append({"passed": ok, "exec_info": exec_info, "test_info": {"test_id": row["test_id"],
                                                                              "status": row["status"]}})
        accepted = bool(rows) and all(c["passed"] for c in cases) and len(rows) == len(tests)
        return JSONResponse({**base, "accepted": accepted, "tests": cases,
                             "extra": {"request_id": rid, "infra_retries": ticket.infra_retries,
                                       "reward": score(rows, [t.test_id for t in tests], binary=gt.is_binary())}})

    return [Route("/run_code", run_code, methods=["POST"]), Route("/submit", submit, methods=["POST"])]
