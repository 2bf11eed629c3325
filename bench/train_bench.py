"""Training micro-benchmarks: RM step time (ours vs TRL RewardTrainer) and RL loss / GRPO step throughput.

    python bench/train_bench.py                       # tiny models, CPU
    python bench/train_bench.py --rm-model smollm2 --rl-model smollm2 --device cuda
    python bench/train_bench.py --export-arch .gpu/smollm2-arch   # then, where the GGUF cannot travel (a GPU box):
    python bench/train_bench.py --rm-model smollm2 --rl-model smollm2 --arch .gpu/smollm2-arch --device cuda

Prints a table and writes bench/results/train_bench.json.
"""
from __future__ import annotations

import platform
import statistics
import tempfile
import time
from pathlib import Path

import torch

from harness import parser, timed, write  # noqa: I001  (first: the repository on sys.path)

from factory_train.rl import get_policy_loss_fn  # noqa: E402
from factory_train.rl.loop import grpo_loop  # noqa: E402
from factory_train.rm import load_reward_model, train_rm  # noqa: E402
from factory_train.rm.trainer import tokenize_pairs  # noqa: E402


def make_pairs(n: int) -> list[dict]:
    bodies = (f"def solve_{i}(xs):\n    total = 0\n    for x in xs:\n        total += x * {i % 7 + 1}\n"
              for i in range(n))
    return [{"prompt": f"Write solve_{i}(xs) returning the weighted sum.\n", "chosen": body + "    return total\n",
             "rejected": body + "    return None\n"} for i, body in enumerate(bodies)]


def _arch(arch_dir: str, head: str):
    """Model with the architecture in ``arch_dir`` (config.json + tokenizer) and random weights: step time does
    not depend on weight values, so a machine the weights cannot reach still measures the real model's shapes."""
    from transformers import AutoConfig, AutoModelForCausalLM, AutoModelForSequenceClassification, AutoTokenizer
    cfg = AutoConfig.from_pretrained(arch_dir)
    tok = AutoTokenizer.from_pretrained(arch_dir)
    torch.manual_seed(0)
    if head == "rm":
        cfg.num_labels = 1
        return AutoModelForSequenceClassification.from_config(cfg, dtype=torch.float32), tok
    return AutoModelForCausalLM.from_config(cfg, dtype=torch.float32), tok


def bench_rm_ours(model, tok, pairs_path, steps, batch_size, max_length):
    res = train_rm(pairs_path, model=model, tokenizer=tok, out_dir=tempfile.mkdtemp(), epochs=100,
                   max_steps=steps, batch_size=batch_size, max_length=max_length, lr=1e-5, eval_fraction=0.0,
                   save=False, overlong="truncate")
    times = [h["step_time_s"] for h in res["history"] if h["split"] == "train"][1:]  # drop warm-up step
    return statistics.median(times), len(times)


def bench_rm_trl(model, tok, rows, steps, batch_size, max_length, device):
    try:
        import trl
        from datasets import Dataset
        from transformers import TrainerCallback
    except ImportError as e:  # pragma: no cover
        return None, f"trl unavailable: {e}"
    # same token budget as ours: TRL drops over-length pairs, so pre-filter rows that fit
    keep = [r for r, t in zip(rows, tokenize_pairs(rows, tok, 10 ** 9))
            if max(len(t["chosen"]), len(t["rejected"])) <= max_length]
    times: list[float] = []

    class Timer(TrainerCallback):
        def on_step_begin(self, *a, **k):
            self.t = time.perf_counter()

        def on_step_end(self, *a, **k):
            times.append(time.perf_counter() - self.t)

    args = trl.RewardConfig(output_dir=tempfile.mkdtemp(), bf16=False, gradient_checkpointing=False,
                            use_cpu=device == "cpu", report_to="none", max_length=max_length, max_steps=steps,
                            per_device_train_batch_size=batch_size, learning_rate=1e-5, logging_steps=10 ** 6,
                            save_strategy="no", lr_scheduler_type="constant", dataloader_num_workers=0,
                            disable_tqdm=True)
    trainer = trl.RewardTrainer(model=model, args=args, processing_class=tok, train_dataset=Dataset.from_list(keep),
                                callbacks=[Timer()])
    trainer.train()
    return statistics.median(times[1:]), f"trl {trl.__version__}, {len(times) - 1} timed steps"


def bench_losses(device, B=64, T=1024, reps=20):
    torch.manual_seed(0)
    old = torch.randn(B, T, device=device) * 0.1 - 2
    adv = torch.randn(B, 1, device=device).expand(B, T).contiguous()
    mask = (torch.rand(B, T, device=device) > 0.1).float()
    out = {}
    for name in ("vanilla", "gppo", "cispo"):
        fn = get_policy_loss_fn(name)
        for mode in ("token-mean", "seq-mean-token-mean"):
            new = (old + 0.2 * torch.randn_like(old)).requires_grad_(True)
            fn(old, new, adv, mask, mode)[0].backward()  # warm-up
            t = time.perf_counter()
            for _ in range(reps):
                new.grad = None
                loss, _ = fn(old, new, adv, mask, mode)
                loss.backward()
            if device == "cuda":
                torch.cuda.synchronize()
            dt = (time.perf_counter() - t) / reps
            out[f"{name}/{mode}"] = {"ms_per_fwd_bwd": dt * 1e3, "mtokens_per_s": B * T / dt / 1e6}
    return out


def _letters(completions, rows):
    return [sum(c.isascii() and c.isalpha() for c in t) / max(len(t), 1) for t in completions]


def bench_grpo(rl_model, device, steps, n, max_new_tokens, arch_dir=None):
    t = time.perf_counter()
    if arch_dir:
        policy, tok = _arch(arch_dir, "lm")
        if tok.pad_token is None:
            tok.pad_token = tok.eos_token
    elif rl_model == "tiny":
        from factory_train.tiny import tiny_causal_lm
        policy, tok = tiny_causal_lm(hidden_size=64)
    else:
        from transformers import AutoModelForCausalLM, AutoTokenizer

        from factory_train.rm.model import smollm2_gguf_path, strip_gguf_quantizer
        g = smollm2_gguf_path()
        tok = AutoTokenizer.from_pretrained(str(g.parent), gguf_file=g.name)
        policy = strip_gguf_quantizer(AutoModelForCausalLM.from_pretrained(str(g.parent), gguf_file=g.name,
                                                                           dtype=torch.float32))
    policy.to(device)
    load_s = time.perf_counter() - t
    prompts = [{"prompt": [{"role": "user", "content": f"Write a Python function that adds {i}."}]} for i in range(4)]
    hist = grpo_loop(policy, tok, prompts, _letters, n=n, steps=steps, lr=1e-6, prompts_per_step=2,
                     max_new_tokens=max_new_tokens, loss_mode="gppo", seed=0)
    steady = hist[1:] or hist
    tokens = [h["response_length"] * n * 2 for h in steady]
    step_s = [h["step_time_s"] for h in steady]
    return {"model": rl_model, "load_s": load_s, "step_s": statistics.median(step_s),
            "gen_s": statistics.median(h["gen_time_s"] for h in steady),
            "update_s": statistics.median(h["step_time_s"] - h["gen_time_s"] for h in steady),
            "response_tokens_per_s": sum(tokens) / sum(step_s), "rollouts_per_step": 2 * n}


def export_arch(out: str) -> None:
    """SmolLM2-135M's architecture (config.json + tokenizer) for ``--arch`` where the 98 MB GGUF cannot go."""
    from transformers import AutoConfig, AutoTokenizer

    from factory_train.rm.model import smollm2_gguf_path
    g = smollm2_gguf_path()
    AutoTokenizer.from_pretrained(str(g.parent), gguf_file=g.name).save_pretrained(out)
    AutoConfig.from_pretrained(str(g.parent), gguf_file=g.name).save_pretrained(out)
    print(f"wrote {out}")


def main(argv=None):
    ap = parser(__doc__, "train_bench.json", {"--rm-steps": 6, "--rm-batch": 4, "--rm-max-length": 256, "--rl-steps": 3,
                                              "--rl-n": 4, "--rl-max-new-tokens": 32})
    ap.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    ap.add_argument("--rm-model", default="tiny", help="tiny | smollm2 | HF dir | .gguf")
    ap.add_argument("--rl-model", default="tiny", choices=["tiny", "smollm2"])
    ap.add_argument("--threads", type=int, default=None,
                    help="torch CPU threads (use 1 on a shared/oversubscribed box for stable timings)")
    ap.add_argument("--no-trl", action="store_true")
    ap.add_argument("--arch", default=None, help="dir with config.json + tokenizer: that architecture with random "
                    "weights for both RM and policy (written by --export-arch; for machines without the weights)")
    ap.add_argument("--export-arch", metavar="DIR", help="write SmolLM2-135M's config + tokenizer (~3 MB, no "
                    "weights) to DIR and exit")
    a = ap.parse_args(argv)
    if a.export_arch:
        return export_arch(a.export_arch)
    torch.manual_seed(0)
    if a.threads:
        torch.set_num_threads(a.threads)
    result = {"device": a.device, "torch": torch.__version__, "threads": torch.get_num_threads(),
              "machine": platform.machine(), "gpu": torch.cuda.get_device_name(0) if a.device == "cuda" else None}

    import pyarrow as pa
    import pyarrow.parquet as pq
    rows = make_pairs(max(64, a.rm_steps * a.rm_batch + 8))
    pairs_path = Path(tempfile.mkdtemp()) / "pairs.parquet"
    pq.write_table(pa.Table.from_pylist(rows), pairs_path)
    load_s, (model, tok) = timed(load_reward_model, *(_arch(a.arch, "rm") if a.arch else (a.rm_model, None)),
                                 device=a.device)
    ours_s, n_ours = bench_rm_ours(model, tok, pairs_path, a.rm_steps + 1, a.rm_batch, a.rm_max_length)
    rm = {"model": a.rm_model, "load_s": load_s, "batch_pairs": a.rm_batch, "max_length": a.rm_max_length,
          "params": sum(p.numel() for p in model.parameters()), "ours_step_s": ours_s}
    if not a.no_trl:
        trl_s, note = bench_rm_trl(model, tok, rows, a.rm_steps + 1, a.rm_batch, a.rm_max_length, a.device)
        rm.update(trl_step_s=trl_s, trl_note=note, trl_over_ours=(trl_s / ours_s) if trl_s else None)
    result["rm"] = rm
    del model
    result["rl_losses"] = bench_losses(a.device)
    result["grpo"] = bench_grpo(a.rl_model, a.device, a.rl_steps + 1, a.rl_n, a.rl_max_new_tokens, a.arch)
    if a.arch:
        result["rm"]["model"] = result["grpo"]["model"] = f"{a.rm_model} architecture ({a.arch}), random weights"

    print(f"device={a.device} torch={torch.__version__} threads={result['threads']}")
    print(f"\nRM ({a.rm_model}, {rm['params'] / 1e6:.1f}M params, batch {a.rm_batch} pairs, max_len {a.rm_max_length})")
    print(f"  {'ours step':<22}{ours_s:9.3f} s")
    if rm.get("trl_step_s"):
        print(f"  {'TRL RewardTrainer step':<22}{rm['trl_step_s']:9.3f} s   (TRL/ours {rm['trl_over_ours']:.2f}x)")
    print("\nRL loss fwd+bwd (B=64, T=1024)")
    for k, v in result["rl_losses"].items():
        print(f"  {k:<32}{v['ms_per_fwd_bwd']:8.2f} ms {v['mtokens_per_s']:8.1f} Mtok/s")
    g = result["grpo"]
    print(f"\nGRPO step ({g['model']}, {g['rollouts_per_step']} rollouts x <= {a.rl_max_new_tokens} tokens)")
    print(f"  step {g['step_s']:.2f} s = gen {g['gen_s']:.2f} s + update {g['update_s']:.2f} s;"
          f" {g['response_tokens_per_s']:.1f} response tok/s")
    write(a.out, result)
    return result


if __name__ == "__main__":
    main()
