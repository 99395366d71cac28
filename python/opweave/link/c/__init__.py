"""The C back end: interfaces, C ops and types, the linker, and the module cache."""
