"""The native batch endpoint ``POST /v1/judge``: many (program or completion, tests) in one request; per item the
``silver.executions`` rows and the reward; ``"stream": true`` answers NDJSON, one line per finished item."""
from __future__ import annotations

import json

from starlette.requests import Request
from starlette.responses import JSONResponse, StreamingResponse
from starlette.routing import Route

from factory.sandbox import Job

from .engine import Ticket
from .protocol import (BadRequest, _get, _positive, program_from_completion, provided_truth, request_limits,
                       score, verdict_rows)
from .routing import Service


def parse_items(svc: Service, body) -> tuple[list, list[dict], object, dict]:
    """(jobs, per-item meta, limits, options) of a /v1/judge body; BadRequest names the field."""
    engine, caps = svc.engine, svc.caps
    if not isinstance(body, dict):
        raise BadRequest("request body must be a JSON object with 'items'", None)
    items = _get(body, "items", list, required=True)
    if len(items) > caps.max_items:
        raise BadRequest(f"{len(items)} items is over this server's batch cap of {caps.max_items}; split it",
                         "items", 413)
    lim = _get(body, "limits", dict, default={})
    limits = request_limits(engine, caps, cpu_s=lim.get("cpu_s"), memory_mb=lim.get("memory_mb"),
                            output_bytes=lim.get("max_output_bytes"), where="limits.")
    _get(body, "stream", bool)
    # binary absent: each item is scored by its ground truth's reward spec ("reward": {"kind": ...}, else soft)
    opts = {"exclude_in_process": _get(body, "exclude_in_process", bool, default=True),
            "binary": _get(body, "binary", bool)}
    jobs, meta = [], []
    for i, item in enumerate(items):
        where = f"items[{i}]."
        if not isinstance(item, dict):
            raise BadRequest(f"items[{i}] must be an object", f"items[{i}]")
        item_id = str(_get(item, "id", (str, int), default=i, where=where))
        truth = _get(item, "ground_truth", (dict, str), where=where)
        if truth is None and "tests" in item:
            truth = {k: item[k] for k in ("tests", "entry_point", "test_preamble") if k in item}
        if truth is None:
            raise BadRequest(f"missing required field '{where}ground_truth' (or '{where}tests')",
                             f"{where}ground_truth")
        # read once: its tests, a MultiPL-E harness (a MultiPL-E row, or factory tests whose one test is a harness:
        # the candidate built from the completion as /submit and factory.reward build it), language, reward spec
        gt = provided_truth(truth, where=f"{where}ground_truth")
        tests, entry, row, lang = gt.tests, gt.entry_point, gt.harness, gt.language
        if item.get("code") is not None:
            code, status = _get(item, "code", str, where=where), "given"
        elif item.get("completion") is None:
            raise BadRequest(f"missing required field '{where}code' (or '{where}completion')", f"{where}code")
        else:
            completion = _get(item, "completion", str, required=True, where=where)
            code, status, _ = program_from_completion(completion, entry, tests, lang, row)
        meta.append({"id": item_id, "extraction": status, "test_ids": [t.test_id for t in tests],
                     "binary": gt.is_binary(opts["binary"])})
        # this problem's calibrated limit (silver.time_limits): the item's, else the exported ground truth's
        # (as factory.reward uses it in process); capped by the server
        cpu_s = _positive(item["cpu_s"] if item.get("cpu_s") is not None else gt.cpu_s, f"{where}cpu_s", caps.max_cpu_s)
        if code is not None and tests:
            jobs.append(Job(f"{i}", code, tests, entry_point=entry, preamble=gt.preamble, cpu_s=cpu_s, language=lang))
    return jobs, meta, limits, opts


def item_result(m: dict, ticket: Ticket | None, opts: dict) -> dict:
    out = {"id": m["id"], "extraction": m["extraction"], "tests": len(m["test_ids"])}
    if ticket is None:
        return {**out, "reward": 0.0, "passed": False, "rows": [], "infra_retries": 0, "error": None}
    rows = verdict_rows(ticket, m["id"])
    infra = [r for r in rows if r["status"] == "infra_error"]
    error = ticket.error or (f"infra_error after {ticket.infra_retries} retries: {infra[0]['error_type']}: "
                             f"{infra[0]['error_message']}" if infra else None)
    reward = None if error else score(rows, m["test_ids"], opts["exclude_in_process"], m["binary"])
    return {**out, "reward": reward, "passed": reward == 1.0 if reward is not None else None, "rows": rows,
            "infra_retries": ticket.infra_retries, "error": error}


def routes(svc: Service) -> list[Route]:
    @svc.endpoint("judge")
    async def judge(request: Request, rid: str):
        body = await svc.read_json(request)
        jobs, meta, limits, opts = parse_items(svc, body)
        if not body.get("stream"):
            done = await svc.run_jobs(jobs, limits, request)
            results = [item_result(m, done.get(str(i)), opts) for i, m in enumerate(meta)]
            return JSONResponse({"request_id": rid, "items": results})
        running = svc.start_jobs(jobs, limits)
        queued = {j.program_id for j in jobs}

        async def lines():
            sent = 0
            for i, m in enumerate(meta):   # unextractable items answer at once
                if str(i) not in queued:
                    sent += 1
                    yield json.dumps({"type": "item", "index": i, **item_result(m, None, opts)}) + "\n"
            # Starlette cancels this generator when the client disconnects: Running takes the rest back
            async for pid, t in running.results():
                i = int(pid)
                sent += 1
                yield json.dumps({"type": "item", "index": i, **item_result(meta[i], t, opts)}) + "\n"
            yield json.dumps({"type": "end", "request_id": rid, "items": sent}) + "\n"

        return StreamingResponse(lines(), media_type="application/x-ndjson", headers={"X-Request-ID": rid})

    return [Route("/v1/judge", judge, methods=["POST"])]
