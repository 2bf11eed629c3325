"""Shim: an ASGI app that forwards every request to the live server at $SFSUITE_URL (real HTTP)."""
import os
import httpx

URL = os.environ["SFSUITE_URL"]


async def app(scope, receive, send):
    if scope["type"] != "http":
        return
    body = b""
    while True:
        msg = await receive()
        body += msg.get("body", b"")
        if not msg.get("more_body"):
            break
    async with httpx.AsyncClient(timeout=300, trust_env=False) as c:
        r = await c.request(scope["method"], URL + scope["path"], content=body,
                            headers={"content-type": "application/json"})
    await send({"type": "http.response.start", "status": r.status_code,
                "headers": [(b"content-type", b"application/json")]})
    await send({"type": "http.response.body", "body": r.content})
