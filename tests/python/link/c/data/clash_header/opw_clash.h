// A header that defines a function (external linkage): see
// tests/python/link/c/test_units_definitions.py.
#pragma once

double opw_header_clash(double v) { return 3.0 * v; }
