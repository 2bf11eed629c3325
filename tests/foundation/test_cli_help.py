"""`factory --help` lists every command once, grouped by purpose (#43: 31 commands in one flat list before)."""
from __future__ import annotations

import re
import subprocess
import sys



def _cli(*args):
    return subprocess.run([sys.executable, "-m", "factory.cli", *args], capture_output=True, text=True, timeout=120)


def test_help_groups_every_command_once_by_purpose():
    out = _cli("--help")
    assert out.returncode == 0, out.stderr
    # every command the parser knows: the list an unknown command's error gives
    commands = set(re.findall(r"'([a-z-]+)'", _cli("no-such-command").stderr.split("choose from", 1)[1]))
    assert len(commands) >= 30
    current, seen = None, {}
    for line in out.stdout.splitlines():
        head = re.match(r"^(\S[^:]*):$", line)
        if head:
            current = head.group(1)
            continue
        item = re.match(r"^  (\S+)\s{2,}\S", line)
        if item and item.group(1) in commands:
            assert item.group(1) not in seen, f"{item.group(1)} listed twice"
            seen[item.group(1)] = current
    assert set(seen) == commands, commands - set(seen)
    assert "other" not in seen.values()                       # cli.GROUPS names every command
    for purpose, members in (("build", "ingest"), ("inspect", "sql"), ("train", "train"), ("serve", "serve")):
        assert seen[members].startswith(purpose), (members, seen[members])
    assert len(set(seen.values())) >= 5


def test_a_mistyped_command_gets_the_closest():
    out = _cli("stauts")
    assert out.returncode == 2 and out.stderr.rstrip().endswith("did you mean 'status'?"), out.stderr
