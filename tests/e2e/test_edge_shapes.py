"""Every model of the e2e tests and benchmarks with dynamic dims, compiled once and run from a
numpy-only process at the edges of each dynamic dim: its min, min+1 and max (twice the
example size when unbounded), and 0 and 1; with several dims, every pair of edge values
over every pair of dims, the others at the example size. Each call is compared with
ep.module(): where eager runs, the same outputs (pytree, dtypes, shapes, values); where it
raises, an aotc.InputError. A call that kills the child process is a failure naming it."""
from __future__ import annotations

import itertools

import pytest
import sympy
import torch
from case_runner import Case, check, run_cases
from test_architectures import ARCHITECTURES, _randomize_norms
from test_attention_models import LlamaBlock
from test_control import Nested
from test_dynamic import Pair
from test_guards import EvenNotOne, SizeGuards
from test_half import LlamaBlock as HalfLlamaBlock
from test_pool_pad_scan import Fn, pools_and_scans, pools_and_scans_shapes
from test_resample import Bicubic, GridSamples, _grid
from test_sort import Medians, Sorts, _data, _ties
from test_symbolic import EvenRows, IntInput, SymbolicOutputs
from torch.export import Dim
from torch.utils._sympy.numbers import int_oo

import aotc
from models import EncoderBlock, GeluMLP, ReadmeModel

# name: (make the module, example args, dynamic_shapes, rtol/atol); the modules are the tests'
# own (and benchmarks/zoo.py's, which takes ARCHITECTURES and test_half's LlamaBlock)
MODELS = {
    **{f"arch_{name}": (lambda make=make: _randomize_norms(make()), args, dynamic, 1e-4)
       for name, (make, args, dynamic, _) in ARCHITECTURES.items()},
    "readme": (ReadmeModel, (torch.randn(8, 10),),
               lambda: {"x": {0: Dim("batch", min=1, max=1024)}}, None),
    "gelu_mlp": (GeluMLP, (torch.randn(4, 32),), lambda: {"x": {0: Dim("batch", min=1, max=512)}},
                 None),
    "encoder_seq": (EncoderBlock, (torch.randn(2, 16, 32),),
                    lambda: {"x": {1: Dim("seq", min=2, max=256)}}, 1e-4),
    "encoder_batch_seq": (EncoderBlock, (torch.randn(2, 70, 32),),
                          lambda: {"x": {0: Dim("batch", min=1, max=4),
                                         1: Dim("seq", min=1, max=256)}}, 1e-4),
    "pair_derived": (Pair, (torch.randn(4, 3), torch.randn(8, 3)),
                     lambda: (lambda b: {"x": {0: b}, "y": {0: 2 * b}})(Dim("b", min=2, max=64)),
                     None),
    "linear_unbounded": (lambda: torch.nn.Linear(3, 2), (torch.randn(4, 3),),
                         lambda: {"input": {0: Dim("b")}}, None),
    "llama_seq": (LlamaBlock, (torch.randn(1, 100, 128),), lambda: {"x": {1: Dim("seq", min=2, max=512)}},
                  1e-4),
    "gelu_mlp_f16": (lambda: GeluMLP().to(torch.float16), (torch.randn(8, 32, dtype=torch.float16),),
                     lambda: {"x": {0: Dim("batch", min=1, max=64)}}, 1e-2),
    "llama_bf16": (lambda: HalfLlamaBlock().to(torch.bfloat16),
                   (torch.randn(1, 12, 64, dtype=torch.bfloat16),),
                   lambda: {"x": {1: Dim("seq", min=2, max=64)}}, 5e-2),
    "pools_and_scans": (lambda: Fn(pools_and_scans), (torch.randn(2, 4, 16),),
                        pools_and_scans_shapes, None),
    "nested_cond": (Nested, (torch.randn(6, 3),), lambda: {"x": {0: Dim("b", min=1, max=32)}},
                    None),
    "symbolic_outputs": (SymbolicOutputs, (torch.randn(4, 3),),
                         lambda: {"x": {0: Dim("d", min=1, max=64)}}, None),
    "int_input": (IntInput, (torch.randn(8, 3), 4), lambda: {"x": None, "n": Dim.DYNAMIC}, None),
    "even_rows": (EvenRows, (torch.randn(8, 3),), lambda: {"x": {0: 2 * Dim("d", min=1, max=64)}},
                  None),
    "guards_int_input": (EvenNotOne, (torch.randn(4), 4), lambda: ({0: Dim.DYNAMIC}, Dim.DYNAMIC),
                         None),
    "guards_on_sizes": (SizeGuards, (torch.randn(12, 3),),
                        lambda: ({0: Dim.DYNAMIC, 1: Dim.DYNAMIC},), None),
    "grid_sample": (lambda: GridSamples(False), (torch.randn(2, 3, 7, 9), _grid(2, 5, 6, 0)),
                    lambda: (lambda b: {"x": {0: b, 2: Dim("ih", min=2, max=32),
                                              3: Dim("iw", min=2, max=32)},
                                        "grid": {0: b, 1: Dim("h", min=2, max=32),
                                                 2: Dim("w", min=2, max=32)}})(Dim("b", max=8)),
                    None),
    "bicubic_batch": (Bicubic, (torch.randn(2, 3, 6, 8),), lambda: {"x": {0: Dim("b", max=8)}},
                      None),
    "sorts": (Sorts, _data(6, 40), lambda: {"x": {0: Dim("rows", min=2, max=4096)},
                                            "boundaries": None}, None),
    "medians": (Medians, (_ties(5, 9),), lambda: {"x": {0: Dim("rows", min=4, max=4096)}}, None),
}


def _leaves(value):
    if isinstance(value, (tuple, list)):
        return [x for v in value for x in _leaves(v)]
    if isinstance(value, dict):
        return [x for v in value.values() for x in _leaves(v)]
    return [value]


def _rebuild(example, leaves):
    """`example`'s pytree with its leaves replaced, in order, by `leaves`."""
    it = iter(leaves)

    def go(v):
        if isinstance(v, (tuple, list)):
            return type(v)(go(x) for x in v)
        if isinstance(v, dict):
            return {k: go(x) for k, x in v.items()}
        return next(it)
    return go(example)


def dynamic_symbols(ep):
    """[(name, symbol, lower, upper or None, example value)] of the symbols in the inputs' sizes,
    and per input leaf the size expressions (or the symbol an int input is)."""
    placeholders = {n.name: n.meta["val"] for n in ep.graph.nodes if n.op == "placeholder"}
    metas = [placeholders[name] for name in ep.graph_signature.user_inputs]
    examples = _leaves(ep.example_inputs[0])
    exprs, equations = [], []
    for meta, ex in zip(metas, examples):
        if isinstance(meta, torch.Tensor):
            e = [sympy.sympify(d.node.expr) if isinstance(d, torch.SymInt) else int(d)
                 for d in meta.shape]
            equations += [(d, size) for d, size in zip(e, ex.shape)]
        elif isinstance(meta, torch.SymInt):
            e = sympy.sympify(meta.node.expr)
            equations.append((e, ex))
        else:
            e = None
        exprs.append(e)
    symbols = sorted({s for d, _ in equations if isinstance(d, sympy.Expr)
                      for s in d.free_symbols}, key=str)
    names = {}  # a symbol by where the user sees it: "x.shape[0]", or an int input's name
    for input_name, e in zip(ep.graph_signature.user_inputs, exprs):
        where = ([(d, f"{input_name}.shape[{k}]") for k, d in enumerate(e)] if isinstance(e, list)
                 else [(e, input_name)])
        for d, text in where:
            if isinstance(d, sympy.Symbol):
                names.setdefault(d, text)
            elif isinstance(d, sympy.Expr):
                for s in d.free_symbols:
                    names.setdefault(s, f"{s} (in {text} = {d})")
    found = []
    for s in symbols:
        value = next(int(sympy.solve(d - size, s)[0]) for d, size in equations
                     if isinstance(d, sympy.Expr) and d.free_symbols == {s})
        vr = ep.range_constraints[s]
        upper = None if vr.upper in (int_oo, sympy.oo) else int(vr.upper)
        found.append((names[s], s, int(vr.lower), upper, value))
    return found, exprs


def edge_values(lower, upper, example):
    values = {lower, lower + 1, upper if upper is not None else 2 * example, 0, 1}
    return sorted(v for v in values if v >= 0)


def assignments(symbols):
    """Each symbol alone at its edges, then every pair of symbols at every pair of edges; the
    other symbols at their example values."""
    base = {s: ex for _, s, _, _, ex in symbols}
    edges = {s: edge_values(lo, hi, ex) for _, s, lo, hi, ex in symbols}
    out = []
    for s in edges:
        out += [{**base, s: v} for v in edges[s]]
    for a, b in itertools.combinations(edges, 2):
        out += [{**base, a: va, b: vb} for va in edges[a] for vb in edges[b]]
    unique = {tuple(sorted((str(k), v) for k, v in d.items())): d for d in out}
    return list(unique.values())


def inputs_at(ep, exprs, sizes, seed):
    """Inputs for the symbol values `sizes`: fresh values of the example's kind for each input
    whose sizes are dynamic, the example itself for a static one."""
    g = torch.Generator().manual_seed(seed)
    examples = _leaves(ep.example_inputs[0])
    leaves = []
    for ex, e in zip(examples, exprs):
        if isinstance(e, sympy.Expr):  # an int input that is a symbol
            leaves.append(int(e.subs(sizes)))
        elif isinstance(e, list) and any(isinstance(d, sympy.Expr) for d in e):
            shape = [int(d.subs(sizes)) if isinstance(d, sympy.Expr) else d for d in e]
            if ex.dtype.is_floating_point:
                leaves.append(torch.randn(shape, generator=g).to(ex.dtype))
            elif ex.dtype == torch.bool:
                leaves.append(torch.randint(0, 2, shape, generator=g).bool())
            else:
                lo, hi = int(ex.min()), int(ex.max())
                leaves.append(torch.randint(lo, hi + 1, shape, generator=g, dtype=ex.dtype))
        else:
            leaves.append(ex)
    return _rebuild(ep.example_inputs[0], leaves)


def _describe(args):
    return ", ".join(f"{tuple(a.shape)}" if isinstance(a, torch.Tensor) else repr(a)
                     for a in _leaves(args))


@pytest.mark.parametrize("name", sorted(MODELS))
def test_edge_shapes_match_eager(name, tmp_path):
    make, args, dynamic, tol = MODELS[name]
    torch.manual_seed(0)
    with torch.no_grad():
        ep = torch.export.export(make().eval(), tuple(args), dynamic_shapes=dynamic())
    path = aotc.compile_and_package(ep, package_path=tmp_path / "m.pt2")
    symbols, exprs = dynamic_symbols(ep)
    assert symbols, f"{name} has no dynamic dims"
    eager = ep.module()
    cases, expected = [], []
    for k, sizes in enumerate(assignments(symbols)):
        call_args = inputs_at(ep, exprs, sizes, seed=k)
        label = ", ".join(f"{where}={sizes[s]}" for where, s, *_ in symbols)
        label += f" (inputs {_describe(call_args)})"
        try:
            with torch.no_grad():
                expected.append((eager(*call_args), None))
        except Exception as e:  # eager refuses these sizes: aotc must too
            expected.append((None, e))
        cases.append(Case(label, str(path), None, call_args))
    results = run_cases(cases, tmp_path / "io")
    problems = []
    for case, result, (want, error) in zip(cases, results, expected):
        problem = check(result, want, error, rtol=tol, atol=tol)
        if problem:
            problems.append(f"{name} at {case.label}: {problem}")
    assert not problems, f"{len(problems)} of {len(cases)} calls fail:\n" + "\n".join(problems)
