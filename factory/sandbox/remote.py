"""Remote sandbox: the batch client of a `factory serve` verifier (`POST /v1/judge`), stdlib only: the reward functions
use it when ``FACTORY_VERIFIER_URL`` is set. 429/503 are retried after the server's Retry-After; a batch over the
server's body limit (413) is sent again in halves; a transport failure, a server error or an item the server could not
judge raises :class:`VerifierError` - never a 0 reward."""
from __future__ import annotations

import json
import time
import urllib.error
import urllib.request


class VerifierError(RuntimeError):
    """The verifier (not the candidate) failed: the caller must not score these completions."""


class _TooLarge(VerifierError):
    """413: the request body is over the server's --max-body-mb."""


class VerifierClient:
    def __init__(self, url: str, *, timeout: float = 900.0, chunk: int = 1024, max_wait_s: float = 300.0):
        self.url = url.rstrip("/").removesuffix("/v1/judge").removesuffix("/run_code")
        self.timeout, self.chunk, self.max_wait_s = timeout, chunk, max_wait_s

    def _post(self, path: str, body: dict) -> dict:
        data = json.dumps(body).encode()
        waited = 0.0
        while True:
            req = urllib.request.Request(self.url + path, data=data, method="POST",
                                         headers={"Content-Type": "application/json"})
            try:
                with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                    return json.loads(resp.read())
            except urllib.error.HTTPError as exc:
                detail = exc.read().decode("utf-8", "replace")[:500]
                if exc.code in (429, 503) and waited < self.max_wait_s:
                    delay = float(exc.headers.get("Retry-After") or 1)
                    time.sleep(delay)
                    waited += delay
                    continue
                if exc.code == 413:
                    raise _TooLarge(f"verifier {self.url}{path} answered 413: {detail}") from None
                raise VerifierError(f"verifier {self.url}{path} answered {exc.code}: {detail}") from None
            except (urllib.error.URLError, OSError, ValueError) as exc:
                raise VerifierError(f"verifier {self.url}{path} unreachable or cut off: {exc}") from None

    def judge(self, items: list[dict], *, limits: dict | None = None, binary: bool | None = None,
              exclude_in_process: bool = True) -> list[dict]:
        """One result per item (``reward``, ``rows``, ...), in order; items go in chunks of ``chunk``.
        ``binary=None``: each item is scored by its ground truth's reward spec (``reward.kind``, else soft)."""
        opts: dict = {"exclude_in_process": exclude_in_process}
        if binary is not None:   # else the server follows each ground truth's reward spec
            opts["binary"] = binary
        if limits:
            opts["limits"] = limits
        return [r for start in range(0, len(items), self.chunk)
                for r in self._judge_part(items[start:start + self.chunk], start, opts)]

    def _judge_part(self, part: list[dict], start: int, opts: dict) -> list:
        body = {"items": [{"id": str(start + i), **it} for i, it in enumerate(part)], **opts}
        try:
            answer = self._post("/v1/judge", body)
        except _TooLarge:
            if len(part) == 1:
                raise
            half = len(part) // 2   # over the server's body limit: two smaller requests
            return self._judge_part(part[:half], start, opts) + self._judge_part(part[half:], start + half, opts)
        results = answer.get("items") or []
        if len(results) != len(part):
            raise VerifierError(f"verifier returned {len(results)} results for {len(part)} items")
        for r in results:
            if r.get("error"):
                raise VerifierError(f"verifier could not judge item {r['id']}: {r['error']} "
                                    f"(request {answer.get('request_id')})")
        return results

    def rewards(self, completions: list[str], ground_truths: list, **kw) -> list[float]:
        items = [{"completion": c, "ground_truth": json.loads(g) if isinstance(g, str) else g}
                 for c, g in zip(completions, ground_truths)]
        return [float(r["reward"]) for r in self.judge(items, **kw)]
