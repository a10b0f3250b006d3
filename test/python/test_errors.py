"""Every refusal of fa.attention / fa.layer_norm: raised before any kernel
runs, as UnsupportedError (what the library cannot run) or ValueError
(malformed arguments), with the fix named in the message."""

import unittest

import fa_testing as ft
from fa_testing import torch

import fa

SKIP = ft.skip_reason()
TORCH = ft.torch_reason()


@unittest.skipIf(TORCH, TORCH)
class HostErrorTest(unittest.TestCase):
    """Refusals that need PyTorch but no GPU."""

    def test_cpu_tensors(self):
        q = torch.randn(1, 2, 16, 64, dtype=torch.bfloat16)
        with self.assertRaisesRegex(fa.UnsupportedError, "move q, k, v to a CUDA device"):
            fa.attention(q, q, q)
        with self.assertRaisesRegex(fa.UnsupportedError, "move x to a CUDA device"):
            fa.layer_norm(q, 64)

    def test_float64(self):
        q = torch.randn(1, 2, 16, 64, dtype=torch.float64)
        with self.assertRaisesRegex(fa.UnsupportedError, r"bf16, f16 or f32: cast with \.to\(torch\.bfloat16\)"):
            fa.attention(q, q, q)
        with self.assertRaisesRegex(fa.UnsupportedError, r"cast with \.to\(torch\.bfloat16\)"):
            fa.layer_norm(q, 64)

    def test_unsupported_is_a_value_error(self):
        self.assertTrue(issubclass(fa.UnsupportedError, ValueError))
        self.assertTrue(issubclass(fa.UnsupportedError, fa.FaError))
        self.assertTrue(issubclass(fa.FaError, RuntimeError))

    def test_normalized_shape_not_the_last_dim(self):
        x = torch.randn(4, 8, 64)
        with self.assertRaisesRegex(ValueError, "last dim only"):
            fa.layer_norm(x, (8, 64))
        with self.assertRaisesRegex(ValueError, "last dim only"):
            fa.layer_norm(x, 8)


@unittest.skipIf(SKIP, SKIP)
class DeviceErrorTest(unittest.TestCase):
    def tensors(self, batch=1, heads=4, kv_heads=4, seq=64, head_dim=64, dtype=None):
        dtype = dtype or torch.bfloat16
        q = torch.randn(batch, heads, seq, head_dim, device="cuda", dtype=dtype)
        k = torch.randn(batch, kv_heads, seq, head_dim, device="cuda", dtype=dtype)
        return q, k, k.clone()

    def test_head_dim_not_in_the_library(self):
        q, k, v = self.tensors(head_dim=48)
        with self.assertRaises(fa.UnsupportedError) as caught:
            fa.attention(q, k, v)
        self.assertIn("FA_ERROR_UNSUPPORTED", str(caught.exception))
        self.assertIn("64", str(caught.exception))  # the head dims that exist

    def test_mismatched_dtypes(self):
        q, k, v = self.tensors()
        with self.assertRaisesRegex(ValueError, "one dtype"):
            fa.attention(q, k.half(), v)

    def test_mismatched_devices(self):
        q, k, v = self.tensors()
        with self.assertRaisesRegex(ValueError, "one device"):
            fa.attention(q, k.cpu(), v)

    def test_wrong_rank(self):
        q, k, v = self.tensors()
        with self.assertRaisesRegex(ValueError, r"4 dims.*transpose\(1, 2\)"):
            fa.attention(q[0], k, v)

    def test_mismatched_shapes(self):
        q, k, v = self.tensors()
        with self.assertRaisesRegex(ValueError, "head_dim"):
            fa.attention(q, k[..., :32], v[..., :32])

    def test_kv_heads_not_dividing_heads(self):
        q, k, v = self.tensors(heads=4, kv_heads=3)
        with self.assertRaisesRegex(ValueError, "must divide heads"):
            fa.attention(q, k, v)

    def test_bad_sinks(self):
        q, k, v = self.tensors()
        for sinks in (torch.zeros(4, device="cuda", dtype=torch.bfloat16),
                      torch.zeros(3, device="cuda"), torch.zeros(1, 4, device="cuda")):
            with self.subTest(sinks=(sinks.dtype, tuple(sinks.shape))):
                with self.assertRaisesRegex(ValueError, r"sinks must be a float32 tensor of shape \[heads\]"):
                    fa.attention(q, k, v, sinks=sinks)

    def test_bad_alibi_slopes(self):
        q, k, v = self.tensors()
        with self.assertRaisesRegex(ValueError, "alibi_slopes must be a float32"):
            fa.attention(q, k, v, alibi_slopes=torch.ones(4, device="cuda", dtype=torch.float64))

    def test_negative_window(self):
        q, k, v = self.tensors()
        with self.assertRaisesRegex(ValueError, "negative bound"):
            fa.attention(q, k, v, window=(-1, 0))
        with self.assertRaisesRegex(ValueError, r"\(left, right\) pair"):
            fa.attention(q, k, v, window=5)

    def test_bad_dropout_p(self):
        q, k, v = self.tensors()
        for p in (-0.1, 1.0, 1.5):
            with self.subTest(p=p):
                with self.assertRaisesRegex(ValueError, r"dropout_p must be in \[0, 1\)"):
                    fa.attention(q, k, v, dropout_p=p)

    def test_bad_causal_and_softcap(self):
        q, k, v = self.tensors()
        with self.assertRaisesRegex(ValueError, "bottom-right"):
            fa.attention(q, k, v, causal="bottom_right")
        with self.assertRaisesRegex(ValueError, "softcap"):
            fa.attention(q, k, v, softcap=0.0)

    def test_document_ids(self):
        q, k, v = self.tensors(batch=2, seq=64)
        with self.assertRaisesRegex(ValueError, r"int32.*\.to\(torch\.int32\)"):
            fa.attention(q, k, v, document_ids=torch.zeros(2, 64, device="cuda", dtype=torch.int64))
        with self.assertRaisesRegex(ValueError, r"\[batch, seq\]"):
            fa.attention(q, k, v, document_ids=torch.zeros(2, 63, device="cuda", dtype=torch.int32))
        decreasing = torch.zeros(2, 64, device="cuda", dtype=torch.int32)
        decreasing[1, :10] = 1
        with self.assertRaisesRegex(ValueError, "non-decreasing"):
            fa.attention(q, k, v, document_ids=decreasing)
        q2, k2, v2 = self.tensors(batch=2, seq=64)
        with self.assertRaisesRegex(ValueError, "seq_q == seq_kv"):
            fa.attention(q2[:, :, :32], k2, v2, document_ids=torch.zeros(2, 32, device="cuda", dtype=torch.int32))

    def test_variant_combination_not_in_the_library(self):
        q, k, v = self.tensors()
        with self.assertRaises(fa.UnsupportedError):
            fa.attention(q, k, v, softcap=10.0, alibi_slopes=torch.ones(4, device="cuda"))

    def test_float32_variant_not_in_the_library(self):
        q, k, v = self.tensors(dtype=torch.float32)
        with self.assertRaises(fa.UnsupportedError):
            fa.attention(q, k, v, window=(8, 8))

    def test_backward_without_kernels_fails_at_backward_time(self):
        # Dropout has no head_dim 256 backward: the forward runs, the backward
        # raises UnsupportedError naming what exists.
        q, k, v = (t.requires_grad_(True) for t in self.tensors(head_dim=256))
        out = fa.attention(q, k, v, dropout_p=0.1)
        forward, backward = fa.attention_kernels(q, k, v, dropout_p=0.1)
        self.assertTrue(forward)
        self.assertEqual(backward, "")
        with self.assertRaisesRegex(fa.UnsupportedError, "no backward kernel"):
            out.sum().backward()

    def test_layer_norm_arguments(self):
        x = torch.randn(4, 64, device="cuda", dtype=torch.bfloat16)
        with self.assertRaisesRegex(ValueError, r"weight must be a tensor \[64\]"):
            fa.layer_norm(x, 64, torch.ones(32, device="cuda"))
        with self.assertRaisesRegex(ValueError, "eps"):
            fa.layer_norm(x, 64, eps=0.0)
        with self.assertRaisesRegex(ValueError, "move it"):
            fa.layer_norm(x, 64, torch.ones(64))


if __name__ == "__main__":
    unittest.main()
