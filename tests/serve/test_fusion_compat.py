"""SandboxFusion's request semantics, over real HTTP against a live `factory serve` (the behaviours its own runner
suite checks, tested here with this project's own programs): memory_limit_MB -1 means no limit (the server's
cap), run_timeout is wall-clock in every language (and the response says which limit fired), each run has a
working loopback of its own that no other run and not the host can reach, `files` are placed beside the
program (bounded), `fetch_files` come back (only what the run wrote, bounded), Java runs with assertions on, and
a Jupyter cell that draws a plot returns image/png display data."""
from __future__ import annotations

import base64
import json
import socket
import threading
import time

import pytest

from factory.sandbox import languages

from tests.netutil import free_port
from tests.serve.conftest import post

CANON = {"python": "python", "cpp": "cpp", "java": "java", "nodejs": "javascript", "rust": "rust"}
LANGS = [pytest.param(lang, marks=pytest.mark.skipif(
    lang != "python" and languages.toolchain(CANON[lang]) is None,
    reason=languages.missing_message(CANON[lang]) if lang != "python" else "")) for lang in CANON]

SLEEP_1S = {
    "python": "import time\ntime.sleep(1.0)\nprint('woke')",
    "cpp": "#include <unistd.h>\n#include <cstdio>\nint main(){ usleep(1000000); puts(\"woke\"); }",
    "java": "public class Nap { public static void main(String[] a) throws Exception { Thread.sleep(1000); "
            "System.out.println(\"woke\"); } }",
    "nodejs": "setTimeout(() => console.log('woke'), 1000);",
    "rust": "fn main(){ std::thread::sleep(std::time::Duration::from_millis(1000)); println!(\"woke\"); }",
}


def run_code(server, **body) -> dict:
    body.setdefault("compile_timeout", 30)
    code, _, answer = post(server.url + "/run_code", body)
    assert code == 200, answer
    return answer


@pytest.mark.parametrize("lang", LANGS)
def test_run_timeout_is_wall_clock_in_every_language(server, lang):
    """A program that sleeps 1 s uses almost no CPU: under run_timeout 0.5 it is still TimeLimitExceeded (the
    wall clock fired, and the response says so); under 5 s it finishes."""
    slow = run_code(server, language=lang, code=SLEEP_1S[lang], run_timeout=0.5)
    assert slow["status"] == "Failed" and slow["run_result"]["status"] == "TimeLimitExceeded", slow
    assert slow["factory"]["limit"] == "wall" and "wall clock" in slow["message"], slow
    assert slow["run_result"]["execution_time"] < 3.0, slow
    ok = run_code(server, language=lang, code=SLEEP_1S[lang], run_timeout=5)
    assert ok["status"] == "Success" and ok["run_result"]["stdout"].strip() == "woke", ok


def test_cpu_budget_still_guards_beside_the_wall_clock(server):
    """The CPU budget is the factory's own guard: a busy loop is stopped (at run_timeout of wall clock at the
    latest), and the response names the limit that fired (wall or cpu, whichever came first)."""
    busy = run_code(server, language="python", code="while True:\n    pass", run_timeout=1)
    assert busy["run_result"]["status"] == "TimeLimitExceeded" and busy["factory"]["limit"] in ("wall", "cpu")
    assert busy["run_result"]["execution_time"] < 4.0, busy


def test_memory_limit_minus_one_is_no_limit_within_the_servers_cap(server):
    """SandboxFusion's default memory_limit_MB=-1 means "no limit": accepted, and a program may use more than the
    server's default per-program limit (1024 MB here); an explicit small limit still stops it."""
    hog = "x = bytearray(1200 * 1024 * 1024)\nfor i in range(0, len(x), 4096):\n    x[i] = 1\nprint(len(x) >> 20)"
    free = run_code(server, language="python", code=hog, memory_limit_MB=-1, run_timeout=20)
    assert free["status"] == "Success" and free["run_result"]["stdout"].strip() == "1200", free
    capped = run_code(server, language="python", code=hog, memory_limit_MB=256, run_timeout=20)
    assert capped["status"] == "Failed" and capped["factory"]["status"] == "memory_limit", capped
    for bad in (-2, 0):
        code, _, answer = post(server.url + "/run_code", {"language": "python", "code": "print(1)",
                                                          "memory_limit_MB": bad})
        assert code == 400 and answer["field"] == "memory_limit_MB", answer


SERVE_AND_CONNECT = """
import socket, threading
srv = socket.create_server(({host!r}, {port}), family=socket.AF_INET6 if ":" in {host!r} else socket.AF_INET)
def answer():
    conn, _ = srv.accept()
    conn.sendall(b"pong " + conn.recv(64))
    conn.close()
threading.Thread(target=answer, daemon=True).start()
c = socket.create_connection(({host!r}, {port}), timeout=5)
c.sendall(b"ping")
print(c.recv(64).decode())
"""

LISTEN_THEN_WAIT = """
import socket, time
srv = socket.socket()
srv.bind(("127.0.0.1", {port}))
srv.listen(4)
print("listening", flush=True)
time.sleep({hold})
"""

TRY_CONNECT = """
import socket
try:
    socket.create_connection(("127.0.0.1", {port}), timeout=2)
    print("reached")
except OSError as exc:
    print("refused", type(exc).__name__)
"""


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost", "::1"])
def test_a_run_serves_and_connects_on_its_own_loopback(server, host):
    got = run_code(server, language="python", code=SERVE_AND_CONNECT.format(host=host, port=free_port()),
                   run_timeout=10)
    assert got["status"] == "Success" and got["run_result"]["stdout"].strip() == "pong ping", got


def test_two_runs_on_the_same_port_do_not_collide(server):
    port = free_port()
    results = []
    threads = [threading.Thread(target=lambda: results.append(run_code(
        server, language="python", code=SERVE_AND_CONNECT.format(host="127.0.0.1", port=port) +
        "\nimport time\ntime.sleep(1)", run_timeout=10))) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert [r["run_result"]["stdout"].strip() for r in results] == ["pong ping"] * 2, results


def test_a_runs_loopback_is_unreachable_from_other_runs_and_the_host(server):
    """While one run listens on a port, another run connecting to that port on 127.0.0.1 is refused, and so is
    the host (the server's own machine)."""
    port = free_port()
    holder = {}
    t = threading.Thread(target=lambda: holder.update(run_code(
        server, language="python", code=LISTEN_THEN_WAIT.format(port=port, hold=4), run_timeout=8)))
    t.start()
    time.sleep(1.5)   # the listener has started (its run takes 4 s)
    other = run_code(server, language="python", code=TRY_CONNECT.format(port=port), run_timeout=5)
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
    t.join()
    assert holder["run_result"]["stdout"].strip() == "listening", holder
    assert other["run_result"]["stdout"].startswith("refused"), other


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


READ_FILE = {
    "python": "print(open('data/in/numbers.txt').read().split()[1])",
    "cpp": "#include <fstream>\n#include <iostream>\nint main(){ std::ifstream f(\"data/in/numbers.txt\"); int a, b; "
           "f >> a >> b; std::cout << b << std::endl; }",
    "java": "import java.nio.file.*;\npublic class R { public static void main(String[] a) throws Exception { "
            "System.out.println(Files.readString(Path.of(\"data/in/numbers.txt\")).trim().split(\" \")[1]); } }",
    "nodejs": "console.log(require('fs').readFileSync('data/in/numbers.txt', 'utf8').split(' ')[1].trim())",
    "rust": "fn main(){ let s = std::fs::read_to_string(\"data/in/numbers.txt\").unwrap(); "
            "println!(\"{}\", s.split_whitespace().nth(1).unwrap()); }",
}


@pytest.mark.parametrize("lang", LANGS)
def test_files_are_placed_beside_the_program(server, lang):
    got = run_code(server, language=lang, code=READ_FILE[lang], run_timeout=10,
                   files={"data/in/numbers.txt": b64(b"17 4242\n"), "skipped.txt": None})
    assert got["status"] == "Success" and got["run_result"]["stdout"].strip() == "4242", got


def test_files_are_the_runs_own_and_bounded(server):
    first = run_code(server, language="python", code="import os\nopen('secret.txt').read()\nprint(os.listdir('.'))",
                     files={"secret.txt": b64(b"s3cr3t")}, run_timeout=5)
    assert first["status"] == "Success" and "secret.txt" in first["run_result"]["stdout"], first
    for _ in range(3):   # whichever worker runs it: no file of an earlier run is there
        later = run_code(server, language="python", code="import os\nprint(os.path.exists('secret.txt'))",
                         run_timeout=5)
        assert later["run_result"]["stdout"].strip() == "False", later
    for path in ("../escape.txt", "/etc/passwd", "a/../../b", ".prog/main", ""):
        code, _, answer = post(server.url + "/run_code", {"language": "python", "code": "print(1)",
                                                          "files": {path: b64(b"x")}})
        assert code == 400 and answer["field"] == "files" and "relative" in answer["error"], (path, answer)
    code, _, answer = post(server.url + "/run_code", {"language": "python", "code": "print(1)",
                                                      "files": {"a.txt": "not base64!"}})
    assert code == 400 and answer["field"] == "files" and "base64" in answer["error"], answer
    many = {f"f{i}.txt": b64(b"") for i in range(300)}
    code, _, answer = post(server.url + "/run_code", {"language": "python", "code": "print(1)", "files": many})
    assert code == 400 and "at most 256" in answer["error"], answer


def fetched(answer: dict) -> dict:
    return {p: base64.b64decode(b) for p, b in answer["files"].items()}


def test_fetch_files_returns_what_the_run_wrote(server):
    """SandboxFusion's own case (a relative path and /mnt/b) plus /tmp/..., a nested file and every byte value come
    back base64; a file the run did not write is absent (as in SandboxFusion) and factory.fetch_errors says so."""
    code = ("import os\nopen('a.txt', 'w').write('secret'); open('/mnt/b', 'w').write('sauce')\n"
            "os.makedirs('d/e'); open('d/e/bin', 'wb').write(bytes(range(256)))\nprint(os.getcwd())")
    ok = run_code(server, language="python", code=code, run_timeout=5,
                  fetch_files=["a.txt", "/mnt/b", "/tmp/a.txt", "./d/e/bin", "nope.txt"])
    assert ok["status"] == "Success" and ok["run_result"]["stdout"] == "/tmp\n", ok
    assert fetched(ok) == {"a.txt": b"secret", "/mnt/b": b"sauce", "/tmp/a.txt": b"secret",
                           "./d/e/bin": bytes(range(256))}, ok
    assert ok["factory"]["fetch_errors"] == {"nope.txt": "no such file"} and ok["message"] == "", ok
    ok = run_code(server, language="python", code="print(1)", fetch_files=[])   # the default (empty) is fine
    assert ok["status"] == "Success" and ok["files"] == {}


def test_fetch_files_never_returns_anything_from_outside(server):
    """A symlink to a host file or directory, a hard link to one, a FIFO, a directory: refused at run time, nothing
    of the host in the answer; an absolute host path, '..' or the compiled artifact's directory: a 400 up front."""
    host = open("/etc/passwd").read()
    code = ("import os\nos.symlink('/etc/passwd', 'link'); os.symlink('/etc', 'etc'); os.symlink('/mnt', 'm')\n"
            "os.mkfifo('fifo'); os.mkdir('dir')\n"
            "try:\n    os.link('/etc/passwd', 'hard')\nexcept OSError as e:\n    print(type(e).__name__)\n")
    paths = ["link", "etc/passwd", "etc/hostname", "m/b", "fifo", "dir", "hard", "/tmp/link"]
    answer = run_code(server, language="python", code=code, run_timeout=5, fetch_files=paths)
    assert answer["status"] == "Success", answer
    assert answer["files"] == {} and set(answer["factory"]["fetch_errors"]) == set(paths), answer
    errors = answer["factory"]["fetch_errors"]
    assert "links are not followed" in errors["link"] and "links are not followed" in errors["etc/passwd"], errors
    assert "not a regular file" in errors["fifo"] and "not a regular file" in errors["dir"], errors
    assert "fetch_files 'link'" in answer["message"], answer
    first_line = host.splitlines()[0]
    assert first_line not in json.dumps(answer), answer
    for bad in ("/etc/hostname", "/etc/passwd", "/proc/self/environ", "../etc/passwd", "a/../../etc/passwd", "/mnt",
                "/tmp/.prog/main", "", 5, "/work/main/README.md"):
        status, _, refused = post(server.url + "/run_code", {"language": "python", "code": "print(1)",
                                                             "fetch_files": ["a.txt", bad]})
        assert status == 400 and refused["field"] == "fetch_files" and "fetch_files[1]" in refused["error"], refused
    status, _, refused = post(server.url + "/run_code", {"language": "python", "code": "print(1)",
                                                         "fetch_files": [f"f{i}" for i in range(257)]})
    assert status == 400 and "at most 256" in refused["error"], refused


def test_fetch_files_are_bounded(server):
    """At most 16 MiB come back together: a file that would go past it is absent and the message names the cap;
    the files before it are returned whole."""
    code = "open('ten', 'wb').write(b'1' * (10 << 20)); open('seven', 'wb').write(b'7' * (7 << 20))"
    answer = run_code(server, language="python", code=code, run_timeout=10, fetch_files=["ten", "seven"])
    assert answer["status"] == "Success", answer["message"]
    assert fetched(answer) == {"ten": b"1" * (10 << 20)}, sorted(answer["files"])
    assert "16 MiB" in answer["factory"]["fetch_errors"]["seven"] and "16 MiB" in answer["message"], answer["message"]


def test_fetch_files_see_only_their_own_run(server):
    """A run never gets another run's files: not those of one running at the same time (the other worker) nor of
    one before it on the same worker (each run's /tmp and /mnt are its own tmpfs)."""
    writer = ("import time\nopen('shared.txt', 'w').write('other run'); open('/mnt/shared', 'w').write('other run')\n"
              "print('written', flush=True)\ntime.sleep(2)")
    box = {}
    t = threading.Thread(target=lambda: box.update(w=run_code(server, language="python", code=writer, run_timeout=5,
                                                              fetch_files=["shared.txt"])))
    t.start()
    time.sleep(0.7)
    answers = [run_code(server, language="python", code="print(1)", fetch_files=["shared.txt", "/mnt/shared"])
               for _ in range(4)]
    t.join()
    assert fetched(box["w"]) == {"shared.txt": b"other run"}, box
    answers += [run_code(server, language="python", code="print(1)", fetch_files=["shared.txt", "/mnt/shared"])
                for _ in range(4)]
    for a in answers:
        assert a["files"] == {} and set(a["factory"]["fetch_errors"].values()) == {"no such file"}, a


LIBS_MISSING = "run `factory sandbox-libs` (the libraries of SandboxFusion's image)"


@pytest.mark.skipif(not (languages.toolchain("java") or {}).get("jars"), reason=LIBS_MISSING)
def test_java_finds_the_javatuples_jar(server):
    code = ("import org.javatuples.Pair;\npublic class Main { public static void main(String[] a) { "
            "System.out.println(Pair.with(\"apple\", 1).getValue1()); } }")
    ok = run_code(server, language="java", code=code, run_timeout=10)
    assert ok["status"] == "Success" and ok["run_result"]["stdout"] == "1\n", ok


@pytest.mark.skipif(not (languages.toolchain("javascript") or {}).get("node_path"), reason=LIBS_MISSING)
def test_node_finds_lodash_read_only(server):
    """require('lodash') resolves through NODE_PATH to the bound sandbox-libs directory, which no program can
    change."""
    code = ("const _ = require('lodash'); const fs = require('fs');\n"
            "try { fs.writeFileSync(require.resolve('lodash'), 'x'); console.log('wrote'); }"
            " catch (e) { console.log(e.code); }\nconsole.log(_.chunk([1, 2, 3], 2).length);")
    ok = run_code(server, language="nodejs", code=code, run_timeout=10)
    assert ok["status"] == "Success" and ok["run_result"]["stdout"] == "EROFS\n2\n", ok


@pytest.mark.skipif(not ((languages.toolchain("java") or {}).get("jars")
                         and (languages.toolchain("javascript") or {}).get("node_path")), reason=LIBS_MISSING)
def test_sandbox_libs_again_installs_nothing():
    """`factory sandbox-libs` where everything is there: exit 0, no apt-get / npm / pip run."""
    import subprocess
    import sys
    out = subprocess.run([sys.executable, "-m", "factory.cli", "sandbox-libs"], capture_output=True, text=True)
    assert out.returncode == 0 and "  $ " not in out.stdout and "javatuples.jar" in out.stdout, out


@pytest.mark.skipif(languages.toolchain("java") is None, reason=languages.missing_message("java"))
def test_java_runs_with_assertions_on(server):
    failed = run_code(server, language="java", code="public class Main { public static void main(String[] a) { "
                                                    "assert 1 == 2 : \"one is not two\"; } }")
    assert failed["status"] == "Failed" and "AssertionError" in failed["run_result"]["stderr"], failed
    assert "one is not two" in failed["run_result"]["stderr"]


def test_jupyter_plot_html_and_display_come_back_as_display_data(server):
    cells = ["import matplotlib.pyplot as plt",
             "plt.plot([1, 2, 3], [1, 4, 9])\nplt.title('squares')\nplt.show()\nprint('after show')",
             "fig, ax = plt.subplots()\nax.bar([1, 2], [3, 4])",                      # drawn, not shown: flushed
             "class T:\n    def _repr_html_(self):\n        return '<b>bold</b>'\n    def __repr__(self):\n"
             "        return 'T()'\nT()",
             "display(T(), 42)\n'last'"]
    code, _, got = post(server.url + "/run_jupyter", {"cells": cells})
    assert code == 200 and got["status"] == "Success", got
    c = got["cells"]
    assert c[0]["display"] == [] and c[1]["stdout"] == "after show\n", c[1]["stderr"]
    png = base64.b64decode(c[1]["display"][0]["image/png"])
    assert png.startswith(b"\x89PNG\r\n\x1a\n") and len(png) > 1000
    assert c[1]["display"][0]["text/plain"].startswith("<Figure size")
    kinds = [sorted(d) for d in c[2]["display"]]
    assert kinds[-1] == ["image/png", "text/plain"], kinds                 # the bar chart, at the cell's end
    assert c[3]["display"] == [{"text/plain": "T()", "text/html": "<b>bold</b>"}]
    assert c[4]["display"] == [{"text/plain": "T()", "text/html": "<b>bold</b>"}, {"text/plain": "42"},
                               {"text/plain": "'last'"}]
    assert not any(cell["stderr"] for cell in c), [cell["stderr"] for cell in c]
    json.dumps(got)


def test_ping_and_dataset_endpoints(server):
    import urllib.request
    with urllib.request.urlopen(server.url + "/v1/ping", timeout=10) as r:
        assert json.loads(r.read()) == "pong"
    for path in ("/list_datasets", "/get_prompts", "/get_prompt_by_id", "/get_metrics"):
        code, _, answer = post(server.url + path, {"dataset": "humaneval_python"})
        assert code == 501 and "provided_data" in answer["error"], (path, answer)


@pytest.mark.skipif(languages.toolchain("cpp") is None, reason=languages.missing_message("cpp"))
def test_submit_a_multipl_e_row_runs_its_harness(server):
    """/submit with a MultiPL-E row as provided_data (SandboxFusion's MultiPL-E data sets send these): the
    continuation goes between the prompt and the harness; accepted iff the harness exits 0; the verdict is
    judged in the program's process, so the factory reward leaves it out."""
    from tests.sandbox.test_harness_languages import RIGHT, ROWS, WRONG
    row = ROWS["cpp"]
    for completion, accepted in ((RIGHT["cpp"], True), (WRONG["cpp"], False)):
        code, _, got = post(server.url + "/submit", {"dataset": "multiple_cpp", "id": row["name"],
                                                     "completion": completion,
                                                     "config": {"language": "cpp", "provided_data": row}})
        assert code == 200 and got["accepted"] is accepted, got
        assert got["extracted_type"] == "continuation" and got["full_code"].startswith(row["prompt"])
        assert got["extra"]["reward"] == 0.0   # judged in-process: not a reward


def test_run_timeout_clock_cpu_keeps_cpu_only_limits():
    """`factory serve --run-timeout-clock cpu`: run_timeout is CPU seconds only (verdicts that do not depend on
    the machine's load): a program sleeping 1 s under run_timeout 0.5 finishes; a busy loop does not."""
    from tests.serve.conftest import Server
    s = Server("--workers", "1", "--run-timeout-clock", "cpu")
    try:
        nap = run_code(s, language="python", code=SLEEP_1S["python"], run_timeout=0.5)
        assert nap["status"] == "Success" and nap["run_result"]["stdout"].strip() == "woke", nap
        busy = run_code(s, language="python", code="while True:\n    pass", run_timeout=0.5)
        assert busy["run_result"]["status"] == "TimeLimitExceeded" and busy["factory"]["limit"] == "cpu", busy
    finally:
        s.stop()
