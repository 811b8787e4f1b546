"""Kernels the counter tool and the timeline spell apart (text/names.spelling, classify/counters.alike): Nsight
Compute and Nsight Systems wrote 13 of one H200 job's 24 names differently (the bundled torch_ops sample), so their
counters attached to nothing. One kernel's two spellings are matched; two kernels that share a spelling are not."""
from __future__ import annotations

import csv
import json

import pytest

from nvprof_wrap.classify.counters import alike
from nvprof_wrap.readers import read
from nvprof_wrap.text.names import parameters_agree, spelling, template_parameters
from tests._paths import ROOT

SAMPLE = ROOT / "nvprof_wrap" / "samples" / "torch_ops"
NCU_ADD = ("void at::vectorized_elementwise_kernel<8, at::CUDAFunctor_add<c10::Half>, "
           "std::array<char *, 3>>(int, T2, T3)")
NSYS_ADD = ("void at::native::vectorized_elementwise_kernel<(int)8, at::native::CUDAFunctor_add<c10::Half>, "
            "std::array<char *, (unsigned long)3>>(int, T2, T3)")


def _ncu_names() -> set[str]:
    lines = (SAMPLE / "ncu_tensor_metrics.csv").read_text().splitlines()
    return {row["Kernel Name"] for row in csv.DictReader(line for line in lines if line.startswith('"'))}


def test_each_of_the_samples_ncu_names_is_one_of_its_timelines_kernels():
    """Every one of the ncu export's 24 names is the name, or the spelling, of exactly one kernel of the nsys capture
    of the same job; 13 only by their spelling."""
    counted = _ncu_names()
    timeline = [(1, k.name) for k in read(SAMPLE / "nsys_torch_ops.sqlite").kernels]
    matched = alike(counted, timeline)
    ran = {name for _c, name in timeline}
    assert len(counted) == 24 and len(counted - ran) == 13
    assert set(matched.values()) == counted - ran and len(matched) == 13
    assert matched[NSYS_ADD] == NCU_ADD
    for ours, theirs in matched.items():
        assert spelling(ours) == spelling(theirs) and ours != theirs


def test_bool_and_anonymous_namespaces_spell_alike():
    assert spelling("void k<(bool)1, (anonymous namespace)::Op>(int)") == spelling("void k<true, <unnamed>::Op>(int)")
    assert spelling("void k<(int)-4>()") == spelling("void k<-4>()")
    assert spelling("void at::native::lpnorm_cleanup<float, (at::native::NormType)1, float, (bool)1, float>(const T5 *"
                    ", at::native::TensorListAddresses, int)") == \
        spelling("void native::lpnorm_cleanup<float, 1, float, 1, float>(const T5 *, native::TensorListAddresses, int)")
    assert spelling("void k<(int)4>()") != spelling("void k<(int)8>()")


@pytest.mark.parametrize("timeline, counted, expected", [
    # two kernels of one capture that differ by their namespace only: which one ncu measured is not known
    ([(1, NSYS_ADD), (1, NSYS_ADD.replace("at::native::vectorized", "at::cuda::vectorized"))], {NCU_ADD}, {}),
    # the capture holds the counted spelling itself and another kernel of its spelling: two kernels there
    ([(1, NCU_ADD), (1, NSYS_ADD)], {NCU_ADD}, {}),
    # two counted names of one spelling (two namespaces' kernels measured): neither is known to be the timeline's
    ([(1, NSYS_ADD)], {NCU_ADD, NCU_ADD.replace("at::vectorized", "at::cuda::vectorized")}, {}),
    # one kernel spelled by two timeline tools (nsys and a Kineto trace read together): both get its counters
    ([(1, NSYS_ADD), (2, NSYS_ADD.replace("(int)8", "8").replace("(unsigned long)3", "3"))], {NCU_ADD},
     {NSYS_ADD: NCU_ADD, NSYS_ADD.replace("(int)8", "8").replace("(unsigned long)3", "3"): NCU_ADD}),
    # the counted name spelled exactly as the timeline does is matched as it is, not here
    ([(1, NCU_ADD), (2, NSYS_ADD)], {NCU_ADD}, {NSYS_ADD: NCU_ADD}),
])
def test_a_spelling_shared_by_two_kernels_matches_none(timeline, counted, expected):
    assert alike(counted, timeline) == expected


def _paired(capsys, tmp_path, timeline, ncu) -> tuple[tuple[int, int], list, list[str]]:
    """`report TIMELINE NCU --format json`: ((kernels measured by counters, by name only), the disagreements, the
    sources' notes)."""
    from nvprof_wrap.cli import main
    assert main(["report", str(timeline), str(ncu), "--format", "json", "--store", str(tmp_path / "s.sqlite")]) == 0
    d = json.loads(capsys.readouterr().out)
    evidence = [k["evidence"] for k in d["kernels"]]
    return (evidence.count("counters"), evidence.count("name")), d["disagreements"], \
        [n for s in d["sources"] for n in s["notes"]]


@pytest.mark.parametrize("precision", ["fp32", "bf16"])
def test_every_kernel_ncu_measured_of_the_gpt_trainer_is_its_nsys_captures(capsys, tmp_path, precision):
    """The GPT trainer on the H200 under nsys (30 steps) and under ncu (2 steps: tests/data/h200_runs/
    train_counters): ncu spells most of PyTorch's kernels apart — namespaces, number casts, enum casts
    ('(at::native::NormType)1' for '1') — so its counters had reached 12 of the bf16 run's 65 kernels. Every kernel it
    measured is one of the nsys capture's now, measured by its counters; no counter contradicts a name's verdict."""
    from tests._paths import RUNS
    (measured, _named), disagreements, notes = _paired(capsys, tmp_path, RUNS / f"gpt_{precision}_nsys",
                                                       RUNS / "train_counters" / f"gpt_{precision}.ncu.csv.gz")
    assert measured == {"fp32": 64, "bf16": 63}[precision] and not disagreements
    assert not [n for n in notes if "decide nothing" in n]


@pytest.mark.parametrize("job, measured, named", [("resnet_fp32", 60, 16), ("lstm_fp32", 38, 0)])
def test_every_kernel_ncu_measured_of_resnet_and_the_lstm_is_its_nsys_captures(capsys, tmp_path, job, measured, named):
    """ResNet-50 and the LSTM language model on an H100 under nsys and under ncu (tests/data/h100_runs/
    counters_beside_nsys, each capture cut to its kernels' names): the counters had reached 33 of ResNet's 76 kernels
    and 11 of the LSTM's 38. Every kernel ncu measured is one of the nsys capture's, none left over, none
    contradicting its name's verdict."""
    from tests._paths import H100_RUNS
    folder = H100_RUNS / "counters_beside_nsys"
    counts, disagreements, notes = _paired(capsys, tmp_path, folder / f"{job}.nsys.sqlite.gz",
                                           folder / f"{job}.ncu.csv.gz")
    assert counts == (measured, named) and not disagreements and not [n for n in notes if "decide nothing" in n]


# One kernel of the H200 GPT trainer as the PyTorch profiler (Kineto) and Nsight Compute wrote it
# (tests/data/h200_runs: kineto_gpt_bf16_shapes, train_counters/gpt_bf16.ncu.csv.gz)
KINETO_GELU = ("void at::native::vectorized_elementwise_kernel<8, at::native::GeluCUDAKernelImpl("
               "at::TensorIteratorBase&, at::native::GeluType)::{lambda()#2}::operator()() const::{lambda()#4}::"
               "operator()() const::{lambda(c10::BFloat16)#1}, std::array<char*, 2ul> >(int, at::native::"
               "GeluCUDAKernelImpl(at::TensorIteratorBase&, at::native::GeluType)::{lambda()#2}::operator()() const::"
               "{lambda()#4}::operator()() const::{lambda(c10::BFloat16)#1}, std::array<char*, 2ul>)")
NCU_GELU = ("void native::vectorized_elementwise_kernel<8, native::GeluCUDAKernelImpl(at::TensorIteratorBase &, "
            "native::GeluType)::[lambda() (instance 2)]::operator ()() const::[lambda() (instance 4)]::operator ()() "
            "const::[lambda(c10::BFloat16) (instance 1)], std::array<char *, 2>>(int, T2, T3)")


def test_the_pytorch_profilers_spelling_and_ncus_spell_alike():
    """Kineto's demangler writes lambdas '{lambda(float)#1}', numbers with their suffix ('32u', '1ul'), 'T const*'
    and a function template's parameters as concrete types; ncu '[lambda(float) (instance 1)]', '32', 'const T1 *'."""
    assert spelling(KINETO_GELU) == spelling(NCU_GELU)
    assert spelling("void at::native::(anonymous namespace)::GammaBetaBackwardCUDAKernelTemplate<float, float, 32u, "
                    "32u, 256u, false, true, false>(long, long, float const*, float const*, float*, float*)") == \
        spelling("void native::<unnamed>::GammaBetaBackwardCUDAKernelTemplate<float, float, 32, 32, 256, 0, 1, 0>("
                 "long, long, const T1 *, const T1 *, T1 *, T1 *)")
    assert spelling("void k<at::native::f<int>(long const&)::{lambda(int)#1}>(int)") == \
        spelling("void k<void native::f<int>(const T1 &)::[lambda(int) (instance 1)]>(int)")
    # what tells kernels apart stays: template numbers, lambda instances, a plain function's parameter types
    assert spelling("void k<4u>(int)") != spelling("void k<8>(int)")
    assert spelling(KINETO_GELU) != spelling(NCU_GELU.replace("(instance 1)]", "(instance 2)]"))
    assert spelling("void f(float*)") != spelling("void f(double*)")


@pytest.mark.parametrize("precision, measured, named", [("bf16", 63, 7), ("fp32", 64, 0)])
def test_every_kernel_ncu_measured_of_the_gpt_trainer_is_its_kineto_traces(capsys, tmp_path, precision, measured,
                                                                          named):
    """The GPT trainer on the H200 under the PyTorch profiler and under ncu: the counters had reached 12 of the bf16
    trace's 70 kernels and 10 of the fp32 trace's 64 (Kineto's spelling is neither ncu's nor nsys'). Every kernel ncu
    measured is one of the trace's now (the bf16 trace's other 7 are optimizer kernels ncu's 2 steps did not
    measure), none left over, none contradicting its name's verdict."""
    from tests._paths import RUNS
    (trace,) = (RUNS / f"kineto_gpt_{precision}_shapes").glob("*.pt.trace.json.gz")
    counts, disagreements, notes = _paired(capsys, tmp_path, trace,
                                           RUNS / "train_counters" / f"gpt_{precision}.ncu.csv.gz")
    assert counts == (measured, named) and not disagreements
    assert not [n for n in notes if "no timeline capture" in n or "decide nothing" in n]


@pytest.mark.parametrize("job, measured, named, ncu_kernels", [("resnet_fp32", 63, 11, 65), ("lstm_fp32", 36, 0, 38)])
def test_every_kernel_ncu_measured_of_resnet_and_the_lstm_is_in_their_kineto_traces(capsys, tmp_path, job, measured,
                                                                                  named, ncu_kernels):
    """ResNet-50 (cuDNN, cutlass, tf32 xmma kernels) and the LSTM language model (cuDNN's RNN kernels) on an H100 under
    the PyTorch profiler and under ncu (tests/data/h100_runs/counters_beside_kineto). Every kernel of a trace that ncu
    measured gets its counters, none contradicting its name's verdict; the 11 of ResNet's that keep their name's
    verdict are kernels ncu never measured (cuDNN chose other tile sizes and algorithms under it: other names), and
    the 2 ncu kernels of each job no trace holds are the job's set-up (its random data and weights, cuDNN's RNN
    states) before the profiler's steps — said in a note, not matched to another kernel."""
    from tests._paths import H100_RUNS
    folder = H100_RUNS / "counters_beside_kineto"
    counts, disagreements, notes = _paired(capsys, tmp_path, folder / f"{job}.pt.trace.json.gz",
                                           folder / f"{job}.ncu.csv.gz")
    assert counts == (measured, named) and not disagreements
    left = [n for n in notes if "no timeline capture" in n]
    assert len(left) == 1 and left[0].startswith(f"2 of its {ncu_kernels} kernels ran in no timeline capture")


def test_a_function_templates_parameters_agree_or_the_names_are_two_kernels():
    """A function template's parameters are the types in the PyTorch profiler's spelling, the template's own names
    (T1, T2) in ncu's; ncu writes a parameter pack as 'T3...' (the GPT trainer's optimizer kernels,
    multi_tensor_apply_kernel). Types written in both must be the same: an 'int' for a 'long' is another kernel —
    NVIDIA Fuser's capture of another PyTorch build holds `distribution_elementwise_grid_stride_kernel<…>(int, …)`
    where the H200 sample's ncu export measured `…(long, …)`."""
    assert parameters_agree(template_parameters("void k<float>(float const*, int)"),
                            template_parameters("void k<float>(const T1 *, int)"))
    assert not parameters_agree(template_parameters("void k<float>(float*)"),
                                template_parameters("void k<float>(float*, int)"))
    assert not parameters_agree(template_parameters("void k<float>(int, T2)"),
                                template_parameters("void k<float>(long, T2)"))
    assert parameters_agree(template_parameters("void k<float>(at::TensorInfo<float, unsigned int>, long*)"),
                            template_parameters("void k<float>(TensorInfo<T1, T3>, T2 *)"))
    kineto = ("void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::(anonymous namespace)::"
              "TensorListMetadata<1>, at::native::LpNormFunctor<float, (at::native::NormType)1, float, 1, 1, 0>, "
              "float*, int>(at::native::(anonymous namespace)::TensorListMetadata<1>, at::native::LpNormFunctor<float,"
              " (at::native::NormType)1, float, 1, 1, 0>, float*, int)")
    ncu = ("void native::<unnamed>::multi_tensor_apply_kernel<native::<unnamed>::TensorListMetadata<1>, "
           "native::LpNormFunctor<float, 1, float, 1, 1, 0>, float *, int>(T1, T2, T3...)")
    assert spelling(kineto) == spelling(ncu) and alike({ncu}, [(1, kineto)]) == {kineto: ncu}


@pytest.mark.parametrize("timeline, counted, expected", [
    # two overloads in one capture: which one ncu measured is not known
    ([(1, "void k<float>(float const*, int)"), (1, "void k<float>(float const*)")], {"void k<float>(const T1 *, int)"},
     {}),
    # the other overload measured: no match
    ([(1, "void k<float>(float*, int)")], {"void k<float>(T1 *)"}, {}),
    # another index type: another kernel
    ([(1, "void k<float>(int, float*)")], {"void k<float>(long, T1 *)"}, {}),
    # a parameter pack: the rest of its group
    ([(1, "void k<float>(int, float*, float)")], {"void k<float>(int, T1...)"},
     {"void k<float>(int, float*, float)": "void k<float>(int, T1...)"}),
])
def test_overloads_and_other_builds_kernels_match_none(timeline, counted, expected):
    assert alike(counted, timeline) == expected


def test_verify_gives_a_kernel_the_ncu_spells_apart_its_rate_in_the_trace(capsys, tmp_path):
    """`verify --from` sets each kernel's counted TFLOP/s beside the rate the trace's FLOPs give it: ResNet-50's
    cutlass GEMMs are `cutlass::Kernel2<…>(T1::Params)` to ncu and `…(cutlass_80_…::Params)` to the PyTorch profiler,
    so 9 of its 20 top rates showed no trace rate, and the trace's rates were looked up among the report's top 20
    only (2 more missing). The trace holds a rate for each of the 20."""
    from nvprof_wrap.cli import main
    from tests._paths import H100_RUNS
    folder = H100_RUNS / "counters_beside_kineto"
    assert main(["verify", "--from", str(folder / "resnet_fp32.ncu.csv.gz"),
                 str(folder / "resnet_fp32.pt.trace.json.gz"), "--format", "json"]) == 0
    d = json.loads(capsys.readouterr().out)
    achieved = {k["name"]: k["tflops"] for k in d["achieved_kernels"]}
    rates = d["counter_check"]["rates"]
    cutlass = [r for r in rates if r["name"].startswith("void cutlass::Kernel2<")]
    assert len(rates) == 20 and len(cutlass) == 9 and all(r["trace_tflops"] for r in rates)
    # the trace's rate of each: the report's where it is among the report's top rates (7 of the 9: its helpers are
    # not listed, achieved.per_kernel)
    ours = {r["name"]: r["name"].replace("(T1::Params)", f"({r['name'].split('<')[1].split('>')[0]}::Params)")
            for r in cutlass}
    assert sum(ours[r["name"]] in achieved for r in cutlass) == 7
    assert all(r["trace_tflops"] == achieved[ours[r["name"]]] for r in cutlass if ours[r["name"]] in achieved)
    # a name both spell alike keeps its own rate
    plain = [r for r in rates if r["name"] in achieved]
    assert len(plain) == 9 and all(r["trace_tflops"] == achieved[r["name"]] for r in plain)
