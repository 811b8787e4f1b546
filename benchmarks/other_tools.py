"""Other tools' published rules for "did this kernel use tensor cores?", reproduced from their source.

Each function takes a kernel name and answers "yes" or "no" (these tools have no "unknown").
Each reproduces the tool's rule as written in its repository; the docstring says where it lives,
at which commit the file was read, and quotes the list. The name handed over is the one the tool
would itself see (the demangled kernel name in a trace or an Nsight Systems export).
"""
from __future__ import annotations

import re
from collections.abc import Callable

# ---------------------------------------------------------------------------------------------
# TensorBoard profile plugin / XProf
# ---------------------------------------------------------------------------------------------
XPROF_PATTERNS: tuple[str, ...] = (
    "16816", "c1688", "conv1x1", "conv2d_c1_k1", "dgrad_1x1_stride_2x2", "direct_group",
    "first_layer_wgrad_kernel", "h1688", "h884", "hmma", "i16832", "i8816", "s884", "s1688",
    "xmma_gemm", "xmma_implicit_gemm", "xmma_sparse_conv", "xmma_sparse_gemm",
    "xmma_warp_specialized_implicit_gemm",
)


def xprof(name: str) -> str:
    """TensorBoard profile plugin / XProf "Kernel Stats": ``IsKernelUsingTensorCore``.

    Source (identical list in both places):

    - ``openxla/xprof`` ``xprof/utils/kernel_stats_utils.cc`` @ 0a2614db762c7901ffdc19310459abbce0a9a384
    - ``tensorflow/tensorflow`` ``tensorflow/core/profiler/utils/kernel_stats_utils.cc``
      @ 1ac4593b7859aac16216790b66e6b067d51f737c (where the TensorBoard plugin's C++ lived before xprof)

    Quoted::

        // A list of patterns to help determine if a kernel uses Tensor Core.
        // A kernel uses Tensor Core if its kernel name contains any of these patterns.
        // Some examples of kernel names: volta_h884gemm, turing_fp16_s1688cudnn_fp16
        constexpr absl::string_view kTensorCoreKernelNamePatterns[] = {
            "16816", "c1688", "conv1x1", "conv2d_c1_k1", "dgrad_1x1_stride_2x2", "direct_group",
            "first_layer_wgrad_kernel", "h1688", "h884", "hmma", "i16832", "i8816", "s884", "s1688",
            "xmma_gemm", "xmma_implicit_gemm", "xmma_sparse_conv", "xmma_sparse_gemm",
            "xmma_warp_specialized_implicit_gemm"};

        bool IsKernelUsingTensorCore(absl::string_view kernel_name) {
          for (absl::string_view pattern : kTensorCoreKernelNamePatterns) {
            if (absl::StrContains(kernel_name, pattern)) return true;
          }
          return false;
        }

    ``absl::StrContains`` is a case-sensitive substring test.
    """
    return "yes" if any(p in name for p in XPROF_PATTERNS) else "no"


# ---------------------------------------------------------------------------------------------
# PyTorch TensorBoard plugin (torch-tb-profiler) — a copy of NVIDIA PyProf's TC_Whitelist
# ---------------------------------------------------------------------------------------------
TB_PLUGIN_ALLOWLIST: tuple[str, ...] = (
    "h884", "s884", "h1688", "s1688", "hmma", "i8816", "16816",
    "dgrad_1x1_stride_2x2", "first_layer_wgrad_kernel", "conv1x1",
    "conv2d_c1_k1", "direct_group", "xmma_implicit_gemm",
    "xmma_sparse_conv", "xmma_warp_specialized_implicit_gemm",
    "xmma_gemm", "xmma_sparse_gemm", "c1688",
)


def torch_tb_profiler(name: str) -> str:
    """torch-tb-profiler (PyTorch Profiler TensorBoard plugin): ``TC_Allowlist``.

    Source: ``pytorch/kineto`` ``tb_plugin/torch_tb_profiler/profiler/tensor_core.py``
    @ 5b5536847026c5661ba8002d5e2339c8aef1e0e9 (same list @ 0dfcf91564851da4fec7be0a16c8adfbbbfe5a63),
    used by ``tensor_cores_parser.py`` as ``event.name in TC_Allowlist`` for every kernel event.
    There is no denylist: only ``TC_Allowlist`` (kernel names, substring) and ``TC_OP_Allowlist``
    (operator names that are *eligible*, which says nothing about a kernel). Quoted::

        class TC_Allowlist(metaclass=TC_Allowlist_Meta):
            # Refer to https://github.com/NVIDIA/PyProf/blob/fd1b2902e3306119eee40ba6b6e8b2f816920c29/pyprof/prof/
            #   tc.py#L19   (one line in the original)
            allowlist = ['h884', 's884', 'h1688', 's1688', 'hmma', 'i8816', '16816',
                         'dgrad_1x1_stride_2x2', 'first_layer_wgrad_kernel', 'conv1x1',
                         'conv2d_c1_k1', 'direct_group', 'xmma_implicit_gemm',
                         'xmma_sparse_conv', 'xmma_warp_specialized_implicit_gemm',
                         'xmma_gemm', 'xmma_sparse_gemm', 'c1688']

            @classmethod
            def __contains__(cls, item):
                # If kernel name contains substring equal to any one in allowlist, then it uses tensor core.
                for pattern in cls.allowlist:
                    if pattern in item:
                        return True
                return False

    The list is NVIDIA PyProf's ``TC_Whitelist`` (``NVIDIA/PyProf`` ``pyprof/prof/tc.py``
    @ 7239fb6d54ad4d1ea60b29c60d40d857b73b5ffd) verbatim, so this function stands for both tools.
    It is XProf's list without ``"i16832"``.
    """
    return "yes" if any(p in name for p in TB_PLUGIN_ALLOWLIST) else "no"


# ---------------------------------------------------------------------------------------------
# nsys-ai
# ---------------------------------------------------------------------------------------------
NSYS_AI_TC_ACTIVE = re.compile(
    r"(xmma|mma_sync|16816|1688|884|ampere_bf16|sm80_tensor_op|tensorop|flash|nvjet)")


def nsys_ai(name: str) -> str:
    """nsys-ai: the ``uses_tc`` column its Parquet cache computes for every kernel.

    Source: ``GindaChen/nsys-ai`` ``src/nsys_ai/parquet_cache.py``, the stored version with
    ``_CACHE_VERSION = 17`` ("the Tensor Core name patterns now recognise cuBLAS's Hopper ``nvjet``
    GEMMs"); the search index did not show that version's commit. Quoted::

        _TC_ELIGIBLE_PATTERN = "'(gemm|conv|linear|attention|matmul|flash|nvjet)'"
        _TC_ACTIVE_PATTERN = (
            "'(xmma|mma_sync|16816|1688|884|ampere_bf16|sm80_tensor_op|tensorop|flash|nvjet)'"
        )
        ...
        CAST(CASE WHEN regexp_matches(lower(COALESCE(d.value, s.value, '')), {_TC_ACTIVE_PATTERN})
             THEN 1 ELSE 0 END AS INTEGER) AS uses_tc

    i.e. a DuckDB ``regexp_matches`` (unanchored search) over the lower-cased demangled name.
    ``uses_tc`` is the verdict the skills report (``tensor_core_usage``: ``tc_active_ns``;
    ``top_kernels``: ``SUM(uses_tc) > 0 AS tc_active``); ``is_tc_eligible`` only decides which
    kernels ``tensor_core_usage`` lists. Earlier versions of the same file had
    ``'(xmma|mma_sync|16816|1688|884|ampere_bf16|sm80_tensor_op)'`` and then
    ``'(...|sm80_tensor_op|tensorop|flash)'`` (no ``nvjet``).
    """
    return "yes" if NSYS_AI_TC_ACTIVE.search(name.lower()) else "no"


# ---------------------------------------------------------------------------------------------
# apex.pyprof (NVIDIA apex, later NVIDIA/PyProf)
# ---------------------------------------------------------------------------------------------
PYPROF_TC_GEMMS: tuple[str, ...] = ("884gemm", "1688gemm")
PYPROF_TC_CONVS: tuple[str, ...] = ("884cudnn", "1688cudnn")


def apex_pyprof(name: str) -> str:
    """apex.pyprof ``prof`` "TC" column: the GEMM and convolution ``tc()`` methods, by kernel name.

    Source: ``NVIDIA/apex`` @ 753c427a6b694a1ff680ff8b22720e35977818bf (after apex PR #534,
    "Fixed tensor core use check for Turing"):

    - ``apex/pyprof/prof/blas.py`` (``Addmm``, ``Bmm``, ``Matmul``, ``Mm``)::

          TC_GEMMS = ["884gemm", "1688gemm"]
          def tc(self):
              for s in TC_GEMMS:
                  if s in self.name:
                      return 1
              return 0

    - ``apex/pyprof/prof/conv.py`` (``Conv``)::

          def tc(self):
              for s in ["884cudnn", "1688cudnn"]:
                  if s in self.name:
                      return 1
              return "-"

    Every other op class returns ``"-"``. ``NVIDIA/PyProf`` ``pyprof/prof/blas.py``
    @ fd39edca746eed1282b6e30e3ce1007714019e6f keeps the same ``TC_GEMMS``. pyprof only asks a
    GEMM/conv op's kernels, so as a name rule this is the union of the two lists: an upper bound
    on what pyprof can mark.
    """
    return "yes" if any(p in name for p in PYPROF_TC_GEMMS + PYPROF_TC_CONVS) else "no"


#: Display name → rule, in report order.
TOOLS: dict[str, Callable[[str], str]] = {
    "xprof/tensorboard": xprof,
    "torch-tb-profiler": torch_tb_profiler,
    "nsys-ai": nsys_ai,
    "apex.pyprof": apex_pyprof,
}
