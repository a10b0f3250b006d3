#!/usr/bin/env python3
"""A nanoGPT-style GPT trained with PyTorch whose attention and LayerNorm are
the fa library's kernels (fa.attention, fa.layer_norm), or PyTorch's, chosen
by flags, so that the two can be compared step by step on the same data.

The model is bench/train_pytorch.py's (and `fa-run train`'s): byte tokens
(vocab 256), learned positions, pre-LayerNorm blocks (eps 1e-5) with causal
self-attention through a fused QKV linear with bias, an output projection, a
4C MLP with tanh-GELU, a final LayerNorm and a head tied to the token
embedding; GPT-2 init. Training: bf16 autocast over fp32 weights, AdamW
(betas 0.9/0.99, weight decay 0.1 on 2-D parameters), gradient clipping 1.0,
linear warm-up then cosine decay.

The initial weights and the order of the batches depend on --seed alone, not
on --attn or --ln, so the per-step losses of two runs (in their --json) can be
compared step by step: with --dropout 0 they differ only by the kernels'
rounding.

    PYTHONPATH=python python3 examples/torch_gpt.py --attn fa --steps 200
    PYTHONPATH=python python3 examples/torch_gpt.py --attn sdpa-flash --compile \\
        --json flash-compile.json

Throughput (tokens/s, ms/step, MFU) counts steps 11 onwards only, so neither
the warm-up nor torch.compile's compilation (in the first steps) is in it.
MFU uses nanoGPT's 6 N + 12 L T C flops per token (N without the position
table) against --peak-tflops (989.4: an H100 SXM's dense bf16).
"""

import argparse
import contextlib
import json
import math
import sys
import time
from pathlib import Path


REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_DATA = REPO_ROOT.parent / "shared" / "data" / "tinyshakespeare.txt"
VOCAB = 256
UNTIMED_STEPS = 10
ATTENTION_CHOICES = ("fa", "sdpa-flash", "sdpa-cudnn", "sdpa-math")


def parse_args(argv=None):
    """Parses the flags without importing torch, so that --help works
    anywhere."""
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data", default=str(DEFAULT_DATA),
                   help="training text, read as bytes (default: %(default)s)")
    p.add_argument("--val-fraction", type=float, default=0.1,
                   help="the text's tail held out for the final validation loss")
    p.add_argument("--attn", choices=ATTENTION_CHOICES, default="fa",
                   help="attention: fa.attention, or F.scaled_dot_product_attention "
                        "forced onto one SDPA backend")
    p.add_argument("--ln", choices=("fa", "torch"), default=None,
                   help="LayerNorm: fa.layer_norm or F.layer_norm "
                        "(default: fa with --attn fa, else torch)")
    p.add_argument("--compile", action="store_true", help="torch.compile the model")
    p.add_argument("--compile-mode", default=None,
                   choices=("default", "reduce-overhead", "max-autotune",
                            "max-autotune-no-cudagraphs"),
                   help="torch.compile's mode (with --compile)")
    p.add_argument("--check-no-graph-breaks", action="store_true",
                   help="with --compile: compile with fullgraph=True and exit 1 "
                        "at the first graph break")
    p.add_argument("--layers", type=int, default=12)
    p.add_argument("--d-model", type=int, default=768)
    p.add_argument("--heads", type=int, default=12)
    p.add_argument("--seq", type=int, default=1024)
    p.add_argument("--batch", type=int, default=16, help="sequences per step")
    p.add_argument("--dropout", type=float, default=0.0,
                   help="attention-probability and residual dropout (default 0)")
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--lr", type=float, default=1e-3, help="peak learning rate")
    p.add_argument("--min-lr", type=float, default=1e-4)
    p.add_argument("--warmup", type=int, default=None,
                   help="linear warm-up steps (default: min(20, --steps))")
    p.add_argument("--weight-decay", type=float, default=0.1)
    p.add_argument("--beta1", type=float, default=0.9)
    p.add_argument("--beta2", type=float, default=0.99)
    p.add_argument("--grad-clip", type=float, default=1.0, help="0: no clipping")
    p.add_argument("--fused-adam", action="store_true", help="AdamW(fused=True)")
    p.add_argument("--seed", type=int, default=1337)
    p.add_argument("--log-every", type=int, default=20)
    p.add_argument("--eval-batches", type=int, default=10,
                   help="validation batches at the end (0: none)")
    p.add_argument("--peak-tflops", type=float, default=989.4,
                   help="the GPU's peak for MFU (default: H100 SXM dense bf16)")
    p.add_argument("--json", metavar="PATH", help="write config and results as JSON")
    p.add_argument("--profile", type=int, default=0, metavar="STEPS",
                   help="after training, run STEPS more steps under torch.profiler and print "
                        "the GPU time per kernel (not part of any timing)")
    p.add_argument("--device", default="cuda",
                   help="cuda, or cpu for a quick check of the script (f32, no autocast)")
    args = p.parse_args(argv)
    if args.ln is None:
        args.ln = "fa" if args.attn == "fa" else "torch"
    if args.warmup is None:
        args.warmup = min(20, args.steps)
    if args.d_model % args.heads:
        p.error("--heads must divide --d-model")
    if not 0 <= args.warmup <= args.steps:
        p.error("--warmup must be in [0, --steps]")
    if not 0.0 <= args.dropout < 1.0:
        p.error("--dropout must be in [0, 1)")
    if args.check_no_graph_breaks and not args.compile:
        p.error("--check-no-graph-breaks needs --compile")
    if args.compile_mode and not args.compile:
        p.error("--compile-mode needs --compile")
    return args


def import_fa():
    """The fa package: from PYTHONPATH, else from <repo>/python."""
    try:
        import fa
    except ImportError:
        sys.path.insert(0, str(REPO_ROOT / "python"))
        try:
            import fa
        except ImportError as error:
            raise SystemExit(f"error: cannot import the fa package ({error}); run with "
                             f"PYTHONPATH={REPO_ROOT / 'python'} or "
                             f"`pip install -e {REPO_ROOT / 'python'}`")
    if not fa.is_available():
        reason = getattr(fa, "unavailable_reason", lambda: None)()
        raise SystemExit(f"error: fa.is_available() is False ({reason}): it needs a CUDA "
                         "GPU, libfa_runtime.so ($FA_RUNTIME_LIBRARY) and the kernel "
                         "library ($FA_KERNELS)")
    return fa


def learning_rate(args, step):
    """Linear warm-up to --lr, then cosine decay to --min-lr at --steps."""
    if step < args.warmup:
        return args.lr * (step + 1) / args.warmup
    progress = (step - args.warmup) / max(1, args.steps - args.warmup)
    return args.min_lr + (args.lr - args.min_lr) * (1 + math.cos(math.pi * progress)) / 2


def build_model(args, fa):
    """The GPT, on the CPU, its weights drawn from torch's global generator.
    The modules and parameters are the same whichever kernels run, so the same
    seed gives the same weights."""
    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    C, H, L, T = args.d_model, args.heads, args.layers, args.seq
    D = C // H

    class LayerNorm(nn.Module):
        """nn.LayerNorm's parameters, computed by fa.layer_norm or F.layer_norm.
        Under autocast the residual stream is fp32, so both normalise in fp32
        (autocast runs F.layer_norm in fp32 too)."""

        def __init__(self):
            super().__init__()
            self.weight = nn.Parameter(torch.ones(C))
            self.bias = nn.Parameter(torch.zeros(C))

        def forward(self, x):
            if args.ln == "fa":
                return fa.layer_norm(x, C, self.weight, self.bias, eps=1e-5)
            return F.layer_norm(x, (C,), self.weight, self.bias, eps=1e-5)

    def attention(q, k, v, dropout_p):
        """Causal attention of q, k, v [B, H, N, D]."""
        if args.attn == "fa":
            return fa.attention(q, k, v, causal=True, dropout_p=dropout_p)
        # The SDPA backend is forced by sdpa_kernel() around the training loop
        # (see main), which torch.compile traces under as well.
        return F.scaled_dot_product_attention(q, k, v, is_causal=True, dropout_p=dropout_p)

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln1 = LayerNorm()
            self.qkv = nn.Linear(C, 3 * C)  # output columns [q | k | v], head-major
            self.proj = nn.Linear(C, C)
            self.ln2 = LayerNorm()
            self.fc = nn.Linear(C, 4 * C)
            self.fc_proj = nn.Linear(4 * C, C)
            self.dropout = nn.Dropout(args.dropout)

        def forward(self, x):
            B, N, _ = x.shape
            q, k, v = self.qkv(self.ln1(x)).split(C, dim=2)
            # [B, N, H, D] views transposed to [B, H, N, D]: fa.attention copies
            # them to contiguous (torch.compile can fuse that copy).
            q, k, v = (t.view(B, N, H, D).transpose(1, 2) for t in (q, k, v))
            y = attention(q, k, v, args.dropout if self.training else 0.0)
            x = x + self.dropout(self.proj(y.transpose(1, 2).reshape(B, N, C)))
            u = self.fc(self.ln2(x))
            return x + self.dropout(self.fc_proj(F.gelu(u, approximate="tanh")))

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.wte = nn.Embedding(VOCAB, C)
            self.wpe = nn.Embedding(T, C)
            self.dropout = nn.Dropout(args.dropout)
            self.blocks = nn.ModuleList(Block() for _ in range(L))
            self.lnf = LayerNorm()
            # GPT-2 init: N(0, 0.02); the residual projections scaled by
            # 1/sqrt(2 L); biases 0, LayerNorm weights 1.
            for name, p in self.named_parameters():
                if name.endswith("bias"):
                    nn.init.zeros_(p)
                elif ".ln" in name or name.startswith("lnf"):
                    nn.init.ones_(p)
                elif name.endswith("proj.weight"):  # proj and fc_proj
                    nn.init.normal_(p, 0.0, 0.02 / math.sqrt(2 * L))
                else:
                    nn.init.normal_(p, 0.0, 0.02)

        def forward(self, tokens, targets):
            pos = torch.arange(tokens.shape[1], device=tokens.device)
            x = self.dropout(self.wte(tokens) + self.wpe(pos))
            for block in self.blocks:
                x = block(x)
            logits = F.linear(self.lnf(x), self.wte.weight)  # head tied to wte
            return F.cross_entropy(logits.float().reshape(-1, VOCAB), targets.reshape(-1))

    return GPT()


class Batches:
    """Training windows drawn by a numpy Generator seeded with --seed (the same
    sequence for every --attn/--ln), and fixed validation windows."""

    def __init__(self, args):
        import numpy as np

        path = Path(args.data)
        if not path.is_file():
            raise SystemExit(f"error: training text {path} not found (pass --data PATH)")
        data = np.fromfile(path, dtype=np.uint8)
        n_val = int(len(data) * args.val_fraction)
        self.train, self.val = data[: len(data) - n_val], data[len(data) - n_val:]
        if min(len(self.train), len(self.val)) < args.seq + 1:
            raise SystemExit(f"error: {path} ({len(data)} bytes) is too small for "
                             f"--seq {args.seq}")
        self.args = args
        self.rng = np.random.default_rng(args.seed)
        self.offsets = np.arange(args.seq + 1)

    def _rows(self, text, starts):
        import numpy as np

        windows = text[starts[:, None] + self.offsets].astype(np.int64)
        return np.ascontiguousarray(windows[:, :-1]), np.ascontiguousarray(windows[:, 1:])

    def train_batch(self):
        a = self.args
        return self._rows(self.train, self.rng.integers(0, len(self.train) - a.seq, a.batch))

    def val_batches(self):
        import numpy as np

        a = self.args
        windows = (len(self.val) - 1) // a.seq
        for index in range(min(a.eval_batches, max(1, windows // a.batch))):
            starts = (index * a.batch + np.arange(a.batch)) % windows * a.seq
            yield self._rows(self.val, starts)


def print_profile(args, step, sync):
    """GPU time per kernel over args.profile steps (torch.profiler), top 30."""
    from torch.profiler import ProfilerActivity, profile

    sync()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for _ in range(args.profile):
            step()
        sync()
    averages = prof.key_averages()
    for key in ("self_device_time_total", "self_cuda_time_total"):
        try:
            print(averages.table(sort_by=key, row_limit=30), flush=True)
            return
        except (AttributeError, KeyError, ValueError):
            continue


def main(argv=None):
    args = parse_args(argv)
    try:
        import numpy as np
        import torch
    except ImportError as error:
        raise SystemExit(f"error: this example needs PyTorch and numpy ({error})")
    cuda = args.device.startswith("cuda")
    if cuda and not torch.cuda.is_available():
        raise SystemExit("error: no CUDA GPU visible to PyTorch")
    from torch.nn.attention import SDPBackend, sdpa_kernel

    fa = import_fa() if "fa" in (args.attn, args.ln) else None
    device = torch.device(args.device)

    # One seed for everything: the weights (built on the CPU, so they do not
    # depend on the GPU or the kernels), dropout masks, and the batches.
    np.random.seed(args.seed)
    torch.manual_seed(args.seed)
    model = build_model(args, fa).to(device)
    batches = Batches(args)

    n_params = sum(p.numel() for p in model.parameters())  # tied wte counted once
    flops_per_token = (6 * (n_params - model.wpe.weight.numel())
                       + 12 * args.layers * args.seq * args.d_model)
    decay = [p for p in model.parameters() if p.dim() == 2]
    no_decay = [p for p in model.parameters() if p.dim() != 2]
    optimizer = torch.optim.AdamW(
        [{"params": decay, "weight_decay": args.weight_decay},
         {"params": no_decay, "weight_decay": 0.0}],
        lr=args.lr, betas=(args.beta1, args.beta2), eps=1e-8,
        **({"fused": True} if args.fused_adam else {}))

    train_model = model
    if args.compile:
        train_model = torch.compile(model, mode=args.compile_mode,
                                    fullgraph=args.check_no_graph_breaks)

    # Forcing one SDPA backend for the whole loop (rather than around each
    # call inside the model) keeps the model free of context managers that
    # torch.compile would have to trace; the backward runs the forward's
    # backend's backward either way.
    backends = {"sdpa-flash": [SDPBackend.FLASH_ATTENTION],
                "sdpa-cudnn": [SDPBackend.CUDNN_ATTENTION],
                "sdpa-math": [SDPBackend.MATH]}
    sdpa_context = (sdpa_kernel(backends[args.attn]) if args.attn in backends
                    else contextlib.nullcontext())

    def to_device(array):
        tensor = torch.from_numpy(array)
        return tensor.pin_memory().to(device, non_blocking=True) if cuda else tensor

    def autocast():
        return torch.autocast(device_type="cuda", dtype=torch.bfloat16, enabled=cuda)

    def sync():
        if cuda:
            torch.cuda.synchronize()

    tokens_per_step = args.batch * args.seq
    device_name = torch.cuda.get_device_name(device) if cuda else "cpu"
    print(f"PyTorch {torch.__version__} (CUDA {torch.version.cuda}) on {device_name}: "
          f"attention {args.attn}, LayerNorm {args.ln}, "
          f"{'compiled' if args.compile else 'eager'}; layers={args.layers} "
          f"d_model={args.d_model} heads={args.heads} seq={args.seq} batch={args.batch} "
          f"({tokens_per_step} tokens/step), {n_params / 1e6:.1f}M parameters", flush=True)

    def run_step(step):
        """One optimizer step; its loss as a GPU tensor."""
        for group in optimizer.param_groups:
            group["lr"] = learning_rate(args, step)
        x, y = batches.train_batch()
        if args.compile_mode == "reduce-overhead":
            torch.compiler.cudagraph_mark_step_begin()  # a new step's CUDA graphs
        try:
            with autocast():
                loss = train_model(to_device(x), to_device(y))
            loss.backward()
        except Exception as error:
            if args.check_no_graph_breaks and step == 0:
                raise SystemExit(f"error: torch.compile(fullgraph=True) failed, most "
                                 f"likely at a graph break:\n{error}") from error
            raise
        if args.grad_clip > 0:
            torch.nn.utils.clip_grad_norm_(model.parameters(), args.grad_clip)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        # A copy: CUDA-graph modes reuse the loss's memory in the next step.
        return loss.detach().clone()

    losses = []  # each step's loss, kept on the GPU so that logging is the only sync
    timed_seconds, first_step_seconds = 0.0, None
    window_start = time.perf_counter()
    with sdpa_context:
        for step in range(args.steps):
            if step == UNTIMED_STEPS:
                sync()
                window_start = time.perf_counter()
            losses.append(run_step(step))
            done = step + 1
            if done == 1:
                sync()
                first_step_seconds = time.perf_counter() - window_start
            if done % args.log_every == 0 or done == args.steps:
                sync()
                now = time.perf_counter()
                if done > UNTIMED_STEPS:
                    timed_seconds += now - window_start
                print(f"step {done:5d}/{args.steps} | loss {losses[-1].item():.4f} | "
                      f"lr {learning_rate(args, step):.2e}", flush=True)
                window_start = time.perf_counter()  # logging is not timed

        if args.profile > 0:
            print_profile(args, lambda: run_step(args.steps), sync)

        val_loss = None
        if args.eval_batches > 0:
            model.eval()  # the eager model: no recompilation for eval mode
            with torch.no_grad(), autocast():
                values = [model(to_device(x), to_device(y)).item()
                          for x, y in batches.val_batches()]
            model.train()
            val_loss = sum(values) / len(values)

    step_losses = torch.stack(losses).float().tolist()
    result = {
        "attn": args.attn, "ln": args.ln, "compile": args.compile,
        "compile_mode": args.compile_mode, "config": vars(args),
        "parameters": n_params, "flops_per_token": flops_per_token,
        "tokens_per_step": tokens_per_step,
        "torch": torch.__version__, "cuda": torch.version.cuda, "device": device_name,
        "losses": step_losses, "final_loss": step_losses[-1], "val_loss": val_loss,
        "first_step_seconds": first_step_seconds,
        "peak_memory_gib": torch.cuda.max_memory_allocated(device) / 2**30 if cuda else None,
        "timed_steps": max(0, args.steps - UNTIMED_STEPS),
    }
    if fa is not None:
        result["fa_kernel_dir"] = str(fa.kernel_dir())
        result["fa_runtime_library"] = str(fa.runtime_library())
    if result["timed_steps"] > 0 and timed_seconds > 0:
        tokens_per_s = result["timed_steps"] * tokens_per_step / timed_seconds
        result.update(
            ms_per_step=1e3 * timed_seconds / result["timed_steps"],
            tokens_per_s=tokens_per_s, peak_tflops=args.peak_tflops,
            mfu=tokens_per_s * flops_per_token / (args.peak_tflops * 1e12))
        print(f"steps {UNTIMED_STEPS + 1}-{args.steps}: {result['ms_per_step']:.2f} ms/step, "
              f"{tokens_per_s:.0f} tokens/s, MFU {100 * result['mfu']:.1f}% "
              f"(of {args.peak_tflops} TFLOP/s); first step {first_step_seconds:.1f} s"
              + (f"; peak memory {result['peak_memory_gib']:.2f} GiB" if cuda else "")
              + (f"; val loss {val_loss:.4f}" if val_loss is not None else ""))
    else:
        print(f"throughput not measured: --steps must exceed {UNTIMED_STEPS}")
    if args.json:
        path = Path(args.json)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(result, indent=2) + "\n")
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
