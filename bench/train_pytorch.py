#!/usr/bin/env python3
"""PyTorch eager baseline for `fa-run train`: the same GPT, data and optimizer.

The model is exactly runtime/include/fa/train/GptConfig.h: byte vocab 256,
learned positions, pre-LayerNorm blocks (eps 1e-5) with causal attention
(F.scaled_dot_product_attention), a fused QKV linear with bias in [q | k | v]
column order, an output projection with bias, a 4C MLP with tanh-GELU, a final
LayerNorm, a head tied to the token embedding (unless --untied-head) and the
mean cross-entropy. GPT-2 init: N(0, 0.02), residual projections (proj,
fc_proj) scaled by 1/sqrt(2 * layers), biases 0, LayerNorm weights 1.
Training: bf16 autocast over fp32 master weights, AdamW (betas 0.9/0.99,
eps 1e-8, weight decay 0.1 on 2-D parameters only), gradient clipping 1.0,
linear warm-up then cosine decay to --min-lr at --steps. Data: the bytes of
--data, the last 10% held out for validation; each row is a random window of
seq + 1 bytes of the training part (numpy RNG seeded with seed + rank).

Throughput excludes the first 10 steps (warm-up) and validation; it is timed
with torch.cuda.synchronize() + time.perf_counter(). MFU uses nanoGPT's
6 N + 12 L T C flops per token (N without the position table) against
989.4 TFLOP/s (bf16) or 67 TFLOP/s (f32) on H100/H200, or --peak-tflops.

Single GPU:
    python3 bench/train_pytorch.py --data input.txt --steps 500 --json out.json
Several GPUs of one host (DDP over NCCL, --batch is per GPU):
    torchrun --standalone --nproc-per-node 2 bench/train_pytorch.py \\
        --data input.txt --steps 500 [--zero1] [--bucket-cap-mb 25] --json out.json
A quick check without a GPU (no autocast on CPU):
    python3 bench/train_pytorch.py --device cpu --data input.txt --layers 2 \\
        --d-model 64 --heads 2 --seq 32 --batch 4 --steps 20
"""

import argparse
import json
import math
import os
import time

import numpy as np

WARMUP_STEPS_UNTIMED = 10
VOCAB = 256


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--data", required=True, help="training text, read as bytes")
    p.add_argument("--val-fraction", type=float, default=0.1)
    p.add_argument("--layers", type=int, default=6)
    p.add_argument("--d-model", type=int, default=384)
    p.add_argument("--heads", type=int, default=6)
    p.add_argument("--seq", type=int, default=256)
    p.add_argument("--untied-head", action="store_true")
    p.add_argument("--batch", type=int, default=64, help="sequences per step per GPU")
    p.add_argument("--steps", type=int, default=2000)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--min-lr", type=float, default=1e-4)
    p.add_argument("--warmup", type=int, default=100)
    p.add_argument("--weight-decay", type=float, default=0.1)
    p.add_argument("--beta1", type=float, default=0.9)
    p.add_argument("--beta2", type=float, default=0.99)
    p.add_argument("--grad-clip", type=float, default=1.0, help="0: no clipping")
    p.add_argument("--fused-adam", action="store_true",
                   help="AdamW(fused=True) instead of the default implementation")
    p.add_argument("--seed", type=int, default=1337)
    p.add_argument("--dropout", type=float, default=0.0,
                   help="nanoGPT's dropout: embeddings, attention, residual branches")
    p.add_argument("--log-every", type=int, default=10)
    p.add_argument("--eval-every", type=int, default=0,
                   help="steps between validations (0: only at the end)")
    p.add_argument("--eval-batches", type=int, default=20)
    p.add_argument("--dtype", choices=["bf16", "f32"], default="bf16",
                   help="bf16: autocast over fp32 weights; f32: no autocast")
    p.add_argument("--compile", action="store_true", help="torch.compile the model")
    p.add_argument("--device", default="cuda", help="cuda or cpu")
    p.add_argument("--bucket-cap-mb", type=float, default=25, help="DDP bucket size")
    p.add_argument("--zero1", action="store_true",
                   help="shard AdamW's state (ZeroRedundancyOptimizer)")
    p.add_argument("--peak-tflops", type=float, default=0,
                   help="peak for MFU (default: 989.4 bf16 / 67 f32 on H100/H200)")
    p.add_argument("--json", metavar="OUT", help="write the results as JSON")
    args = p.parse_args(argv)
    if args.d_model % args.heads:
        p.error("--heads must divide --d-model")
    if not 0 <= args.warmup <= args.steps:
        p.error("--warmup must be in [0, --steps]")
    return args


def learning_rate(args, step):
    """fa::train::learningRate: linear warm-up, then cosine to min_lr."""
    if step >= args.steps:
        return args.min_lr
    if step < args.warmup:
        return args.lr * (step + 1) / args.warmup
    progress = (step - args.warmup) / (args.steps - args.warmup)
    return args.min_lr + (args.lr - args.min_lr) * (1 + math.cos(math.pi * progress)) / 2


def build_model(args):
    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    C, H, L, T = args.d_model, args.heads, args.layers, args.seq

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln1 = nn.LayerNorm(C, eps=1e-5)
            self.qkv = nn.Linear(C, 3 * C)       # rows [q | k | v], head-major
            self.proj = nn.Linear(C, C)
            self.ln2 = nn.LayerNorm(C, eps=1e-5)
            self.fc = nn.Linear(C, 4 * C)
            self.fc_proj = nn.Linear(4 * C, C)
            self.drop = nn.Dropout(args.dropout)  # nanoGPT's resid_dropout

        def forward(self, x):
            B, Tx, _ = x.shape
            q, k, v = self.qkv(self.ln1(x)).split(C, dim=2)
            q, k, v = (t.view(B, Tx, H, C // H).transpose(1, 2) for t in (q, k, v))
            y = F.scaled_dot_product_attention(
                q, k, v, is_causal=True, dropout_p=args.dropout if self.training else 0.0)
            x = x + self.drop(self.proj(y.transpose(1, 2).reshape(B, Tx, C)))
            u = self.fc(self.ln2(x))
            return x + self.drop(self.fc_proj(F.gelu(u, approximate="tanh")))

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.wte = nn.Embedding(VOCAB, C)
            self.wpe = nn.Embedding(T, C)
            self.blocks = nn.ModuleList(Block() for _ in range(L))
            self.lnf = nn.LayerNorm(C, eps=1e-5)
            self.drop = nn.Dropout(args.dropout)  # on the embeddings' sum
            self.lm_head = None if not args.untied_head else nn.Linear(C, VOCAB, bias=False)
            std = 0.02
            for name, p in self.named_parameters():
                if name.endswith("bias"):
                    nn.init.zeros_(p)
                elif ".ln" in name or name.startswith("lnf"):
                    nn.init.ones_(p)
                elif name.endswith("proj.weight"):  # proj and fc_proj
                    nn.init.normal_(p, 0.0, std / math.sqrt(2 * L))
                else:
                    nn.init.normal_(p, 0.0, std)

        def forward(self, tokens, targets):
            pos = torch.arange(tokens.shape[1], device=tokens.device)
            x = self.drop(self.wte(tokens) + self.wpe(pos))
            for block in self.blocks:
                x = block(x)
            h = self.lnf(x)
            head = self.wte.weight if self.lm_head is None else self.lm_head.weight
            logits = F.linear(h, head)
            return F.cross_entropy(logits.float().reshape(-1, VOCAB), targets.reshape(-1))

    return GPT()


class Batches:
    """Random training windows (seeded per rank) and fixed validation windows."""

    def __init__(self, args, rank, world):
        data = np.fromfile(args.data, dtype=np.uint8)
        n_val = int(len(data) * args.val_fraction)
        self.train, self.val = data[: len(data) - n_val], data[len(data) - n_val:]
        if min(len(self.train), len(self.val)) < args.seq + 1:
            raise SystemExit(f"{args.data}: too small for --seq {args.seq}")
        self.rng = np.random.default_rng(args.seed + rank)
        self.args, self.rank, self.world = args, rank, world
        self.offsets = np.arange(args.seq + 1)

    def _rows(self, text, starts):
        w = text[starts[:, None] + self.offsets].astype(np.int64)
        return np.ascontiguousarray(w[:, :-1]), np.ascontiguousarray(w[:, 1:])

    def train_batch(self):
        a = self.args
        return self._rows(self.train, self.rng.integers(0, len(self.train) - a.seq, a.batch))

    def val_batches(self):
        """As the C++ sampler: windows at multiples of seq, rank r takes batches r, r+W..."""
        a = self.args
        windows = (len(self.val) - 1) // a.seq
        count = min(a.eval_batches, (windows + a.batch - 1) // a.batch)
        for index in range(self.rank, count, self.world):
            w = (index % windows * a.batch + np.arange(a.batch)) % windows
            yield self._rows(self.val, w * a.seq)


def main():
    args = parse_args()
    import torch
    import torch.distributed as dist

    world = int(os.environ.get("WORLD_SIZE", "1"))
    rank = int(os.environ.get("RANK", "0"))
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    cuda = args.device.startswith("cuda")
    device = torch.device(f"cuda:{local_rank}" if cuda else args.device)
    if cuda:
        torch.cuda.set_device(device)
    else:
        torch.set_flush_denormal(True)  # tiny Adam states crawl on CPU otherwise
    if world > 1:
        dist.init_process_group("nccl" if cuda else "gloo")
    leader = rank == 0
    say = print if leader else (lambda *a, **k: None)

    torch.manual_seed(args.seed)  # the same initial weights on every rank
    model = build_model(args).to(device)
    n_params = sum(p.numel() for p in model.parameters())  # tied wte counted once
    flops_per_token = 6 * (n_params - model.wpe.weight.numel()) + \
        12 * args.layers * args.seq * args.d_model

    decay = [p for p in model.parameters() if p.dim() == 2]
    no_decay = [p for p in model.parameters() if p.dim() != 2]
    groups = [{"params": decay, "weight_decay": args.weight_decay},
              {"params": no_decay, "weight_decay": 0.0}]
    adam = dict(lr=args.lr, betas=(args.beta1, args.beta2), eps=1e-8)
    if args.fused_adam:
        adam["fused"] = True
    if args.zero1 and world > 1:
        from torch.distributed.optim import ZeroRedundancyOptimizer
        optimizer = ZeroRedundancyOptimizer(groups, optimizer_class=torch.optim.AdamW, **adam)
    else:
        optimizer = torch.optim.AdamW(groups, **adam)

    train_model = torch.compile(model) if args.compile else model
    if world > 1:
        from torch.nn.parallel import DistributedDataParallel as DDP
        train_model = DDP(train_model, device_ids=[local_rank] if cuda else None,
                          bucket_cap_mb=args.bucket_cap_mb)
    if not cuda:
        args.dtype = "f32"  # no autocast on CPU
    use_autocast = args.dtype == "bf16"

    def autocast():
        return torch.autocast(device_type="cuda", dtype=torch.bfloat16, enabled=use_autocast)

    def to_device(array):
        t = torch.from_numpy(array)
        return t.pin_memory().to(device, non_blocking=True) if cuda else t.to(device)

    def sync():
        if cuda:
            torch.cuda.synchronize()

    def mean_over_ranks(values):
        t = torch.tensor(values, dtype=torch.float64, device=device)
        if world > 1:
            dist.all_reduce(t)
        return t

    batches = Batches(args, rank, world)

    def evaluate():
        model.eval()
        total, count = 0.0, 0
        with torch.no_grad(), autocast():
            for x, y in batches.val_batches():
                total += model(to_device(x), to_device(y)).item()
                count += 1
        model.train()
        s = mean_over_ranks([total, count])
        return (s[0] / s[1]).item()

    peak = args.peak_tflops
    device_name = torch.cuda.get_device_name(device) if cuda else "cpu"
    if peak <= 0 and ("H100" in device_name or "H200" in device_name):
        peak = 989.4 if args.dtype == "bf16" else 67.0
    tokens_per_step = args.batch * args.seq * world
    say(f"PyTorch {torch.__version__} on {world} x {device_name}: layers={args.layers} "
        f"d_model={args.d_model} heads={args.heads} seq={args.seq} "
        f"{'untied' if args.untied_head else 'tied'}, {n_params} parameters, batch "
        f"{args.batch}/GPU ({tokens_per_step} tokens/step), {args.dtype}"
        f"{', compiled' if args.compile else ''}{', ZeRO-1' if args.zero1 and world > 1 else ''}")

    timed_seconds, timed_steps, t0 = 0.0, 0, None
    window_start, window_steps = time.perf_counter(), 0
    final_loss = val_loss = None
    curve = []  # (step, training loss, validation loss) at each evaluation
    for step in range(args.steps):
        if step == WARMUP_STEPS_UNTIMED:
            sync()
            t0 = time.perf_counter()
        lr = learning_rate(args, step)
        for group in optimizer.param_groups:
            group["lr"] = lr
        x, y = batches.train_batch()
        with autocast():
            loss = train_model(to_device(x), to_device(y))
        loss.backward()
        norm = (torch.nn.utils.clip_grad_norm_(model.parameters(), args.grad_clip)
                if args.grad_clip > 0 else None)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        window_steps += 1
        done = step + 1
        evaluate_now = done == args.steps or (args.eval_every and done % args.eval_every == 0)
        if evaluate_now or done % args.log_every == 0:
            sync()
            now = time.perf_counter()
            if t0 is not None:
                timed_seconds += now - t0
                timed_steps = done - WARMUP_STEPS_UNTIMED
            rate = window_steps * tokens_per_step / (now - window_start)
            loss_value = (mean_over_ranks([loss.item()]) / world).item()
            val_loss = evaluate() if evaluate_now else None
            if val_loss is not None:
                curve.append([done, loss_value, val_loss])
            final_loss = loss_value
            line = (f"step {done:6d}/{args.steps} | loss {loss_value:.4f} | val "
                    f"{'-' if val_loss is None else f'{val_loss:.4f}'} | lr {lr:.2e} | norm "
                    f"{norm.item() if norm is not None else float('nan'):.3f} | "
                    f"{rate / 1e3:.1f}k tok/s")
            if world > 1:
                line += f" ({rate / world / 1e3:.1f}k/GPU)"
            if peak > 0:
                line += f" | MFU {100 * rate / world * flops_per_token / (peak * 1e12):.1f}%"
            say(line)
            sync()
            window_start, window_steps = time.perf_counter(), 0
            if t0 is not None:
                t0 = window_start  # the timed window skips logging and validation

    result = {"framework": "pytorch-eager" if not args.compile else "pytorch-compile",
              "torch": torch.__version__, "device": device_name, "world_size": world,
              "config": {k: getattr(args, k) for k in (
                  "layers", "d_model", "heads", "seq", "batch", "steps", "lr", "min_lr",
                  "warmup", "dtype", "compile", "zero1", "bucket_cap_mb", "seed",
                  "dropout")},
              "tied_head": not args.untied_head, "parameters": n_params,
              "flops_per_token": flops_per_token, "final_loss": final_loss,
              "final_val_loss": val_loss, "timed_steps": timed_steps,
              "eval_curve": curve}
    if timed_steps > 0:
        tok_s = timed_steps * tokens_per_step / timed_seconds
        result.update(ms_per_step=1e3 * timed_seconds / timed_steps, tokens_per_s=tok_s,
                      tokens_per_s_per_gpu=tok_s / world, peak_tflops=peak or None,
                      mfu=(tok_s / world * flops_per_token / (peak * 1e12)) if peak else None)
        say(f"throughput over steps {WARMUP_STEPS_UNTIMED + 1}-{args.steps}: "
            f"{result['ms_per_step']:.2f} ms/step, {tok_s:.0f} tok/s "
            f"({tok_s / world:.0f}/GPU)" + (f", MFU {100 * result['mfu']:.1f}%" if peak else ""))
    else:
        say(f"throughput not measured: --steps must exceed {WARMUP_STEPS_UNTIMED}")
    if cuda:
        result["peak_memory_gib"] = torch.cuda.max_memory_allocated(device) / 2**30
    if leader and args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=2)
            f.write("\n")
    if world > 1:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
