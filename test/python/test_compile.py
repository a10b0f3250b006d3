"""torch.compile(fullgraph=True) of a two-block transformer built on
fa.layer_norm and fa.attention: no graph breaks, and the compiled model
equals eager (forward and gradients)."""

import copy
import unittest

import fa_testing as ft
from fa_testing import F, torch

import fa

SKIP = ft.skip_reason()

if torch is not None:

    class Block(torch.nn.Module):
        def __init__(self, dim, heads, dropout_p=0.0):
            super().__init__()
            self.heads = heads
            self.dropout_p = dropout_p
            self.ln1 = torch.nn.LayerNorm(dim)
            self.ln2 = torch.nn.LayerNorm(dim)
            self.qkv = torch.nn.Linear(dim, 3 * dim)
            self.proj = torch.nn.Linear(dim, dim)
            self.fc1 = torch.nn.Linear(dim, 4 * dim)
            self.fc2 = torch.nn.Linear(4 * dim, dim)

        def forward(self, x):
            batch, seq, dim = x.shape
            h = fa.layer_norm(x, (dim,), self.ln1.weight, self.ln1.bias)
            q, k, v = self.qkv(h).view(batch, seq, 3, self.heads, dim // self.heads).unbind(2)
            o = fa.attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), causal=True,
                             dropout_p=self.dropout_p if self.training else 0.0)
            x = x + self.proj(o.transpose(1, 2).reshape(batch, seq, dim))
            h = fa.layer_norm(x, dim, self.ln2.weight, self.ln2.bias)
            return x + self.fc2(F.gelu(self.fc1(h)))

    def transformer(dim=256, heads=4, dropout_p=0.0, dtype=torch.bfloat16):
        torch.manual_seed(0)
        model = torch.nn.Sequential(Block(dim, heads, dropout_p), Block(dim, heads, dropout_p))
        return model.to(device="cuda", dtype=dtype)


@unittest.skipIf(SKIP, SKIP)
class CompileTest(unittest.TestCase):
    def setUp(self):
        torch._dynamo.reset()

    def test_no_graph_breaks(self):
        model = transformer(dtype=torch.bfloat16)
        x = torch.randn(2, 128, 256, device="cuda", dtype=torch.bfloat16)
        explanation = torch._dynamo.explain(model)(x)
        self.assertEqual(explanation.graph_break_count, 0, str(explanation.break_reasons))
        self.assertEqual(explanation.graph_count, 1)

    def test_compiled_equals_eager(self):
        # f32 (the f32 kernels) leaves Inductor's fusions as the only
        # difference; bf16 adds their rounding.
        for dtype, tolerance in ((torch.float32, 1e-4), (torch.bfloat16, 3e-2)):
            with self.subTest(dtype=dtype):
                torch._dynamo.reset()
                eager = transformer(dim=256, heads=4, dtype=dtype)
                compiled_model = copy.deepcopy(eager)
                compiled = torch.compile(compiled_model, fullgraph=True)
                x = torch.randn(2, 100, 256, device="cuda", dtype=dtype)
                y_eager = eager(x)
                y_compiled = compiled(x)
                dy = torch.randn_like(y_eager)
                y_eager.backward(dy)
                y_compiled.backward(dy)
                self.assert_close(y_compiled, y_eager, tolerance, "output")
                for (name, p_eager), p_compiled in zip(eager.named_parameters(), compiled_model.parameters()):
                    self.assert_close(p_compiled.grad, p_eager.grad, tolerance, name)

    def test_compiled_dropout_draws_a_seed_per_call(self):
        model = transformer(dropout_p=0.2, dtype=torch.bfloat16)
        compiled = torch.compile(model, fullgraph=True)
        x = torch.randn(2, 64, 256, device="cuda", dtype=torch.bfloat16)
        torch.manual_seed(5)
        first = compiled(x)
        second = compiled(x)
        self.assertFalse(torch.equal(first, second), "the compiled graph baked in a dropout seed")
        torch.manual_seed(5)
        self.assertTrue(torch.equal(first, compiled(x)))

    def assert_close(self, actual, expected, tolerance, what):
        scale = max(1.0, float(expected.abs().max()))
        error = float((actual.double() - expected.double()).abs().max())
        self.assertLessEqual(error, tolerance * scale, "%s: compiled differs from eager by %.3g" % (what, error))


if __name__ == "__main__":
    unittest.main()
