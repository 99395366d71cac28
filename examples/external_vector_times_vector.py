"""VectorTimesVector with its C code in a file: the ``ExternalCOp`` example
of "Extending PyTensor with a C Op".

The op is the tutorial's code with ``pytensor`` replaced by ``opweave`` in the
imports; only ``perform`` (for ``mode="py"`` and ``mode="c|py"``) is added.
The C code is ``vectorTimesVector.c`` next to this file, split into a
``support_code`` and a ``support_code_apply`` section. Run it:
``python external_vector_times_vector.py``.
"""

from __future__ import annotations

import numpy

import opweave
import opweave.scalar
import opweave.tensor.type
from opweave.graph.basic import Apply
from opweave.link.c.op import ExternalCOp


class VectorTimesVector(ExternalCOp):
    __props__ = ()

    func_file = "./vectorTimesVector.c"
    func_name = "APPLY_SPECIFIC(vector_times_vector)"

    def __init__(self):
        super().__init__(self.func_file, self.func_name)

    def make_node(self, x, y):
        # Validate the inputs' type
        if x.type.ndim != 1:
            raise TypeError("x must be a 1-d vector")
        if y.type.ndim != 1:
            raise TypeError("y must be a 1-d vector")

        # Create an output variable of the same type as x
        output_var = opweave.tensor.type.TensorType(
            dtype=opweave.scalar.upcast(x.dtype, y.dtype), shape=(None,)
        )()

        return Apply(self, [x, y], [output_var])

    def perform(self, node, inputs, output_storage):
        # Added for the Python modes; the tutorial defines only the C code.
        x, y = inputs
        if x.shape[0] != y.shape[0]:
            raise ValueError(
                "Shape mismatch : x.shape[0] and y.shape[0] should match but "
                f"x.shape[0] == {x.shape[0]} and y.shape[0] == {y.shape[0]}"
            )
        output_storage[0][0] = (x * y).astype(node.outputs[0].dtype)


def main() -> None:
    """Multiplies a float32 and an int16 vector, then a float64 and an int64 one."""
    x = opweave.tensor.fvector("x")
    y = opweave.tensor.vector("y", dtype="int16")
    f = opweave.function([x, y], VectorTimesVector()(x, y))
    print(f(numpy.arange(4, dtype="float32"), numpy.arange(4, dtype="int16")))


if __name__ == "__main__":
    main()
