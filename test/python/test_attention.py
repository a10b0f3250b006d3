"""fa.attention against an fp64 reference, with PyTorch's SDPA error in the
same dtype as the yardstick: our max error <= 2 x SDPA's (+ a tiny floor).

GPU tests: they skip without PyTorch, CUDA, libfa_runtime.so or the kernels.
The Philox port of the dropout mask is checked on any machine.
"""

import math
import time
import unittest

import fa_testing as ft
from fa_testing import F, torch

import fa

SKIP = ft.skip_reason()


def randn(*shape, dtype, seed=None):
    generator = None
    if seed is not None:
        generator = torch.Generator(device="cuda").manual_seed(seed)
    return torch.randn(*shape, device="cuda", dtype=dtype, generator=generator)


def leaves64(*tensors):
    return [None if t is None else t.detach().double().requires_grad_(True) for t in tensors]


def leaves(*tensors):
    return [None if t is None else t.detach().clone().requires_grad_(True) for t in tensors]


class AttentionCase:
    """One problem: our result, the fp64 reference, and SDPA in the same dtype."""

    def __init__(self, test, batch, heads, kv_heads, seq_q, seq_kv, head_dim, dtype, seed=0,
                 sinks=False, alibi=False, documents=None, **variant):
        self.test = test
        self.dtype = dtype
        self.shape = (batch, heads, kv_heads, seq_q, seq_kv, head_dim)
        torch.manual_seed(seed)
        self.q = randn(batch, heads, seq_q, head_dim, dtype=dtype)
        self.k = randn(batch, kv_heads, seq_kv, head_dim, dtype=dtype)
        self.v = randn(batch, kv_heads, seq_kv, head_dim, dtype=dtype)
        self.dout = randn(batch, heads, seq_q, head_dim, dtype=dtype)
        self.variant = dict(variant)
        self.tensors = {}
        if sinks:
            # ln(seq_kv) + N(0, 1): the sink's share of a row is comparable to its keys'.
            self.tensors["sinks"] = (math.log(max(seq_kv, 1)) + torch.randn(heads, device="cuda")).float()
        if alibi:
            self.tensors["alibi_slopes"] = torch.tensor(
                [2.0 ** (-8.0 * (h + 1) / heads) for h in range(heads)], device="cuda")
        if documents is not None:
            self.tensors["document_ids"] = documents
        self.keep = ft.keep_mask(batch, heads, seq_q, seq_kv, "cuda", variant.get("causal", False),
                                 variant.get("window"), documents).expand(batch, heads, seq_q, seq_kv)
        self.rows = self.keep.any(-1)

    def ours(self, backward=True):
        q, k, v = leaves(self.q, self.k, self.v)
        sinks = self.tensors.get("sinks")
        if sinks is not None:
            sinks = sinks.clone().requires_grad_(backward)
        extra = dict(self.tensors, sinks=sinks) if sinks is not None else dict(self.tensors)
        out, lse = fa.attention(q, k, v, return_lse=True, **self.variant, **extra)
        grads = None
        if backward:
            out.backward(self.dout)
            grads = [q.grad, k.grad, v.grad] + ([sinks.grad] if sinks is not None else [])
        return out.detach(), lse, grads

    def reference(self, backward=True):
        q, k, v = leaves64(self.q, self.k, self.v)
        sinks = self.tensors.get("sinks")
        if sinks is not None:
            sinks = sinks.detach().double().requires_grad_(True)
        out, lse = ft.reference_attention(
            q, k, v, sinks=sinks, alibi_slopes=self.tensors.get("alibi_slopes"),
            document_ids=self.tensors.get("document_ids"), **self.variant)
        grads = None
        if backward:
            out.backward(self.dout.double())
            grads = [q.grad, k.grad, v.grad] + ([sinks.grad] if sinks is not None else [])
        return out.detach(), lse.detach(), grads

    def sdpa(self, backward=True):
        """SDPA on the same problem where SDPA can state it; with softcap or
        sinks (which it cannot), on the problem without them: the size of a
        low-precision attention's error on these inputs."""
        heads = self.shape[1]
        q, k, v = leaves(self.q, self.k, self.v)
        mask = ft.sdpa_mask(self.sdpa_keep(), heads, self.dtype, self.tensors.get("alibi_slopes"))
        out = F.scaled_dot_product_attention(q, ft.expand_kv(k, heads), ft.expand_kv(v, heads),
                                             attn_mask=mask, scale=self.variant.get("scale"))
        grads = None
        if backward:
            out.backward(self.dout)
            grads = [q.grad, k.grad, v.grad]
        return out.detach(), grads

    def sdpa_keep(self):
        batch, heads, _, seq_q, seq_kv, _ = self.shape
        return ft.sdpa_keep(batch, heads, seq_q, seq_kv, "cuda", self.variant.get("causal", False),
                            self.variant.get("window"), self.tensors.get("document_ids"))

    def sdpa_reference(self, backward=True):
        """The fp64 reference of the problem sdpa() solves."""
        q, k, v = leaves64(self.q, self.k, self.v)
        out, lse = ft.reference_attention(
            q, k, v, alibi_slopes=self.tensors.get("alibi_slopes"), keep=self.sdpa_keep(),
            scale=self.variant.get("scale"))
        grads = None
        if backward:
            out.backward(self.dout.double())
            grads = [q.grad, k.grad, v.grad]
        return out.detach(), lse, grads

    def check(self, backward=True, lse_tolerance=1e-3):
        test = self.test
        out, lse, grads = self.ours(backward)
        ref_out, ref_lse, ref_grads = self.reference(backward)
        sdpa_out, sdpa_grads = self.sdpa(backward)
        sdpa_ref_out, _, sdpa_ref_grads = self.sdpa_reference(backward)
        rows = self.rows
        label = "%s %s %s" % (self.dtype, self.shape, self.variant)

        test.assertEqual(tuple(out.shape), tuple(self.q.shape))
        test.assertTrue(out.is_contiguous())
        test.assertEqual(out.dtype, self.dtype)
        test.assertEqual(lse.dtype, torch.float32)
        test.assertTrue(bool(torch.isfinite(out).all()), "non-finite output: " + label)
        sdpa_error = ft.max_error(sdpa_out, sdpa_ref_out, rows)
        error = ft.max_error(out, ref_out, rows)
        bar = ft.error_bar(sdpa_error, ref_out)
        test.assertLessEqual(error, bar, "out: error %.3g, SDPA's %.3g: %s" % (error, sdpa_error, label))
        # Rows that keep no key: out exactly 0, lse -inf (or the sink).
        if not bool(rows.all()):
            test.assertEqual(float(out[~rows].abs().max()), 0.0, "masked rows: " + label)
        lse_error = ft.max_error(lse, ref_lse)
        test.assertLessEqual(lse_error, lse_tolerance, "lse: error %.3g: %s" % (lse_error, label))

        if not backward:
            return
        for name, ours, ref, sdpa, sdpa_ref in zip(("dq", "dk", "dv"), grads, ref_grads, sdpa_grads, sdpa_ref_grads):
            test.assertEqual(ours.shape, ref.shape)
            test.assertTrue(bool(torch.isfinite(ours).all()), "non-finite %s: %s" % (name, label))
            sdpa_error = ft.max_error(sdpa, sdpa_ref)
            error = ft.max_error(ours, ref)
            bar = ft.error_bar(sdpa_error, ref)
            test.assertLessEqual(error, bar, "%s: error %.3g, SDPA's %.3g: %s" % (name, error, sdpa_error, label))
        if "sinks" in self.tensors:
            dsinks, ref_dsinks = grads[3], ref_grads[3]
            test.assertEqual(dsinks.dtype, torch.float32)
            error = ft.max_error(dsinks, ref_dsinks)
            bar = 0.02 * float(ref_dsinks.abs().max()) + 1e-3
            test.assertLessEqual(error, bar, "dsinks: error %.3g: %s" % (error, label))


LOW_PRECISION = () if torch is None else (torch.bfloat16, torch.float16)
SHAPES = [  # batch, heads, kv_heads, seq_q, seq_kv
    (2, 4, 4, 128, 128),
    (1, 2, 2, 1, 1),
    (1, 2, 2, 17, 17),
    (1, 2, 2, 1000, 1000),
    (2, 4, 2, 64, 200),   # GQA, seq_q < seq_kv
    (1, 3, 1, 200, 77),   # MQA, seq_q > seq_kv
]


@unittest.skipIf(SKIP, SKIP)
class AttentionTest(unittest.TestCase):
    def test_forward_backward_matches_fp64(self):
        for dtype in LOW_PRECISION:
            for head_dim in (64, 128):
                for causal in (False, True):
                    for shape in SHAPES:
                        with self.subTest(dtype=dtype, head_dim=head_dim, causal=causal, shape=shape):
                            AttentionCase(self, *shape, head_dim, dtype, causal=causal).check()

    def test_forward_other_head_dims(self):
        for dtype in LOW_PRECISION:
            for head_dim in (32, 96, 256):
                for causal in (False, True):
                    for shape in ((2, 4, 4, 128, 128), (1, 2, 2, 17, 17), (2, 4, 2, 300, 257)):
                        with self.subTest(dtype=dtype, head_dim=head_dim, causal=causal, shape=shape):
                            AttentionCase(self, *shape, head_dim, dtype, causal=causal).check(backward=False)

    def test_backward_other_head_dims(self):
        for head_dim in (32, 96, 256):
            for causal in (False, True):
                with self.subTest(head_dim=head_dim, causal=causal):
                    AttentionCase(self, 1, 4, 2, 200, 200, head_dim, torch.bfloat16, causal=causal).check()

    def test_scale(self):
        # scale * sqrt(64) = 2: q * 2 is exact, so the fp64 reference of the
        # same scale holds us to the usual bar.
        for dtype in LOW_PRECISION:
            with self.subTest(dtype=dtype):
                AttentionCase(self, 2, 4, 4, 100, 130, 64, dtype, scale=0.25).check()
                AttentionCase(self, 2, 4, 4, 100, 130, 64, dtype, scale=0.125, causal=True).check()

    def test_noncontiguous_inputs(self):
        # [B, N, H, D].transpose(1, 2): the layout of a fused QKV projection.
        torch.manual_seed(1)
        for dtype in LOW_PRECISION:
            base = [randn(2, 150, 4, 64, dtype=dtype) for _ in range(3)]
            views = [t.detach().transpose(1, 2).requires_grad_(False) for t in base]
            strided = [t.clone().requires_grad_(True) for t in base]
            dense = [t.detach().transpose(1, 2).contiguous().requires_grad_(True) for t in base]
            out_strided = fa.attention(*[t.transpose(1, 2) for t in strided], causal=True)
            out_dense = fa.attention(*dense, causal=True)
            self.assertFalse(views[0].is_contiguous())
            self.assertTrue(out_strided.is_contiguous())
            self.assertTrue(torch.equal(out_strided, out_dense))
            dout = torch.randn_like(out_dense)
            out_strided.backward(dout)
            out_dense.backward(dout)
            for a, b in zip(strided, dense):
                self.assertTrue(torch.equal(a.grad.transpose(1, 2), b.grad))

    def test_kernels_and_plan_cache(self):
        q = randn(1, 2, 64, 64, dtype=torch.bfloat16)
        forward, backward = fa.attention_kernels(q, q, q, causal=True)
        self.assertIn("attention_fwd_bf16_d64", forward)
        self.assertIn("causal", forward)
        self.assertTrue(backward)
        from fa import _library
        fa.attention(q, q, q, causal=True)
        plans = len(_library.library(q.get_device()).attention_plans)
        for _ in range(3):
            fa.attention(q, q, q, causal=True)
        self.assertEqual(len(_library.library(q.get_device()).attention_plans), plans)

    def test_runs_on_the_current_stream(self):
        q = randn(2, 4, 256, 64, dtype=torch.bfloat16)
        expected = fa.attention(q, q, q)
        stream = torch.cuda.Stream()
        stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(stream):
            out = fa.attention(q, q, q)
        torch.cuda.current_stream().wait_stream(stream)
        self.assertTrue(torch.equal(out, expected))

    def test_repeated_calls_reuse_their_plan(self):
        # A shape seen before costs a dict lookup, not a plan (kernel choice,
        # argument packing): the call overhead depends on it. Its speed is
        # measured by bench/bench_torch_ops.py, not here.
        from fa import _library

        q = randn(1, 2, 33, 64, dtype=torch.bfloat16)
        fa.attention(q, q, q, causal=True)
        plans = len(_library.library(q.get_device()).attention_plans)
        for _ in range(3):
            fa.attention(q, q, q, causal=True)
        self.assertEqual(len(_library.library(q.get_device()).attention_plans), plans)

    def test_eager_fast_path_equals_the_custom_op(self):
        # Plain eager calls skip the custom-op layers (ops.py); both must run
        # the same launches: outputs and gradients bitwise equal.
        from fa import ops

        q0, k0, v0, dout = (randn(2, 4, 300, 64, dtype=torch.bfloat16, seed=seed)
                            for seed in (1, 2, 3, 4))
        k0, v0 = k0[:, :2].contiguous(), v0[:, :2].contiguous()  # GQA
        q, k, v = leaves(q0, k0, v0)
        self.assertTrue(ops._plain_eager(q, k, v))
        out, lse = fa.attention(q, k, v, causal=True, return_lse=True)
        out.backward(dout)
        qo, ko, vo = leaves(q0, k0, v0)
        out_op, lse_op, _ = torch.ops.fa.attention.default(qo, ko, vo, None, None, None, 1,
                                                           -1, -1, 0.0, 0.0)
        out_op.backward(dout)
        for name, fast, op in (("out", out, out_op), ("lse", lse, lse_op), ("dq", q.grad, qo.grad),
                               ("dk", k.grad, ko.grad), ("dv", v.grad, vo.grad)):
            self.assertTrue(torch.equal(fast, op), name)
        with torch.no_grad():
            self.assertTrue(torch.equal(fa.attention(q, k, v, causal=True), out_op))


@unittest.skipIf(SKIP, SKIP)
class AttentionVariantTest(unittest.TestCase):
    def cases(self, **kwargs):
        for dtype in LOW_PRECISION:
            for head_dim in (64, 128):
                with self.subTest(dtype=dtype, head_dim=head_dim, **{k: str(v) for k, v in kwargs.items()}):
                    yield dtype, head_dim

    def test_window(self):
        for dtype, head_dim in self.cases():
            AttentionCase(self, 2, 4, 4, 300, 300, head_dim, dtype, window=(32, 8)).check()
            AttentionCase(self, 1, 4, 2, 200, 333, head_dim, dtype, window=(48, 0), causal=True).check()
            AttentionCase(self, 1, 2, 2, 333, 200, head_dim, dtype, window=(0, 5)).check()

    def test_softcap(self):
        for dtype, head_dim in self.cases():
            AttentionCase(self, 2, 4, 4, 200, 200, head_dim, dtype, softcap=2.0).check()
            AttentionCase(self, 1, 4, 2, 150, 250, head_dim, dtype, softcap=5.0, causal=True).check()

    def test_alibi(self):
        for dtype, head_dim in self.cases():
            AttentionCase(self, 2, 4, 4, 200, 200, head_dim, dtype, alibi=True).check()
            AttentionCase(self, 1, 8, 2, 100, 180, head_dim, dtype, alibi=True, causal=True).check()

    def test_sinks(self):
        for dtype, head_dim in self.cases():
            AttentionCase(self, 2, 4, 4, 200, 200, head_dim, dtype, sinks=True).check()
            AttentionCase(self, 1, 4, 2, 150, 150, head_dim, dtype, sinks=True, causal=True).check()
            AttentionCase(self, 1, 4, 4, 130, 130, head_dim, dtype, sinks=True, window=(16, 0)).check()

    def test_bottom_right_causal(self):
        for dtype, head_dim in self.cases():
            AttentionCase(self, 2, 4, 4, 100, 300, head_dim, dtype, causal="bottom-right").check()
            # seq_q > seq_kv: the first rows keep no key (out 0, lse -inf).
            AttentionCase(self, 1, 4, 2, 300, 100, head_dim, dtype, causal="bottom-right").check()

    def test_documents(self):
        seq = 500
        ids = []
        for lengths in ((37, 100, 300, 63), (500,)):
            row = []
            for document, length in enumerate(lengths):
                row += [document] * length
            ids.append(row[:seq])
        documents = torch.tensor(ids, dtype=torch.int32, device="cuda")
        for dtype, head_dim in self.cases():
            AttentionCase(self, 2, 4, 4, seq, seq, head_dim, dtype, documents=documents).check()
            AttentionCase(self, 2, 4, 2, seq, seq, head_dim, dtype, documents=documents, causal=True).check()


@unittest.skipIf(SKIP, SKIP)
class DropoutTest(unittest.TestCase):
    def call(self, q, k, v, p, causal=0):
        """The op itself: (out, lse, rng_state)."""
        return torch.ops.fa.attention.default(q, k, v, None, None, None, causal, -1, -1, 0.0, p)

    def test_mask_is_philox_and_fraction_is_p(self):
        # q = 0: every weight is 1 / Nkv; v = I (Nkv = D): out[i, j] is the
        # weight of key j after dropout, 0 where dropped.
        batch, heads, seq_q, dim = 2, 4, 192, 64
        p = 0.3
        q = torch.zeros(batch, heads, seq_q, dim, device="cuda", dtype=torch.bfloat16)
        v = torch.eye(dim, device="cuda", dtype=torch.bfloat16).expand(batch, heads, dim, dim).contiguous()
        torch.manual_seed(7)
        out, _, rng_state = self.call(q, q[:, :, :dim].contiguous(), v, p)
        seed, offset = rng_state.tolist()
        self.assertEqual(rng_state.device.type, "cpu")
        self.assertEqual(offset, 0)
        kept = out != 0
        dropped = 1.0 - float(kept.float().mean())
        self.assertLess(abs(dropped - p), 0.02, "fraction dropped %.4f, p %.2f" % (dropped, p))
        # Every kept weight is 1 / (Nkv (1 - p)), give or take bf16 rounding.
        expected_value = ft.dropout_scale(p) / dim
        deviation = float((out[kept].double() / expected_value - 1).abs().max())
        self.assertLess(deviation, 1e-2, "kept weights are not 1 / (Nkv (1 - p))")
        expected = ft.dropout_keep(seed, offset, p, batch, heads, seq_q, dim)
        self.assertTrue(torch.equal(kept.cpu(), expected), "the kernel's mask is not Philox.h's")

    def test_forward_backward_match_fp64_with_the_mask(self):
        batch, heads, kv_heads, seq_q, seq_kv = 1, 2, 2, 96, 80
        p = 0.2
        for dtype in LOW_PRECISION:
            for head_dim in (64, 128):
                for causal in (0, 1):
                    with self.subTest(dtype=dtype, head_dim=head_dim, causal=causal):
                        case = AttentionCase(self, batch, heads, kv_heads, seq_q, seq_kv, head_dim, dtype,
                                             causal=bool(causal))
                        q, k, v = leaves(case.q, case.k, case.v)
                        out, lse, rng_state = self.call(q, k, v, p, causal)
                        out.backward(case.dout)
                        seed, offset = rng_state.tolist()
                        keep = ft.dropout_keep(seed, offset, p, batch, heads, seq_q, seq_kv).cuda()
                        q64, k64, v64 = leaves64(case.q, case.k, case.v)
                        ref, ref_lse = ft.reference_attention(q64, k64, v64, causal=bool(causal),
                                                              dropout_keep=keep, dropout_p=p)
                        ref.backward(case.dout.double())
                        # SDPA cannot take our mask, so the yardstick is PyTorch's
                        # own attention in this dtype on the same problem, mask
                        # included: the reference's operations run in bf16/f16.
                        ql, kl, vl = leaves(case.q, case.k, case.v)
                        low, _ = ft.reference_attention(ql, kl, vl, causal=bool(causal),
                                                        dropout_keep=keep, dropout_p=p)
                        low.backward(case.dout)
                        for name, ours, expected, torch_low in (
                                ("out", out, ref, low),
                                ("dq", q.grad, q64.grad, ql.grad),
                                ("dk", k.grad, k64.grad, kl.grad),
                                ("dv", v.grad, v64.grad, vl.grad)):
                            error = ft.max_error(ours, expected)
                            bar = ft.error_bar(ft.max_error(torch_low, expected), expected)
                            self.assertLessEqual(error, bar, "%s error %.3g, PyTorch's %.3g"
                                                 % (name, error, ft.max_error(torch_low, expected)))
                        self.assertLessEqual(ft.max_error(lse, ref_lse), 1e-3)

    def test_manual_seed_reproduces(self):
        q, k, v = (randn(2, 4, 128, 64, dtype=torch.bfloat16) for _ in range(3))
        results = []
        for seed in (3, 3, 4):
            torch.manual_seed(seed)
            qs, ks, vs = leaves(q, k, v)
            out = fa.attention(qs, ks, vs, dropout_p=0.25)
            out.sum().backward()
            results.append((out, qs.grad, ks.grad, vs.grad))
        for a, b in zip(results[0], results[1]):
            self.assertTrue(torch.equal(a, b))
        self.assertFalse(torch.equal(results[0][0], results[2][0]))
        # Without a reseed, the next call draws another mask.
        self.assertFalse(torch.equal(fa.attention(q, k, v, dropout_p=0.25), fa.attention(q, k, v, dropout_p=0.25)))

    def test_zero_p_is_no_dropout_and_draws_no_seed(self):
        q, k, v = (randn(2, 4, 128, 64, dtype=torch.bfloat16) for _ in range(3))
        state = torch.get_rng_state()
        out = fa.attention(q, k, v, dropout_p=0.0)
        self.assertTrue(torch.equal(state, torch.get_rng_state()))
        self.assertTrue(torch.equal(out, fa.attention(q, k, v)))
        _, _, rng_state = self.call(q, k, v, 0.0)
        self.assertEqual(rng_state.tolist(), [0, 0])


@unittest.skipIf(SKIP, SKIP)
class Float32Test(unittest.TestCase):
    # The f32 kernels multiply in TF32 (10 mantissa bits, as f16): SDPA's f16
    # error on the same inputs is their yardstick.

    def test_matches_fp64(self):
        for head_dim in (32, 64, 128):
            for causal in (False, True):
                with self.subTest(head_dim=head_dim, causal=causal):
                    case = AttentionCase(self, 2, 4, 2, 130, 150, head_dim, torch.float32, causal=causal)
                    out, lse, grads = case.ours()
                    ref_out, ref_lse, ref_grads = case.reference()
                    half = AttentionCase(self, 2, 4, 2, 130, 150, head_dim, torch.float16, causal=causal)
                    half.q, half.k, half.v, half.dout = (t.half() for t in (case.q, case.k, case.v, case.dout))
                    sdpa_out, sdpa_grads = half.sdpa()
                    half_ref_out, _, half_ref_grads = half.sdpa_reference()
                    for name, ours, ref, sdpa, sdpa_ref in zip(
                            ("out", "dq", "dk", "dv"), [out] + grads, [ref_out] + ref_grads,
                            [sdpa_out] + sdpa_grads, [half_ref_out] + half_ref_grads):
                        self.assertEqual(ours.dtype, torch.float32)
                        error = ft.max_error(ours, ref)
                        bar = ft.error_bar(ft.max_error(sdpa, sdpa_ref), ref)
                        self.assertLessEqual(error, bar, "%s error %.3g" % (name, error))
                    self.assertLessEqual(ft.max_error(lse, ref_lse), 1e-3)

    def test_gradcheck(self):
        torch.manual_seed(0)
        q, k, v = (torch.randn(1, 2, 8, 32, device="cuda", dtype=torch.float32, requires_grad=True)
                   for _ in range(3))
        for causal in (False, True):
            with self.subTest(causal=causal):
                # TF32 products: a finite difference of step eps sees errors of
                # about 1e-3 / eps, hence the large eps and tolerances (a
                # wrong sign, factor or mask still fails).
                self.assertTrue(torch.autograd.gradcheck(
                    lambda q, k, v: fa.attention(q, k, v, causal=causal), (q, k, v),
                    eps=5e-2, atol=5e-2, rtol=5e-2, fast_mode=True))


class PhiloxPortTest(unittest.TestCase):
    """The tests' Python port of Philox.h against its known answers (runs
    without PyTorch or a GPU)."""

    def test_random123_known_answers(self):
        answers = [
            ((0, 0, 0, 0), (0, 0), (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)),
            ((0xFFFFFFFF,) * 4, (0xFFFFFFFF,) * 2, (0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD)),
            ((0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344), (0xA4093822, 0x299F31D0),
             (0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1)),
        ]
        for counter, key, expected in answers:
            self.assertEqual(ft.philox4x32_10(counter, key), expected)

    def test_dropout_bits_known_values(self):
        # test/runtime/PhiloxTest.cpp's DropoutBitsMatchTheSpecificationsKnownValues.
        known = [
            (0, 0, (0, 0, 1, 0, 0), 0xE8D5),
            (0x0123456789ABCDEF, 7, (2, 3, 5, 17, 42), 0x526C),
            (0xFFFFFFFFFFFFFFFF, 0xFFFFFFFF, (1, 0, 2, 1000, 4099), 0xD2F3),
            (42, 123456, (0, 0, 1, 8, 31), 0x8614),
            (42, 123456, (0, 0, 1, 15, 24), 0xEFD2),
        ]
        for seed, offset, position, bits in known:
            self.assertEqual(ft.dropout_bits(seed, offset, *position), bits)

    @unittest.skipIf(torch is None, "PyTorch is not installed")
    def test_mask_helper_agrees_with_bits(self):
        keep = ft.dropout_keep(0x5EED, 3, 0.4, 2, 3, 40, 70)
        threshold = ft.dropout_threshold(0.4)
        for b, h, i, j in ((0, 0, 0, 0), (1, 2, 39, 69), (0, 1, 17, 42), (1, 0, 8, 33)):
            self.assertEqual(bool(keep[b, h, i, j]), ft.dropout_bits(0x5EED, 3, b, h, 3, i, j) >= threshold)


if __name__ == "__main__":
    unittest.main()
