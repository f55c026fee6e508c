"""The C++ compiler driver: which compiler and flags, the shipped kernel objects, the
content-addressed build cache."""
