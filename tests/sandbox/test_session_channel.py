"""A session cell that writes a deeply nested JSON frame into its reply channel: a channel error, never the host's end."""
from __future__ import annotations

from factory.sandbox.session import InterpreterSession


def test_a_deeply_nested_forged_reply_is_a_channel_error_and_the_session_goes_on():
    with InterpreterSession(cpu_s_per_call=5) as s:
        r = s.run("import os\nd = b'[' * 200000 + b']' * 200000\nos.write(4, len(d).to_bytes(4, 'big') + d)")
        assert r.status == "error" and "ChannelError" in r.error, r
        assert s.run("6 * 7").result == "42"
