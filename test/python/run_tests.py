#!/usr/bin/env python3
"""Runs the fa package's tests (stdlib unittest; no pytest needed).

  python3 test/python/run_tests.py [-v] [-k PATTERN] [--failfast]

Exit status: 0 when every test passed, 1 on a failure, 77 (with a line
"SKIPPED: <reason>") when the tests cannot run here: no PyTorch, no CUDA, or
libfa_runtime.so or the kernel library not found. The package comes from
PYTHONPATH or an install, else from <repo>/python; the run-time files from
FA_RUNTIME_LIBRARY and FA_KERNELS, else <repo>/build (python/README.md).
"""

import argparse
import os
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
SKIP_STATUS = 77


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-v", "--verbose", action="store_true", help="name every test as it runs")
    parser.add_argument("-k", dest="patterns", action="append", default=[],
                        help="run only tests whose name contains PATTERN (repeatable)")
    parser.add_argument("--failfast", action="store_true", help="stop at the first failure")
    args = parser.parse_args()

    sys.path.insert(0, HERE)
    import fa_testing  # puts <repo>/python on sys.path if fa is not importable

    reason = fa_testing.skip_reason()
    if reason is not None:
        print("SKIPPED: " + reason)
        return SKIP_STATUS

    import fa
    import torch

    print("fa from %s; torch %s on %s; library %s; kernels %s" % (
        os.path.dirname(fa.__file__), torch.__version__, torch.cuda.get_device_name(),
        fa.runtime_library(), fa.kernel_dir()))
    loader = unittest.TestLoader()
    if args.patterns:
        loader.testNamePatterns = ["*%s*" % pattern for pattern in args.patterns]
    suite = loader.discover(HERE, pattern="test_*.py", top_level_dir=HERE)
    runner = unittest.TextTestRunner(verbosity=2 if args.verbose else 1, failfast=args.failfast)
    result = runner.run(suite)
    return 0 if result.wasSuccessful() else 1


if __name__ == "__main__":
    sys.exit(main())
