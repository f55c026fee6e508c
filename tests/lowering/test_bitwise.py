"""Shifts with PyTorch's semantics on every integer dtype: counts outside [0, bits), negative
values, scalar operands; against eager and OpInfo's samples."""
from __future__ import annotations

import pytest
import torch
from torch.testing._internal.common_methods_invocations import op_db  # needs expecttest

import aotc
from aotc.tools.opsweep import check, exportable, opinfo_name, pick_samples

INTEGERS = (torch.int64, torch.int32, torch.int16, torch.int8, torch.uint8)
OPINFOS = {opinfo_name(o): o for o in op_db
           if opinfo_name(o) in ("bitwise_left_shift", "bitwise_right_shift")}


class Shifts(torch.nn.Module):
    def forward(self, a, b, c):
        return (a << b, a >> b, c << 3, c >> torch.tensor(9, dtype=torch.int8),
                torch.bitwise_left_shift(a, 70), 5 >> b)


@pytest.mark.parametrize("dtype", INTEGERS, ids=str)
def test_shifts_match_eager(dtype, tmp_path):
    g = torch.Generator().manual_seed(0)
    lo = 0 if dtype == torch.uint8 else -100
    args = lambda: (torch.randint(lo, 100, (16,), dtype=dtype, generator=g),  # noqa: E731
                    torch.randint(0 if lo == 0 else -3, 70, (16,), generator=g).to(dtype),
                    torch.randint(-100, 100, (16,), dtype=torch.int8, generator=g))
    ep = torch.export.export(Shifts(), args())
    model = aotc.load_package(aotc.compile_and_package(ep, package_path=tmp_path / "m.pt2"))
    for _ in range(3):
        a = args()
        for got, want in zip(model(*a), ep.module()(*a)):
            torch.testing.assert_close(got, want)


@pytest.mark.parametrize("name", sorted(OPINFOS))
@pytest.mark.parametrize("dtype", (torch.int64, torch.int32, torch.uint8), ids=str)
def test_opinfo_samples(name, dtype, tmp_path):
    info = OPINFOS[name]
    samples, ep = exportable(info, pick_samples(info, dtype))
    assert samples
    check(info, samples, ep, tmp_path)

