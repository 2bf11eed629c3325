"""`factory serve` beside SandboxFusion's own server (bytedance/SandboxFusion, run locally from its source).

    python bench/peer_sandboxfusion.py --setup          # idempotent: extract the source, build its venv
    python bench/peer_sandboxfusion.py [--rounds 2] [--source GIT_DIR]

Setup: SandboxFusion's source (``git archive`` of ``--source``, the ``fetch`` mirror) goes under
~/.cache/factory/peer-sandboxfusion/src and a venv of its own with its poetry.lock's versions of its server
dependencies under .../venv (SandboxFusion's python runner activates a conda env "sandbox-runtime": an empty
``condabin`` folder in the venv makes its conda lookup find the venv, so programs run on the venv's Python).
Its ``sandbox.server.server:app`` runs under uvicorn with its *local* config: **isolation none** - each program is
a plain subprocess of the server (no namespaces, no cgroup, no seccomp, the host's network and files). The
factory isolates every run (own PID/mount/network namespaces, a cgroup, a fresh tmpfs, seccomp). Both servers
listen on loopback ports and get the same SandboxFusion ``/run_code`` bodies:

1. agreement: ~150 programs in Python, C++, Java, Node.js and Rust (correct, wrong answer, runtime error,
   timeout, compile error, large output); per program the status, return code and stdout of both, and each
   disagreement with its reason;
2. speed: short Python programs at concurrency 1, 8 and 32 and C++ at 4, the two servers in alternating rounds
   (A/B/B/A...) so the machine's load falls on both alike; requests/s and p50/p99 latency per server.
Writes bench/results/peer_sandboxfusion.json and .png."""
from __future__ import annotations

import http.client
import json
import os
import shutil
import statistics
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from harness import ROOT, parser, table, timed, write, machine  # noqa: I001  (first: the repository on sys.path)

from tests.netutil import free_port  # noqa: E402

PEER = Path.home() / ".cache" / "factory" / "peer-sandboxfusion"
MIRROR = Path("/work/.mirror/bytedance+SandboxFusion/repo")
PINS = ["pydantic==2.6.4", "pydantic-core==2.16.3", "fastapi==0.103.2", "starlette==0.27.0",
        "uvicorn[standard]==0.25.0", "structlog==23.3.0", "psutil==5.9.8", "aiofiles==23.2.1", "aiohttp==3.10.6",
        "tenacity==8.5.0", "databases[aiomysql,aiosqlite]==0.9.0", "sqlalchemy==2.0.35", "pyyaml==6.0.2",
        # imported at start-up by its dataset registry (sandbox.datasets.repobench_p); no torch needed
        "transformers==4.45.0", "tokenizers==0.20.0", "huggingface-hub==0.25.1"]


def setup(source: Path) -> tuple[Path, Path, str]:
    """(source dir, venv python, commit), extracting / building only what is missing or stale."""
    git = ["git", "--git-dir", str(source)]
    commit = subprocess.run(git + ["rev-parse", "HEAD"], check=True, capture_output=True, text=True).stdout.strip()
    src, venv = PEER / "src", PEER / "venv"
    if not (src / ".commit").exists() or (src / ".commit").read_text() != commit:
        shutil.rmtree(src, ignore_errors=True)
        src.mkdir(parents=True)
        archive = subprocess.Popen(git + ["archive", commit], stdout=subprocess.PIPE)
        subprocess.run(["tar", "-x", "-C", str(src)], stdin=archive.stdout, check=True)
        archive.wait()
        (src / "docs" / "build").mkdir(parents=True, exist_ok=True)   # its server mounts the built doc site
        (src / ".commit").write_text(commit)
    if not (venv / ".pins").exists() or (venv / ".pins").read_text() != "\n".join(PINS):
        shutil.rmtree(venv, ignore_errors=True)
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        subprocess.run([str(venv / "bin" / "pip"), "install", "-q", *PINS], check=True)
        (venv / "condabin").mkdir()
        (venv / ".pins").write_text("\n".join(PINS))
    return src, venv / "bin" / "python", commit


def start(cmd: list[str], cwd: Path, env: dict, port: int) -> subprocess.Popen:
    proc = subprocess.Popen(cmd, cwd=cwd, env={**os.environ, **env}, stdout=subprocess.DEVNULL,
                            stderr=open(PEER / f"server-{port}.log", "w"))
    for _ in range(240):
        try:
            if post_json(port, "/v1/ping", None, "GET")[0] == 200:
                return proc
        except OSError:
            time.sleep(0.5)
    proc.kill()
    raise RuntimeError(f"{cmd[:4]} did not answer on port {port}: see {PEER}/server-{port}.log")


_conns = threading.local()


def post_json(port: int, path: str, body, method: str = "POST") -> tuple[int, object]:
    """One request on this thread's keep-alive connection to ``port``."""
    conns = _conns.__dict__.setdefault("by_port", {})
    for attempt in (0, 1):
        conn = conns.get(port) or conns.setdefault(port, http.client.HTTPConnection("127.0.0.1", port, timeout=120))
        try:
            conn.request(method, path, body=None if body is None else json.dumps(body),
                         headers={"Content-Type": "application/json"})
            r = conn.getresponse()
            return r.status, json.loads(r.read() or b"null")
        except (http.client.HTTPException, ConnectionError):
            conn.close()
            conns.pop(port, None)
            if attempt:
                raise


# ---- the programs: name, language, kind, code, stdin, expected stdout, run_timeout -------------------------

def programs() -> list[dict]:
    """5 variants x 6 kinds x 5 languages. ``n`` varies the input; WA adds 1; RE exits with a code or crashes;
    TLE busy-loops or sleeps (run_timeout 1 s); CE does not compile (Python/Node: a syntax error); OUT prints
    n lines for n from 10k to 400k (49 KiB to 2.6 MiB)."""
    src = {  # per language: (read n and print the sum of squares + {d}, exit {k}, crash, busy loop, sleep,
        #                   compile error, print 0..n-1 one per line)
        "python": ("n=int(input())\nprint(sum(i*i for i in range(n))+{d})", "import sys\nsys.exit({k})",
                   "print(1//(int(input())*0))", "while True: pass", "import time\ntime.sleep(30)",
                   "print(int(input())", "import sys\nn=int(input())\nsys.stdout.write(''.join(f'{{i}}\\n' for i in range(n)))"),
        "cpp": ("#include <iostream>\nint main(){{long long n,s=0;std::cin>>n;for(long long i=0;i<n;i++)s+=i*i;"
                "std::cout<<s+{d}<<std::endl;}}", "int main(){{return {k};}}",
                "#include <cstdlib>\nint main(){{std::abort();}}", "int main(){{volatile int x=0;while(1)x++;}}",
                "#include <unistd.h>\nint main(){{sleep(30);}}", "int main(){{return undefined_name;}}",
                "#include <cstdio>\nint main(){{int n;scanf(\"%d\",&n);for(int i=0;i<n;i++)printf(\"%d\\n\",i);}}"),
        "java": ("import java.util.*;\npublic class Main{{public static void main(String[] a){{long n=new Scanner("
                 "System.in).nextLong(),s=0;for(long i=0;i<n;i++)s+=i*i;System.out.println(s+{d});}}}}",
                 "public class Main{{public static void main(String[] a){{System.exit({k});}}}}",
                 "public class Main{{public static void main(String[] a){{int[] x=new int[1];x[2]=1;}}}}",
                 "public class Main{{public static void main(String[] a){{while(true){{}}}}}}",
                 "public class Main{{public static void main(String[] a)throws Exception{{Thread.sleep(30000);}}}}",
                 "public class Main{{public static void main(String[] a){{int x=\"s\";}}}}",
                 "import java.util.*;\npublic class Main{{public static void main(String[] a){{int n=new Scanner("
                 "System.in).nextInt();StringBuilder b=new StringBuilder();for(int i=0;i<n;i++)b.append(i).append("
                 "'\\n');System.out.print(b);}}}}"),
        "nodejs": ("const n=BigInt(require('fs').readFileSync(0,'utf8').trim());let s=0n;for(let i=0n;i<n;i++)"
                   "s+=i*i;console.log(String(s+{d}n))", "process.exit({k})",
                   "null.x", "while(true){{}}", "setTimeout(()=>{{}},30000)", "console.log((1+)",
                   "const n=+require('fs').readFileSync(0,'utf8');let o=[];for(let i=0;i<n;i++)o.push(i);"
                   "process.stdout.write(o.join('\\n')+'\\n')"),
        "rust": ("use std::io::*;\nfn main(){{let mut s=String::new();stdin().read_line(&mut s).unwrap();let n:u64="
                 "s.trim().parse().unwrap();let t:u64=(0..n).map(|i|i*i).sum();println!(\"{{}}\",t+{d});}}",
                 "fn main(){{std::process::exit({k});}}", "fn main(){{let v:Vec<u8>=vec![];println!(\"{{}}\",v[1]);}}",
                 "fn main(){{let mut x:u64=0;loop{{x=std::hint::black_box(x+1);}}}}",
                 "fn main(){{std::thread::sleep(std::time::Duration::from_secs(30));}}",
                 "fn main(){{let x:u32=\"s\";}}",
                 "use std::io::*;\nfn main(){{let mut s=String::new();stdin().read_line(&mut s).unwrap();let n:u32=s.trim()"
                 ".parse().unwrap();let mut o=BufWriter::new(stdout().lock());for i in 0..n{{writeln!(o,\"{{}}\",i)"
                 ".unwrap();}}}}"),
    }
    out, lines = [], (10_000, 30_000, 60_000, 150_000, 400_000)
    for lang, (ok, code_k, crash, busy, sleep, ce, big) in src.items():
        for v in range(5):
            n = 10 ** (v + 1)
            want = str(sum(i * i for i in range(n)))
            out += [dict(kind="correct", code=ok.format(d=0), stdin=str(n), expected=want),
                    dict(kind="wrong", code=ok.format(d=1), stdin=str(n), expected=want),
                    dict(kind="runtime_error", code=(crash if v == 4 else code_k).format(k=v + 2), stdin="1"),
                    dict(kind="timeout", code=(busy if v % 2 == 0 else sleep).format(), stdin="", run_timeout=1),
                    dict(kind="compile_error", code=ce.format(), stdin=""),
                    dict(kind="large_output", code=big.format(), stdin=str(lines[v]),
                         expected="".join(f"{i}\n" for i in range(lines[v])).strip())]
            for p in out[-6:]:
                p.update(language=lang, name=f"{lang}/{p['kind']}/{v}")
    return out


def outcome(resp: dict) -> dict:
    """What a judge reads from a RunCodeResponse: status, compile/run status, return code, stdout."""
    run, comp = resp.get("run_result") or {}, resp.get("compile_result") or {}
    return {"status": resp.get("status"), "compile_rc": comp.get("return_code"), "run_status": run.get("status"),
            "return_code": run.get("return_code"), "stdout": run.get("stdout")}


def verdict(o: dict, p: dict) -> str:
    if o["status"] == "SandboxError":
        return "sandbox_error"
    if o["compile_rc"] not in (None, 0):
        return "CE"
    if o["run_status"] == "TimeLimitExceeded":
        return "TLE"
    if o["status"] != "Success":
        return "RE"
    if "expected" in p:
        return "AC" if (o["stdout"] or "").strip() == p["expected"] else "WA"
    return "OK"


def reason(p: dict, a: dict, b: dict) -> str:
    """Why SandboxFusion (a) and the factory (b) differ on program ``p`` (the cases this set meets)."""
    if p["kind"] == "large_output" and len(a["stdout"] or "") < len(b["stdout"] or ""):
        why = ("SandboxFusion reads a program's stdout only after it exits, and its asyncio reader stops reading "
               "the pipe once it holds over 128 KiB: ")
        if a["run_status"] == "TimeLimitExceeded":
            return why + "a program writing more than that + the pipe's 64 KiB blocks until run_timeout"
        return why + f"it returns the {len(a['stdout'])} bytes buffered at exit, the rest is lost"
    return "unexplained"


def brief(o: dict) -> str:
    return f"{o['status']}, {o['run_status']}, rc {o['return_code']}, stdout {len(o['stdout'] or '')} B"


def agreement(ports: dict, progs: list[dict], workers: int = 4) -> tuple[list[dict], list[dict]]:
    answers = {}
    for name, port in ports.items():   # one server at a time: timeouts are measured on an equal machine
        with ThreadPoolExecutor(workers) as ex:
            answers[name] = list(ex.map(lambda p: post_json(port, "/run_code", {
                "code": p["code"], "language": p["language"], "stdin": p["stdin"], "compile_timeout": 30,
                "run_timeout": p.get("run_timeout", 10)}), progs))
    rows, diffs = {}, []
    for i, p in enumerate(progs):
        (sa, ra), (sb, rb) = answers["sandboxfusion"][i], answers["factory"][i]
        a, b = outcome(ra if sa == 200 else {"status": f"HTTP {sa}"}), outcome(rb if sb == 200 else {"status": f"HTTP {sb}"})
        va, vb = verdict(a, p), verdict(b, p)
        fields = [f for f in ("status", "run_status", "return_code", "stdout", "compile_rc") if a[f] != b[f]]
        if p["kind"] == "compile_error" or a["run_status"] == b["run_status"] == "TimeLimitExceeded":
            fields = [f for f in fields if f != "stdout"]   # compilers' text / partial output of a killed run
        r = rows.setdefault((p["language"], p["kind"]), {"language": p["language"], "kind": p["kind"], "programs": 0,
                                                          "verdict_agree": 0, "all_fields_agree": 0, "verdicts": {}})
        r["programs"] += 1
        r["verdicts"][f"{va}/{vb}"] = r["verdicts"].get(f"{va}/{vb}", 0) + 1
        r["verdict_agree"] += va == vb
        r["all_fields_agree"] += not fields
        if fields:
            diffs.append({"program": p["name"], "fields": " ".join(fields), "sandboxfusion": brief(a),
                          "factory": brief(b), "verdicts": f"{va} / {vb}", "reason": reason(p, a, b)})
    for r in rows.values():   # SandboxFusion/factory verdict pairs: AC, WA, RE, TLE, CE, OK (ran, exit 0)
        r["verdicts"] = ", ".join(f"{k} x{n}" for k, n in r["verdicts"].items())
    return list(rows.values()), diffs


# ---- speed: alternating rounds ---------------------------------------------------------------------------

SPEED = [("python", 1, 60), ("python", 8, 200), ("python", 32, 400), ("cpp", 4, 40)]   # language, concurrency, requests
SHORT = {"python": "print(sum(range(1000)))",
         "cpp": "#include <cstdio>\nint main(){int s=0;for(int i=0;i<1000;i++)s+=i;printf(\"%d\\n\",s);}"}


def burst(port: int, lang: str, conc: int, n: int) -> tuple[float, list[float], int]:
    """(wall s, per-request latencies, failures) of n requests, conc in flight."""
    req = {"code": SHORT[lang], "language": lang, "run_timeout": 10, "compile_timeout": 30}

    def one(_):
        t, (s, r) = timed(post_json, port, "/run_code", req)
        return t, s == 200 and r["status"] == "Success" and r["run_result"]["stdout"].strip() == "499500"
    with ThreadPoolExecutor(conc) as ex:
        list(ex.map(one, range(conc)))          # warm the connections (not timed)
        wall, res = timed(lambda: list(ex.map(one, range(n))))
    return wall, [r[0] for r in res], sum(not r[1] for r in res)


def speed(ports: dict, rounds: int) -> list[dict]:
    out = []
    for lang, conc, n in SPEED:
        acc = {name: {"wall": 0.0, "lat": [], "failed": 0, "n": 0} for name in ports}
        loads = []
        for r in range(rounds):
            order = list(ports) if r % 2 == 0 else list(ports)[::-1]
            for name in order:
                for key, value in zip(("wall", "lat", "failed", "n"), (*burst(ports[name], lang, conc, n), n)):
                    acc[name][key] += value   # the wall seconds, latencies, failures and requests of each burst
            loads.append(os.getloadavg()[0])
        row = {"language": lang, "concurrency": conc, "requests": n * rounds, "load_avg_1m": round(max(loads), 2)}
        for name, a in acc.items():
            q = statistics.quantiles(a["lat"], n=100)
            row.update({f"{name}_rps": round(a["n"] / a["wall"], 1),
                        f"{name}_p50_ms": round(1000 * statistics.median(a["lat"]), 1),
                        f"{name}_p99_ms": round(1000 * q[98], 1), f"{name}_failed": a["failed"]})
        row["ratio"] = round(row["factory_rps"] / row["sandboxfusion_rps"], 2)
        print(f"{lang} at {conc}: {row['ratio']}x", flush=True)
        out.append(row)
    print(table(out))
    return out


def plot(rows: list[dict], path: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 4))
    labels = [f"{r['language']} c={r['concurrency']}" for r in rows]
    x = range(len(rows))
    for k, (name, color) in enumerate([("sandboxfusion", "tab:gray"), ("factory", "tab:blue")]):
        ax1.bar([i + 0.4 * k for i in x], [r[f"{name}_rps"] for r in rows], 0.4, label=name, color=color)
        ax2.bar([i + 0.4 * k for i in x], [r[f"{name}_p50_ms"] for r in rows], 0.4, color=color)
        ax2.scatter([i + 0.4 * k for i in x], [r[f"{name}_p99_ms"] for r in rows], color="k", marker="_", s=200)
    for ax, title in ((ax1, "requests/s"), (ax2, "latency ms: p50 bars, p99 ticks")):
        ax.set_xticks([i + 0.2 for i in x], labels)
        ax.set_title(title)
    ax2.set_yscale("log")
    ax1.legend()
    fig.suptitle("/run_code: factory serve (isolated) vs SandboxFusion (isolation none), 2-core shared host")
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    print(f"wrote {path}")


def main() -> None:
    ap = parser(__doc__, "peer_sandboxfusion.json")
    ap.add_argument("--setup", action="store_true", help="only extract the source and build the venv")
    ap.add_argument("--source", type=Path, default=MIRROR, help="SandboxFusion's git directory")
    ap.add_argument("--rounds", type=int, default=4, help="rounds per server and level (alternating order)")
    ap.add_argument("--workers", type=int, default=os.cpu_count(), help="factory serve --workers")
    ap.add_argument("--parts", nargs="+", default=["agreement", "speed"], choices=["agreement", "speed"])
    args = ap.parse_args()
    src, py, commit = setup(args.source)
    print(f"SandboxFusion {commit[:7]} at {src}, venv {py.parent.parent}")
    if args.setup:
        return
    ports = {"sandboxfusion": free_port(), "factory": free_port()}
    procs = [start([str(py), "-m", "uvicorn", "sandbox.server.server:app", "--host", "127.0.0.1", "--port",
                    str(ports["sandboxfusion"]), "--log-level", "warning"], src, {"SANDBOX_CONFIG": "local"},
                   ports["sandboxfusion"]),
             start([sys.executable, "-m", "factory.cli", "serve", "--port", str(ports["factory"]), "--workers",
                    str(args.workers)], ROOT, {}, ports["factory"])]
    print("SandboxFusion: config local, isolation none (programs are plain subprocesses of its server); "
          f"factory serve: --workers {args.workers}, every run isolated (namespaces, cgroup, tmpfs, seccomp)")
    result = {"machine": machine(), "sandboxfusion_commit": commit, "sandboxfusion_isolation": "none (config local)",
              "factory_isolation": "per run: PID/mount/network namespaces, cgroup, tmpfs, seccomp",
              "factory_workers": args.workers, "pins": PINS}
    try:
        if "agreement" in args.parts:
            wall, (rows, diffs) = timed(lambda: agreement(ports, programs()))
            result.update(agreement=rows, disagreements=diffs, agreement_wall_s=round(wall, 1))
            print(table(rows))
            print(table(diffs) if diffs else "no disagreements")
        if "speed" in args.parts:
            result["speed"] = speed(ports, args.rounds)
        result["machine_after"] = machine()
    finally:
        for proc in procs:
            proc.terminate()
            proc.wait(30)
    print("load average before / after:", result["machine"]["load_avg"], result["machine_after"]["load_avg"])
    write(args.out, result)
    if "speed" in result:
        plot(result["speed"], Path(args.out).with_suffix(".png"))


if __name__ == "__main__":
    main()
