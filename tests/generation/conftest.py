"""Generation-test fixtures: a real OpenAI-compatible HTTP server on 127.0.0.1 (http.server in a thread)."""
from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest


def pytest_configure(config):
    config.addinivalue_line("markers", "slow: real-model or large-data tests (run with -m slow)")
    config.addinivalue_line("markers", "llamacpp: needs llama-cpp-python and starts a local server")


class FakeOpenAIServer:
    """Speaks POST /v1/chat/completions and GET /v1/models.

    ``plan`` is a queue of actions for the next requests: an int HTTP status (error reply),
    ``("status", code, retry_after)``, or ``("sleep", seconds)`` (answer late, to trigger client timeouts).
    ``delay_s`` slows every reply (for concurrency checks); ``ignore_n`` answers with one choice like
    llama.cpp. Completions are deterministic: ``reply(body, index)``.
    """

    def __init__(self):
        self.plan: list = []
        self.bodies: list[dict] = []
        self.delay_s = 0.0
        self.ignore_n = False
        self.in_flight = self.max_in_flight = 0
        self.lock = threading.Lock()
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    @staticmethod
    def reply(body: dict, index: int) -> str:
        last = body["messages"][-1]["content"]
        return f"echo[{last}] seed={body.get('seed')} i={index}"

    def _handler(self):
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):  # keep pytest output clean
                pass

            def _send(self, code: int, payload: dict, headers: dict | None = None):
                data = json.dumps(payload).encode()
                try:
                    self.send_response(code)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    for k, v in (headers or {}).items():
                        self.send_header(k, v)
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass

            def do_GET(self):
                self._send(200, {"object": "list", "data": [{"id": "fake-model", "object": "model"}]})

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
                with server.lock:
                    server.bodies.append(body)
                    action = server.plan.pop(0) if server.plan else None
                    server.in_flight += 1
                    server.max_in_flight = max(server.max_in_flight, server.in_flight)
                try:
                    if server.delay_s:
                        time.sleep(server.delay_s)
                    if isinstance(action, int):
                        return self._send(action, {"error": {"message": f"injected {action}", "type": "x"}})
                    if isinstance(action, tuple) and action[0] == "status":
                        return self._send(action[1], {"error": {"message": "injected", "type": "x"}},
                                          {"Retry-After": str(action[2])})
                    if isinstance(action, tuple) and action[0] == "sleep":
                        time.sleep(action[1])
                    if self.path.rstrip("/") != "/v1/chat/completions":
                        return self._send(404, {"error": {"message": "not found", "type": "x"}})
                    n = 1 if server.ignore_n else int(body.get("n") or 1)
                    texts = [server.reply(body, i) for i in range(n)]
                    prompt_toks = sum(len(m["content"].split()) for m in body["messages"])
                    self._send(200, {
                        "id": "chatcmpl-fake", "object": "chat.completion", "created": 0,
                        "model": body.get("model"),
                        "choices": [{"index": i, "message": {"role": "assistant", "content": t},
                                     "finish_reason": "stop", "logprobs": None} for i, t in enumerate(texts)],
                        "usage": {"prompt_tokens": prompt_toks,
                                  "completion_tokens": sum(len(t.split()) for t in texts),
                                  "total_tokens": prompt_toks + sum(len(t.split()) for t in texts)}})
                finally:
                    with server.lock:
                        server.in_flight -= 1

        return Handler

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def fake_server():
    with FakeOpenAIServer() as srv:
        yield srv
