"""Element types of the IR and the runtime ABI (torch-free).

The integer codes are part of the C ABI (`aotc_tensor.dtype`); never renumber them.
"""
from __future__ import annotations

import enum


class DType(enum.Enum):
    # name = (abi code, c type, itemsize, numpy name)
    float32 = (0, "float", 4, "float32")
    float64 = (1, "double", 8, "float64")
    float16 = (2, "_Float16", 2, "float16")
    bfloat16 = (3, "aotc::bf16", 2, "uint16")  # numpy has no bfloat16: its raw bits
    int8 = (4, "int8_t", 1, "int8")
    int16 = (5, "int16_t", 2, "int16")
    int32 = (6, "int32_t", 4, "int32")
    int64 = (7, "int64_t", 8, "int64")
    uint8 = (8, "uint8_t", 1, "uint8")
    bool = (9, "bool", 1, "bool")
    uint64 = (10, "uint64_t", 8, "uint64")  # hash_tensor's result
    # complex types cross the ABI only: inside the IR a complex tensor of sizes S is a real
    # tensor of sizes S + (2,), its (real, imag) pairs (frontend/complex.py)
    complex64 = (11, "float", 8, "complex64")
    complex128 = (12, "double", 16, "complex128")

    @property
    def code(self) -> int:
        return self.value[0]

    @property
    def ctype(self) -> str:
        return self.value[1]

    @property
    def itemsize(self) -> int:
        return self.value[2]

    @property
    def numpy_name(self) -> str:
        return self.value[3]

    @property
    def compute(self) -> DType:
        """The type values of this dtype are computed in: half types in float32 (rounded
        when stored, as PyTorch computes them on CPU), every other type in itself."""
        return DType.float32 if self in (DType.float16, DType.bfloat16) else self

    @property
    def is_floating(self) -> bool:
        return self in (DType.float32, DType.float64, DType.float16, DType.bfloat16)

    @property
    def is_complex(self) -> bool:
        return self in (DType.complex64, DType.complex128)

    @property
    def is_integer(self) -> bool:
        return not self.is_floating and not self.is_complex and self is not DType.bool

    @property
    def real(self) -> DType:
        """The type of a complex type's parts (float32 for complex64); a real type itself."""
        return {DType.complex64: DType.float32, DType.complex128: DType.float64}.get(self, self)

    @property
    def as_complex(self) -> DType:
        """The complex type whose parts are this float type (complex64 for float32)."""
        return {DType.float32: DType.complex64, DType.float64: DType.complex128}[self]

    @classmethod
    def from_name(cls, name: str) -> DType:
        name = name.replace("torch.", "")
        try:
            return cls[name]
        except KeyError:
            raise ValueError(f"aotc has no dtype named {name!r}") from None


# dtypes the C++ code generator computes with (half types through float32; complex ones as
# pairs of their real type, never as such)
COMPUTABLE = frozenset(d for d in DType if not d.is_complex)
