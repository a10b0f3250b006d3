"""fa.layer_norm against F.layer_norm in fp64, with PyTorch's own error in
the same dtype as the yardstick (ours <= 2 x theirs + a tiny floor)."""

import unittest

import fa_testing as ft
from fa_testing import F, torch

import fa

SKIP = ft.skip_reason()
DTYPES = () if torch is None else (torch.bfloat16, torch.float16, torch.float32)


@unittest.skipIf(SKIP, SKIP)
class LayerNormTest(unittest.TestCase):
    def check(self, shape, dtype, affine=True, bias=True, eps=1e-5, param_dtype=None):
        torch.manual_seed(sum(shape))
        cols = shape[-1]
        param_dtype = param_dtype or dtype
        x = (torch.randn(*shape, device="cuda") * 2 + 0.5).to(dtype)
        weight = (1 + 0.5 * torch.randn(cols, device="cuda")).to(param_dtype) if affine else None
        b = (0.1 * torch.randn(cols, device="cuda")).to(param_dtype) if bias else None
        dy = torch.randn(*shape, device="cuda").to(dtype)
        label = "%s %s weight %s bias %s" % (dtype, shape, affine, bias)

        def run(function, dtype_of_run):
            xs = x.detach().to(dtype_of_run).requires_grad_(True)
            ws = None if weight is None else weight.detach().to(dtype_of_run if function is F.layer_norm else param_dtype).requires_grad_(True)
            bs = None if b is None else b.detach().to(dtype_of_run if function is F.layer_norm else param_dtype).requires_grad_(True)
            y = function(xs, (cols,), ws, bs, eps)
            y.backward(dy.to(dtype_of_run))
            return [y.detach(), xs.grad] + [t.grad for t in (ws, bs) if t is not None]

        ours = run(fa.layer_norm, dtype)
        theirs = run(F.layer_norm, dtype)
        reference = run(F.layer_norm, torch.float64)
        self.assertEqual(ours[0].shape, x.shape)
        self.assertEqual(ours[0].dtype, dtype)
        if weight is not None:
            self.assertEqual(ours[2].dtype, param_dtype)
        for name, a, t, r in zip(("y", "dx", "dweight", "dbias"), ours, theirs, reference):
            self.assertTrue(bool(torch.isfinite(a).all()), "non-finite %s: %s" % (name, label))
            error = ft.max_error(a, r)
            torch_error = ft.max_error(t, r)
            if param_dtype != dtype and name in ("dweight", "dbias"):
                # Our f32 parameter gradients against PyTorch's in x's dtype.
                torch_error = ft.max_error(t.float(), r)
            bar = ft.error_bar(torch_error, r)
            self.assertLessEqual(error, bar, "%s: error %.3g, PyTorch's %.3g: %s" % (name, error, torch_error, label))

    def test_widths(self):
        for dtype in DTYPES:
            for cols in (256, 768, 1000, 1024, 2048, 4096, 4097, 8192, 10000):
                for rows in ((1,), (7,), (3, 111)):
                    with self.subTest(dtype=dtype, cols=cols, rows=rows):
                        self.check(rows + (cols,), dtype)

    def test_without_weight_or_bias(self):
        for dtype in DTYPES:
            for affine, bias in ((False, False), (True, False), (False, True)):
                with self.subTest(dtype=dtype, affine=affine, bias=bias):
                    self.check((33, 768), dtype, affine=affine, bias=bias)

    def test_eps(self):
        self.check((16, 1024), torch.bfloat16, eps=1e-2)

    def test_float32_weights_with_low_precision_x(self):
        # Weights are cast to x's dtype for the kernels; their gradients come
        # back in their own dtype (f32 here), computed in f32.
        for dtype in (torch.bfloat16, torch.float16):
            with self.subTest(dtype=dtype):
                self.check((64, 1000), dtype, param_dtype=torch.float32)

    def test_noncontiguous_input(self):
        x = torch.randn(768, 40, device="cuda", dtype=torch.bfloat16).t()
        self.assertFalse(x.is_contiguous())
        self.assertTrue(torch.equal(fa.layer_norm(x, 768), fa.layer_norm(x.contiguous(), 768)))

    def test_empty_input(self):
        x = torch.empty(0, 512, device="cuda", dtype=torch.bfloat16, requires_grad=True)
        y = fa.layer_norm(x, 512)
        y.sum().backward()
        self.assertEqual(y.shape, x.shape)


if __name__ == "__main__":
    unittest.main()


@unittest.skipIf(SKIP, SKIP)
class LayerNormFastPathTest(unittest.TestCase):
    def test_eager_fast_path_equals_the_custom_op(self):
        # Plain eager calls skip the custom-op layers (ops.py): the same
        # launches, so outputs and gradients are bitwise equal.
        torch.manual_seed(5)
        x0 = torch.randn(300, 768, device="cuda", dtype=torch.bfloat16)
        w0 = torch.randn(768, device="cuda")
        b0 = torch.randn(768, device="cuda")
        dy = torch.randn(300, 768, device="cuda", dtype=torch.bfloat16)
        x, w, b = (t.clone().requires_grad_() for t in (x0, w0, b0))
        y = fa.layer_norm(x, (768,), w, b)
        y.backward(dy)
        xo, wo, bo = (t.clone().requires_grad_() for t in (x0, w0, b0))
        y_op = torch.ops.fa.layer_norm.default(xo, wo, bo, 1e-5)[0]
        y_op.backward(dy)
        for name, fast, op in (("y", y, y_op), ("dx", x.grad, xo.grad), ("dweight", w.grad, wo.grad),
                               ("dbias", b.grad, bo.grad)):
            self.assertTrue(torch.equal(fast, op), name)
