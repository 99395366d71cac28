# Script mode (cmake -DSOURCE_DIR=... -DPACKAGE_DIR=... -P this file), run at
# every build of a developer tree (OPWEAVE_DEV_PACKAGE): makes PACKAGE_DIR
# (<build>/python/opweave) the package as a wheel installs it, so that
# PYTHONPATH=<build>/python imports opweave with the _core built into it.
#
# The package's own files and folders are symlinks into the source tree, so
# an edit of a .py file needs no rebuild; this script adds links for new
# top-level entries and removes the links of deleted ones. `include` is linked
# where the wheel installs the headers (opweave.get_include()). The examples
# are copied, as the wheel installs them (opweave.examples), not linked: an
# ExternalCOp finds its .c file next to its class's resolved file, which must
# be the folder the module was imported from. The CMakeLists puts the library
# and its CMake package under lib/.
cmake_minimum_required(VERSION 3.20)

if(NOT IS_DIRECTORY "${SOURCE_DIR}/python/opweave" OR PACKAGE_DIR STREQUAL "")
  message(FATAL_ERROR "usage: cmake -DSOURCE_DIR=<opweave source> -DPACKAGE_DIR=<dir> -P ${CMAKE_CURRENT_LIST_FILE}")
endif()

set(python_dir "${SOURCE_DIR}/python/opweave")
file(MAKE_DIRECTORY "${PACKAGE_DIR}")

# name -> target, for every link the package needs.
set(names include)
set(target_include "${SOURCE_DIR}/include")
file(GLOB entries RELATIVE "${python_dir}" "${python_dir}/*")
foreach(name IN LISTS entries)
  # Bytecode is written next to the links; a stray built _core in the source
  # tree must not shadow the one built here.
  if(name STREQUAL "__pycache__" OR name MATCHES "^_core\\..*\\.so$")
    continue()
  endif()
  list(APPEND names "${name}")
  set(target_${name} "${python_dir}/${name}")
endforeach()

foreach(name IN LISTS names)
  set(link "${PACKAGE_DIR}/${name}")
  if(IS_SYMLINK "${link}")
    file(READ_SYMLINK "${link}" current)
    if(current STREQUAL target_${name})
      continue()
    endif()
    file(REMOVE "${link}")
  elseif(EXISTS "${link}")
    message(FATAL_ERROR "${link} exists and is not a symlink: remove it, then build again")
  endif()
  file(CREATE_LINK "${target_${name}}" "${link}" SYMBOLIC)
endforeach()

# Links to files that are gone from the source tree.
file(GLOB present RELATIVE "${PACKAGE_DIR}" "${PACKAGE_DIR}/*")
foreach(name IN LISTS present)
  if(IS_SYMLINK "${PACKAGE_DIR}/${name}" AND NOT name IN_LIST names)
    file(REMOVE "${PACKAGE_DIR}/${name}")
  endif()
endforeach()

# The examples, as install(DIRECTORY examples/ ...) in the CMakeLists picks
# them; configure_file rewrites a copy only when its source changed.
set(examples_dir "${PACKAGE_DIR}/examples")
if(IS_SYMLINK "${examples_dir}")
  file(REMOVE "${examples_dir}")
endif()
file(GLOB_RECURSE examples RELATIVE "${SOURCE_DIR}/examples"
  "${SOURCE_DIR}/examples/*.py" "${SOURCE_DIR}/examples/*.c" "${SOURCE_DIR}/examples/*.md"
  "${SOURCE_DIR}/examples/py.typed")
foreach(name IN LISTS examples)
  configure_file("${SOURCE_DIR}/examples/${name}" "${examples_dir}/${name}" COPYONLY)
endforeach()
file(GLOB_RECURSE copied RELATIVE "${examples_dir}"
  "${examples_dir}/*.py" "${examples_dir}/*.c" "${examples_dir}/*.md" "${examples_dir}/py.typed")
foreach(name IN LISTS copied)
  if(NOT name IN_LIST examples)
    file(REMOVE "${examples_dir}/${name}")
  endif()
endforeach()
