"""The GPU a console log names outside the profiler's tables (readers/_log_gpus.py, issue 26): TensorFlow's and XLA's
start-up lines, nvprof's 'Device "…"' lines; and the kernels of no recorded device given the capture's GPU when
it names one model only (store/queries.py kernel_gpus).

The TensorFlow 2 and XLA lines below are written in the form TensorFlow prints them (gpu_device.cc "Created device
… -> device: 0, name: …, pci bus id: …, compute capability: …"; TF 2.0-2.4 "Found device 0 with properties:" then
"pciBusID: … name: … computeCapability: …"; xla/service/service.cc "StreamExecutor device (0): …, Compute
Capability …"), as public Colab and Kaggle logs show them; the TF 1 lines and nvprof's are read from real files."""
from __future__ import annotations

import os

from nvprof_wrap import readers
from nvprof_wrap.model import Capture, Gpu, KernelAgg
from nvprof_wrap.pipeline import analyze
from nvprof_wrap.readers._log_gpus import fill_in, named_gpus
from nvprof_wrap.store import Store
from tests._paths import DATA, WILD

TF2 = """\
2021-08-12 02:07:04.026293: I tensorflow/compiler/xla/service/service.cc:176]   StreamExecutor device (0): Tesla T4, \
Compute Capability 7.5
2021-08-12 02:07:04.039280: I tensorflow/core/common_runtime/gpu/gpu_device.cc:1716] Found device 0 with properties: \n\
pciBusID: 0001:00:00.0 name: Tesla T4 computeCapability: 7.5
coreClock: 1.59GHz coreCount: 40 deviceMemorySize: 15.75GiB deviceMemoryBandwidth: 298.08GiB/s
I0000 00:00:1741314679.356319   16587 gpu_device.cc:2018] Created device /job:localhost/replica:0/task:0/device:GPU:1 \
with 13756 MB memory:  -> device: 1, name: NVIDIA GeForce GTX 1660 Ti, pci bus id: 0000:00:06.0, compute capability: 7.5
"""


def test_tensorflow_2_and_xla_lines():
    gpus = {d: g for d, (g, _) in named_gpus(TF2).items()}
    assert gpus == {0: Gpu(0, "Tesla T4", 7, 5), 1: Gpu(1, "NVIDIA GeForce GTX 1660 Ti", 7, 5)}


def test_tensorflow_1_lines_of_the_k80_log():
    """nvprof-summary-tf1-2xk80.txt (aistein/dlprof, 2018): "Found device 0 with properties: \\nname: Tesla K80
    major: 3 minor: 7" and "Created TensorFlow device (… -> physical GPU (device: 1, name: Tesla K80, pci bus id:
    0000:00:05.0, compute capability: 3.7)"."""
    found = named_gpus((WILD / "nvprof-summary-tf1-2xk80.txt").read_text())
    assert found == {0: (Gpu(0, "Tesla K80", 3, 7), "TensorFlow's start-up lines"),
                     1: (Gpu(1, "Tesla K80", 3, 7), "TensorFlow's start-up lines")}


def test_nvprof_device_line_of_a_console_summary():
    """The V100 Rodinia BFS summary (tests/data/console): its tables name no GPU, its Unified Memory section does:
    'Device "Tesla V100-SXM2-16GB (0)"'. The report then knows the GPU (sm_70, from classify/gpus.toml)."""
    path = DATA / "console" / "xplacer_nvprof_summary_bfs.log"
    c = readers.read(path)
    assert c.devices == (Gpu(0, "Tesla V100-SXM2-16GB"),)
    assert "GPU from nvprof's Device line: Tesla V100-SXM2-16GB (device 0)" in c.notes
    r = analyze(path, health=False)
    assert [(g.name, g.cc, g.has_tensor_cores) for g in r.gpus] == [("Tesla V100-SXM2-16GB", 7.0, True)]


def test_the_profilers_own_record_wins_and_gaps_are_filled():
    own = {0: Gpu(0, "NVIDIA A100-SXM4-40GB", 8, 0), 1: Gpu(1, None, 7, 5)}  # ncu console: 'Device 1, CC 7.5'
    out, notes = fill_in(own, TF2)
    assert out[0] == own[0]  # the log's "Tesla T4" for device 0 does not overrule the capture
    assert out[1] == Gpu(1, "NVIDIA GeForce GTX 1660 Ti", 7, 5)
    assert notes == ("GPU from TensorFlow's start-up lines: NVIDIA GeForce GTX 1660 Ti (device 1)",)
    assert fill_in(own, "no GPU named here") == (own, ())


def _kernel_gpus(tmp_path, devices: tuple[Gpu, ...]) -> list[dict]:
    path = tmp_path / "log.txt"
    path.write_text("x")
    store = Store(tmp_path / "s.sqlite")
    cap = Capture(str(path), "console-nvprof-summary", (KernelAgg(1, None, "sgemm_sm35_ldg_tn_32x16x64x8x16", 3, 30),),
                  devices=devices)
    store.ingest(cap, "identity", os.stat(path), str(path))
    return store.kernel_gpus()


def test_kernels_of_no_recorded_device_are_of_the_capture_s_one_gpu_model(tmp_path):
    """A summary gives no kernel a device; when every device the capture names is one model (a K80 board's two
    GPUs), that model ran them, and the GPU decides their verdict."""
    k80 = (Gpu(0, "Tesla K80", 3, 7), Gpu(1, "Tesla K80", 3, 7))
    (row,) = _kernel_gpus(tmp_path, k80)
    assert (row["device_id"], row["gpu"], row["ma"], row["mi"]) == (None, "Tesla K80", 3, 7)


def test_kernels_of_no_recorded_device_on_two_gpu_models_get_neither(tmp_path):
    (row,) = _kernel_gpus(tmp_path, (Gpu(0, "Tesla K80", 3, 7), Gpu(1, "Tesla V100-SXM2-16GB", 7, 0)))
    assert (row["gpu"], row["ma"]) == (None, None)
