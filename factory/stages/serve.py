"""`factory serve`: the HTTP verifier for online RL (engine, protocol and app in factory.serve)."""
from __future__ import annotations

import sys


def register(sub, add_lake) -> None:
    """Add `serve` to the `factory` parser."""
    p = sub.add_parser("serve", help="HTTP verifier for online RL: SandboxFusion /run_code + /submit, batch /v1/judge")
    p.add_argument("--host", default="127.0.0.1", help="bind address (default loopback; 0.0.0.0 to expose)")
    p.add_argument("--port", type=int, default=8080)
    p.add_argument("--workers", type=int, help="sandbox workers (default: CPU count)")
    p.add_argument("--engine", choices=("local", "ray"), default="local",
                   help="ray: the sandboxes run on every node of a Ray cluster (one actor per node, all its CPUs); "
                        "this process only answers HTTP")
    p.add_argument("--ray-address", default="auto", help="with --engine ray: auto | ray://host:port | host:port")
    p.add_argument("--max-queue", type=int, default=4096, help="programs admitted at once; beyond: 429 + Retry-After")
    p.add_argument("--infra-retries", type=int, default=2, help="re-runs of a program hit by an infrastructure error")
    p.add_argument("--drain-s", type=float, default=30.0, help="on SIGTERM/SIGINT: seconds to finish in-flight work")
    p.add_argument("--cpu-s", type=float, default=10.0,
                   help="default CPU seconds per test (a request's run_timeout / limits.cpu_s overrides it)")
    p.add_argument("--memory-mb", type=int, default=1024, help="default memory limit per program")
    p.add_argument("--wall-factor", type=float, default=2.5,
                   help="wall-clock backstop = max(this x CPU limit, 5 s); CPU time decides timeouts")
    p.add_argument("--max-cpu-s", type=float, default=60.0, help="largest per-request CPU limit accepted")
    p.add_argument("--max-memory-mb", type=int, default=8192, help="largest per-request memory limit accepted")
    p.add_argument("--run-timeout-clock", choices=("wall", "cpu"), default="wall",
                   help="what SandboxFusion's run_timeout limits: wall (its meaning: wall-clock seconds; the CPU "
                        "budget stays beside it) or cpu (CPU seconds only: verdicts independent of the load)")
    p.add_argument("--max-items", type=int, default=4096, help="largest /v1/judge batch accepted")
    p.add_argument("--max-body-mb", type=float, default=8.0, help="largest request body accepted (beyond: 413)")
    p.add_argument("--queue-timeout-s", type=float, default=None,
                   help="/run_code: seconds a program may wait to start before a 504 (verl's client retries it, "
                        "keeping its place); default: from the request, compile_timeout + run_timeout + 10 s "
                        "(verl's client deadline) minus prefetch x (the run's CPU limit + 1 s) and 2 s")
    p.add_argument("--prefetch", type=int, default=1,
                   help="programs handed to the sandboxes per worker (1: only the running ones); the rest wait in "
                        "the server's queue, where a departed client's programs are removed before they run")
    p.add_argument("--client-retries", type=int, default=2,
                   help="/run_code: 504s a client retries (verl: 2, it makes 3 attempts); the same body's next "
                        "attempt after that many is not answered 504 but waits for its program")
    p.add_argument("--max-sessions", type=int, default=64,
                   help="interpreter sessions (/run_jupyter, /get_observation, /v1/sessions) live at once; beyond: "
                        "429 (0: no session endpoints)")
    p.add_argument("--session-cpu-s", type=float, default=10.0, help="CPU seconds per interpreter cell")
    p.add_argument("--session-memory-mb", type=int, default=512, help="memory of one interpreter session")
    p.add_argument("--session-idle-s", type=float, default=300.0,
                   help="an interpreter session unused this long is closed (its trajectory gets a fresh one)")
    p.set_defaults(fn=cmd_serve)
    q = sub.add_parser("sandbox-libs", help="install what SandboxFusion's image gives programs (javatuples jar, "
                                            "lodash, matplotlib), for `factory serve` to run them offline")
    q.add_argument("--only", nargs="+", choices=("java", "node", "python"), default=["java", "node", "python"],
                   help="install only these (default all)")
    q.set_defaults(fn=cmd_sandbox_libs)


def cmd_sandbox_libs(args) -> None:
    from factory.sandbox import libs
    libs.main(args.only)


def cmd_serve(args) -> None:
    from factory.serve.app import serve
    from factory.serve.protocol import Caps

    def ready(engine):
        where = f" on {engine.cluster.nodes} Ray nodes" if engine.cluster is not None else ""
        print(f"factory serve: http://{args.host}:{args.port}  ({engine.workers} sandbox workers{where}, queue bound "
              f"{engine.max_queue}); verl: reward.sandbox_fusion.url=http://{args.host}:{args.port}/run_code",
              file=sys.stderr, flush=True)
    caps = Caps(max_cpu_s=args.max_cpu_s, max_memory_mb=args.max_memory_mb, max_items=args.max_items,
                run_timeout_clock=args.run_timeout_clock)
    from factory.sandbox import Limits

    limits = Limits(cpu_s=args.cpu_s, memory_mb=args.memory_mb, wall_factor=args.wall_factor, wall_min_s=5.0,
                    capture_bytes=1 << 16)
    if args.engine == "ray":
        try:
            import ray  # noqa: F401
        except ImportError:
            from factory.errors import FactoryError
            raise FactoryError("--engine ray needs Ray: pip install 'code-rl-factory[scale]' (or any ray>=2.40)") \
                from None
    failed = serve(args.host, args.port, args.workers, max_queue=args.max_queue, infra_retries=args.infra_retries,
                   drain_s=args.drain_s, caps=caps, base_limits=limits, on_ready=ready,
                   ray_address=args.ray_address if args.engine == "ray" else None, max_body_mb=args.max_body_mb,
                   queue_timeout_s=args.queue_timeout_s, prefetch=args.prefetch, client_retries=args.client_retries,
                   sessions=None if args.max_sessions <= 0 else {
                       "max_sessions": args.max_sessions, "cpu_s_per_call": args.session_cpu_s,
                       "memory_mb": args.session_memory_mb, "idle_timeout_s": args.session_idle_s})
    print(f"factory serve: stopped ({failed} in-flight programs failed explicitly at shutdown)", file=sys.stderr)
