"""NVTX range names as frameworks write them, reduced to the op or layer they name."""
from __future__ import annotations

import re

# torch.autograd.profiler.emit_nvtx appends ", seq = N", ", op_id = N", ", sizes = [...]" to each op.
_DECOR = re.compile(r",\s*(?:seq|op_id|sizes|input_op_ids)\s*=.*$")


def op_name(text: str | None) -> str:
    """'aten::addmm, seq = 12, op_id = 40' → 'aten::addmm'; no range → '(no NVTX range)'."""
    if not text:
        return "(no NVTX range)"
    return _DECOR.sub("", text).strip() or "(no NVTX range)"
