"""Loop-level IR: expression DAG bodies, buffers and the program."""
from ..dtypes import DType
from .expr import Binary, BinaryOp, Cast, Constant, IndexValue, Load, Node, Unary, UnaryOp, Where
from .nodes import (
                    Buffer,
                    BufferKind,
                    ConstantSpec,
                    Gemm,
                    InputSpec,
                    Operand,
                    Origin,
                    Pointwise,
                    Program,
                    ReduceType,
                    Reduction,
                    Template,
)

__all__ = [
    "DType", "Binary", "BinaryOp", "Cast", "Constant", "IndexValue", "Load", "Node", "Unary",
    "UnaryOp", "Where", "Buffer", "BufferKind", "ConstantSpec", "Gemm", "InputSpec", "Operand",
    "Origin", "Pointwise", "Program", "Reduction", "ReduceType", "Template",
]
