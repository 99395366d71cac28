// opweave core: the project's version, written here and nowhere else.
// CMakeLists.txt reads it for project(VERSION) and the CMake package's
// version file; pyproject.toml reads it for the Python package's metadata
// (scikit-build-core's regex provider); opweave.__version__ is the
// binding's copy of it (opweave._core.__version__).
#pragma once

#define OPWEAVE_VERSION "0.1.0"
