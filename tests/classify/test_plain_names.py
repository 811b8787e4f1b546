"""Issue 45: names whose evidence is plain but read 'unknown' (MAGMA's fp32 GEMM, Fermi's complex GEMM, MXNet's
optimizer kernels, cuBLAS' DFMA fp64 GEMMs), fp64 work decided by the GPU (no fp64 tensor cores = CUDA cores), the
precision of PyTorch's fp32 RNG kernel, and the reasons of cuDNN's batch-norm and layout kernels. Real names, each
with where it was found; the labelled ones are in benchmarks/labels/public_wild3.tsv."""
from __future__ import annotations

import pytest

from benchmarks.accuracy import LABELS_DIR, load_labels
from nvprof_wrap.classify import classify
from nvprof_wrap.classify.rank import decide, has_dmma
from nvprof_wrap.pipeline import analyze
from tests._paths import FIXTURES

WILD3 = FIXTURES / "wild3"


def _j(*parts: str) -> str:
    """A long real name, written in pieces."""
    return "".join(parts)


LU = ["simple_lu(int, int, double*)",  # wild3/nvprof-summary-lu-v100-hpc2n.md (a V100)
      _j("void kernel_trsm_l_mul32<double, int=8, bool=0, bool=0, bool=0, bool=1>(int, int, double const *, ",
         "double const *, int, double*, int, double, int)"),
      _j("void trsm_left_kernel<double, int=256, int=4, bool=1, bool=0, bool=0, bool=0, bool=1>(",
         "cublasTrsmParams<double>, double, double const *, int)"),
      _j("void gemm_kernel2x2_tile_multiple_core<double, bool=1, bool=0, bool=0, bool=0, bool=0>(double*, ",
         "double const *, double const *, int, int, int, int, int, int, double*, double*, double, double, int)")]
RNG = ("void at::native::(anonymous namespace)::distribution_elementwise_grid_stride_kernel<float, 4, void at::native::"
       "templates::cuda::normal_and_transform<float, float, at::CUDAGeneratorImpl *, void at::native::templates::cuda::"
       "normal_kernel<at::CUDAGeneratorImpl *>(const at::TensorBase &, double, double, T1)::[lambda() (instance 1)]::"
       "operator ()() const::[lambda() (instance 2)]::operator ()() const::[lambda(float) (instance 1)]>(at::"
       "TensorIteratorBase &, T3, T4)::[lambda(curandStatePhilox4_32_10 *) (instance 2)]>(long, at::PhiloxCudaState, "
       "T3, T4)")  # fixtures/h200/ncu_tensor_metrics.csv: torch.randn in fp32 on the H200


def test_public_wild3_labels_are_decided_and_right():
    labels = load_labels(LABELS_DIR)["public_wild3.tsv"]
    assert len(labels) == 10 and all(lab.truth == "no" for lab in labels)
    assert [(classify(lab.name).tensor_core, lab.name[:60]) for lab in labels
            if classify(lab.name).tensor_core != lab.truth] == []


@pytest.mark.parametrize("name, precision, rule", [
    (_j("void magma_sgemmEx_kernel<float, float, float, (bool)1, (bool)0, (int)6, (int)4, (int)6, (int)3, (int)4>(",
        "int, int, int, BatchedTensor, int, BatchedTensor, int, BatchedTensor, int, int, int, float const*, ",
        "float const*, float, float, int)"), "fp32", "magma-sgemm"),
    (_j("void fermiCgemm_v3_kernel<bool=1, bool=0, bool=0, bool=0, int=5, int=5, int=3, int=8, int=8>(int, int, int, ",
        "float2 const *, int, float2 const *, int, float2*, int, int, int, float2 const *, float2 const *, float2, ",
        "float2, int)"), "fp32", "fermi-complex-gemm"),
    (_j("_ZN5mxnet2op8mxnet_op20mxnet_generic_kernelINS0_14MultiSGDKernelIfLb0ELb0EEEJNS0_19MultiSGDKernelParamIff",
        "EENS_9OpReqTypeEEEEviDpT0_"), "", "mxnet-operator-kernel"),
    ("volta_dgemm_128x64_nn", "fp64", "dgemm-cuda-cores"),
    ("ampere_dgemm_64x64_nn", "fp64", "dgemm-cuda-cores"),
    (_j("void cudnn::bn_fw_tr_1C11_kernel_NCHW<float, float, 512, true, 1>(cudnnTensorStruct, float const*, ",
        "cudnnTensorStruct, float*, float const*, float const*, float, float, float*, float*, float*, float*, float, ",
        "float)"), "fp32", "cudnn-batch-norm"),
    (_j("void cudnn::ops::nchwToNhwcKernel<float, float, float, false, true, (cudnnKernelDataType_t)0>(cudnn::ops::",
        "nchw2nhwc_params_t<float>, float const*, float*)"), "fp32", "cudnn-layout"),
    (RNG, "fp32", "framework-kernel"),
])
def test_plain_names_are_decided(name, precision, rule):
    c = classify(name)
    assert (c.tensor_core, c.precision, c.rule) == ("no", precision, rule)
    assert "RNN element-wise" not in c.reason


def test_the_fp64_tensor_core_kernel_stays_yes():
    c = classify("sm90_xmma_gemm_f64f64_f64f64_f64_nn_n_tilesize64x64x16_stage4_warpsize2x2x1_tensor16x8x8_kernel")
    assert (c.tensor_core, c.precision) == ("yes", "fp64")


@pytest.mark.parametrize("cc, gpu, verdict", [
    (7.0, "Tesla V100-SXM2-16GB", "no"), (7.5, None, "no"), (8.6, None, "no"), (8.9, None, "no"), (12.0, None, "no"),
    (None, "NVIDIA GeForce RTX 3090", "no"),
    (8.0, "A100-PG509-200", "unknown"), (9.0, "NVIDIA H200", "unknown"), (10.0, None, "unknown"),
    (None, None, "unknown")])
@pytest.mark.parametrize("name", LU)
def test_fp64_work_is_cuda_cores_where_the_gpu_has_no_dmma(name, cc, gpu, verdict):
    """Without fp64 tensor cores (all but A100, H100/H200 and B200-class GPUs) fp64 work runs on CUDA cores; with
    them, an fp64 GEMM or solver whose name says no instruction may use DMMA: unknown, never a wrong no."""
    v = decide(classify(name), cc, gpu_name=gpu)
    assert v.tensor_core == verdict
    if verdict == "no":
        assert v.reason.startswith("no: fp64 on CUDA cores") and v.evidence == "device"


def test_a_double_scalar_beside_floats_is_not_fp64_work():
    v = decide(classify("void my_gemm_kernel(float const*, float*, double, int)"), 8.6)
    assert v.tensor_core == "unknown"
    assert [has_dmma(cc) for cc in (7.0, 8.0, 8.6, 8.7, 8.9, 9.0, 10.0, 10.3, 12.0)] == [
        False, True, False, False, False, True, True, True, False]


@pytest.mark.skipif(not WILD3.is_dir(), reason="the shared fixtures' wild3 folder is absent")
def test_the_lu_run_reads_its_dgemms_as_cuda_cores():
    """hpc2n/gpu-course LU solutions on a V100 (the capture names no GPU): the cuBLAS volta_dgemm kernels are DFMA
    whatever the GPU; the hand-written and trsm fp64 kernels stay unknown, since the capture does not say the GPU."""
    rep = analyze(WILD3 / "nvprof-summary-lu-v100-hpc2n.md")
    verdicts = {k.name: k.tensor_core for k in rep.kernels}
    assert verdicts["volta_dgemm_128x64_nn"] == verdicts["volta_dgemm_64x64_nn"] == "no"
    assert verdicts["simple_lu(int, int, double*)"] == "unknown"
    assert {k.precision for k in rep.kernels if k.name != "dtrsv_init(int*)"} == {"fp64"}
