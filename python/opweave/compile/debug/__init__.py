"""PyTensor's package path to DebugMode: ``opweave.compile.debug.debugmode``."""
