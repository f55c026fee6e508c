"""Building native code: toolchain, flags, cache."""
