"""Names in the terminal's tables (issue 28): framework wrappers dropped (text/names.py OP_WRAPPERS), long names cut in
the middle, and no two rows of the kernels, ops or outer-ranges table printed alike at 80, 100 or 120 columns unless
their whole names are the same (issue 45 asked again: two `aten::add` rows reading the same) — on every real
capture there is: the bundled samples, tests/data (the H200 runs, the console logs, the MIT-licensed traces) and
the shared fixtures' h200/, public/ and wild/ (skipped, with the reason, where they are absent).
--wide shows every name whole."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from nvprof_wrap.errors import NvprofWrapError
from nvprof_wrap.pipeline.stores import report_on
from nvprof_wrap.renderers import render
from nvprof_wrap.renderers._options import Options
from nvprof_wrap.renderers._rows import numbered_merged
from nvprof_wrap.text.names import OP_WRAPPERS, middle, shorten_ops, unwrapped
from tests._paths import DATA, H100_RUNS, H200, PUBLIC, ROOT, RUNS, WILD, fixtures_absent

WIDTH, LIMIT = 120, 15
WIDTHS = (80, 100, WIDTH)  # a laptop's terminal, a split pane, the golden reports' width
TITLES = {"Top ": "kernels", "Framework ops": "ops", "Outer ranges": "scopes", "Counters disagree": "disagreements"}


def own_captures() -> list[Path]:
    return sorted([*(ROOT / "nvprof_wrap" / "samples").iterdir(), *RUNS.iterdir(),
                   *(p for p in H100_RUNS.iterdir() if p.is_dir()),
                   *(DATA / "console").glob("*.log"),
                   *(DATA / "public_mit").glob("*.gz")])


def shared_captures() -> list:
    why = fixtures_absent()
    if why is not None:
        return [pytest.param(None, marks=pytest.mark.skip(reason=f"the shared fixtures are {why}"), id="shared")]
    return [p for folder in (H200, PUBLIC, WILD) for p in sorted(folder.iterdir()) if p.name != "README.md"]


def printed_tables(text: str) -> dict[str, list[str]]:
    """The name cell of every row of each table (its key in TITLES), as printed: one line a row (no --wide)."""
    tables: dict[str, list[str]] = {}
    key, body = None, False
    for line in text.splitlines():
        starts = [k for t, k in TITLES.items() if line.startswith(t)]
        if starts:
            key, body = starts[0], False
            tables[key] = []
        elif key and not body and "━" in line:
            body = True
        elif key and body and "│" in line:
            tables[key].append(re.split(r" ?│", line, maxsplit=1)[0].rstrip())
        elif key and body:
            key = None
    return tables


def whole_names(report) -> dict[str, list[str]]:
    """The whole name of each row each table shows, in its order (renderers/console.py)."""
    return {"kernels": [k.name for k in report.kernels[:LIMIT]],
            "ops": [o.op for o in numbered_merged(report.ops)[:LIMIT]],
            # one outer range holding every kernel is a line, not a table (tests/renderers/test_lone_scope.py)
            "scopes": [o.op for o in numbered_merged(report.scopes)[:LIMIT]] if len(report.scopes) > 1 else [],
            "disagreements": [k.name for k in report.disagreements]}


def assert_rows_apart(path: Path, tmp_path: Path) -> None:
    try:
        report = report_on([path], warn=lambda *_: None, store=tmp_path / "s.sqlite")
    except NvprofWrapError as e:
        pytest.skip(f"not a capture nvprof-wrap reports on: {e}")
    whole = whole_names(report)
    for width in WIDTHS:
        printed = printed_tables(render("table", report, Options(width=width, limit=LIMIT)))
        for key, cells in printed.items():
            assert len(cells) == len(whole[key]), (width, key, cells)
            alike = [(a, b, cells[i]) for i, a in enumerate(whole[key]) for j, b in enumerate(whole[key])
                     if i < j and cells[i] == cells[j] and a != b]
            assert not alike, f"{key} at {width} columns: different names printed alike: {alike[:3]}"


@pytest.mark.parametrize("path", own_captures(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_no_two_rows_print_alike_on_the_repositorys_captures(path, tmp_path):
    assert_rows_apart(path, tmp_path)


@pytest.mark.parametrize("path", shared_captures(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_no_two_rows_print_alike_on_the_shared_captures(path, tmp_path):
    assert_rows_apart(path, tmp_path)


def test_the_outer_ranges_of_a_torch_profiler_capture_lose_the_autograd_wrapper(tmp_path):
    report = report_on([RUNS / "kineto_gpt_bf16"], warn=lambda *_: None, store=tmp_path / "s.sqlite")
    cells = printed_tables(render("table", report, Options(width=WIDTH)))["scopes"]
    assert "AddmmBackward0" in cells and "NativeLayerNormBackward0" in cells
    assert not any(c.startswith("autograd::engine") for c in cells)
    assert "AdamW.step" in cells  # Optimizer.step#AdamW.step


def test_wide_shows_every_name_column_whole(tmp_path):
    report = report_on([RUNS / "kineto_gpt_bf16"], warn=lambda *_: None, store=tmp_path / "s.sqlite")
    text = render("table", report, Options(width=WIDTH, wide=True))
    # the first column of every table, its rows wrapped over lines read back as one string
    first = re.sub(r"\s", "", "".join(line.split("│")[0] for line in text.splitlines() if "│" in line))
    names = [*(o.op for rows in (report.ops, report.scopes) for o in numbered_merged(rows)[:LIMIT]),
             *(k.name for k in report.kernels[:LIMIT])]
    assert any(n.startswith("autograd::engine::evaluate_function: ") for n in names)
    for name in names:
        assert re.sub(r"\s", "", name) in first, name
    assert "…" not in first


def test_wrappers_are_a_table_with_a_source_and_a_tag_each():
    assert len(OP_WRAPPERS) >= 4
    for w in OP_WRAPPERS:
        assert "name" in w.pattern.groupindex and w.tag and len(w.source) > 40
    assert unwrapped("autograd::engine::evaluate_function: torch::autograd::AccumulateGrad") == \
        ("AccumulateGrad", "autograd: ")
    assert unwrapped("Optimizer.zero_grad#SGD.zero_grad") == ("SGD.zero_grad", "Optimizer.zero_grad#")
    assert unwrapped("## forward ##") == ("forward", "## ")
    assert unwrapped("aten::mm") == ("aten::mm", "")


def test_middle_keeps_the_tail_that_tells_rows_apart():
    name = "gradient_tape/model_1/conv2_block2_2_conv/Conv2D"
    cut = middle(name, 30)
    assert len(cut) == 30 and cut.endswith("block2_2_conv/Conv2D") and cut.startswith("gradient_") and "…" in cut
    assert middle("short", 30) == "short"


@pytest.mark.parametrize("width", [12, 20, 30, 38, 48])
def test_names_that_differ_only_in_the_middle_stay_apart_at_every_width(width):
    names = ([f"FSDP::pre_forward (blocks.{i}._checkpoint_wrapped_module)" for i in (9, 10, 21, 22)]
             + [f"replica_{r}/bert_span_labeler/bert_encoder_1/transformer/layer_{n}/self_attention/dropout_3/dropout"
                for r in (4, 6) for n in (4, 13, 21)]
             + ["autograd::engine::evaluate_function: RopeLoraFlashAttnVarlenFuncBackward",
                "RopeLoraFlashAttnVarlenFuncBackward", "aten::mm", "aten::mm"])
    cells = shorten_ops(names, width)
    assert all(len(c) <= width for c in cells)
    assert len(set(cells)) == len(set(names)) and cells[-1] == cells[-2] == "aten::mm"
    assert shorten_ops(names, width) == cells  # deterministic


def test_the_parts_that_differ_are_the_ones_kept():
    names = [f"replica_{r}/bert_span_labeler/bert_encoder_1/transformer/layer_{n}/self_attention/dropout_3/dropout"
             for r in (4, 6) for n in (4, 13)]
    assert shorten_ops(names, 38) == ["replica_4…layer_4…3/dropout", "replica_4…layer_13…3/dropout",
                                      "replica_6…layer_4…3/dropout", "replica_6…layer_13…3/dropout"]
    tagged = shorten_ops(["autograd::engine::evaluate_function: MulBackward0", "MulBackward0"], 38)
    assert tagged == ["autograd: MulBackward0", "MulBackward0"]


def test_xlas_thunk_ranges_show_their_op_not_their_unique_id(tmp_path):
    """XLA names its thunks' NVTX ranges as TraceMe encodes them ('Thunk:#name=jit(add)/add,hlo_op=loop_add_fusion,
    unique_hlo_op_id=4294967298#'): cut in the middle, every row kept the id and lost the op ('Thunk:#…lo_op=custom-
    call.1,…94967298#'). A real JAX capture's ops table shows the JAX op and the HLO op; look-alikes stay apart;
    the whole name stays in the report."""
    report = report_on([DATA / "xla_dump" / "jax_mnist_eval.nsys.sqlite.gz"], warn=lambda *_: None,
                       store=tmp_path / "s.sqlite")
    assert all(o.op.startswith("Thunk:#") and "unique_hlo_op_id=" in o.op for o in report.ops)
    text = render("table", report, Options(width=WIDTH))
    ops = text[text.index("Framework ops"):]
    first = [line.split("│")[0].strip() for line in ops.splitlines()[3:] if "│" in line]
    assert {"jit(add)/add,hlo_op=loop_add_fusion", "loop_reduce_fusion", "triton_softmax.2",
            "jit(equal)/eq,hlo_op=wrapped_compare"} <= set(first), first
    assert not [c for c in first if "unique_hlo_op_id" in c or "Thunk:#" in c], first
    assert len(set(first)) == len(first)  # two thunks of one op and HLO op: tagged and numbered, not alike
    assert unwrapped("XlaModule:#hlo_module=jit_train_step,program_id=287814#") == ("jit_train_step", "XlaModule: ")
    assert unwrapped("Thunk:#hlo_op=command_buffer_1#") == ("command_buffer_1", "Thunk: ")
