# lit configuration for the fa compiler's FileCheck tests.
import os
import shutil

import lit.formats

config.name = "fa"
config.test_format = lit.formats.ShTest(execute_external=True)
config.suffixes = [".mlir"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.fa_obj_root, "test")
config.excludes = ["CMakeLists.txt", "lit.cfg.py", "lit.site.cfg.py", "unit", "runtime"]

config.environment["PATH"] = os.pathsep.join(
    [config.fa_tools_dir, config.llvm_tools_dir, config.environment.get("PATH", "")]
)
config.substitutions.append(("%fa_src_root", config.fa_src_root))
config.substitutions.append(("%fa_obj_root", config.fa_obj_root))

# Tests that assemble generated PTX need ptxas from the CUDA toolkit.
ptxas = shutil.which("ptxas", path=os.pathsep.join([config.cuda_bin_dir, "/usr/local/cuda/bin"]))
if ptxas:
    config.available_features.add("ptxas")
    config.substitutions.append(("%ptxas", ptxas))
