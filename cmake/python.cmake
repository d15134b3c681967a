# python.cmake: the Python extension metrale._native (nanobind, over the C ABI) in the main
# build tree, next to copies of python/metrale/*.py, so pytest runs against build/python
# without a second build. ON by default when nanobind is importable; scikit-build-core
# (pip install ./python) drives this same file with the tests and tools off and installs
# the "python" component (the extension, libmetrale.so and the host JIT's headers) into the
# wheel's metrale/.
find_package(Python 3.9 COMPONENTS Interpreter Development.Module QUIET)
set(METRALE_NANOBIND_DIR "")
if(Python_FOUND)
  execute_process(COMMAND ${Python_EXECUTABLE} -m nanobind --cmake_dir OUTPUT_VARIABLE METRALE_NANOBIND_DIR
                  OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET RESULT_VARIABLE metrale_nanobind_rc)
  if(NOT metrale_nanobind_rc EQUAL 0)
    set(METRALE_NANOBIND_DIR "")
  endif()
endif()
if(METRALE_NANOBIND_DIR)
  set(metrale_python_default ON)
else()
  set(metrale_python_default OFF)
endif()
option(METRALE_BUILD_PYTHON "Build the Python extension (needs nanobind: pip install nanobind)"
       ${metrale_python_default})
if(NOT METRALE_BUILD_PYTHON)
  message(STATUS "metrale: the Python package is not built (nanobind is not importable by ${Python_EXECUTABLE})")
  return()
endif()
if(NOT METRALE_NANOBIND_DIR)
  message(FATAL_ERROR "METRALE_BUILD_PYTHON is ON but nanobind is not importable: pip install nanobind")
endif()
list(APPEND CMAKE_PREFIX_PATH ${METRALE_NANOBIND_DIR})
find_package(nanobind CONFIG REQUIRED)

set(METRALE_PYTHON_DIR ${PROJECT_BINARY_DIR}/python/metrale)
file(GLOB METRALE_PYTHON_SOURCES CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/python/src/*.cpp)
nanobind_add_module(metrale_python NB_STATIC ${METRALE_PYTHON_SOURCES})
set_target_properties(metrale_python PROPERTIES OUTPUT_NAME _native LIBRARY_OUTPUT_DIRECTORY ${METRALE_PYTHON_DIR}
                                                INSTALL_RPATH "$ORIGIN")
target_link_libraries(metrale_python PRIVATE metrale_c)

# The package's Python files beside the extension, refreshed on every build.
file(GLOB METRALE_PYTHON_FILES CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/python/metrale/*)
set(metrale_python_copies "")
foreach(file IN LISTS METRALE_PYTHON_FILES)
  get_filename_component(name ${file} NAME)
  add_custom_command(OUTPUT ${METRALE_PYTHON_DIR}/${name} COMMAND ${CMAKE_COMMAND} -E copy ${file}
                                                                  ${METRALE_PYTHON_DIR}/${name} DEPENDS ${file})
  list(APPEND metrale_python_copies ${METRALE_PYTHON_DIR}/${name})
endforeach()
add_custom_target(metrale_python_files ALL DEPENDS ${metrale_python_copies})
add_dependencies(metrale_python metrale_python_files)

# The wheel's metrale/ folder: the extension, libmetrale.so and the headers the host JIT compiles
# against (metrale/include, found beside libmetrale.so: src/host/host_include_dir.hpp). Only
# `--component python` installs them (scikit-build-core, tests/cmake/python.cmake), never a plain
# `cmake --install`.
install(TARGETS metrale_python metrale_c LIBRARY DESTINATION metrale COMPONENT python EXCLUDE_FROM_ALL)
install(DIRECTORY include/metrale DESTINATION metrale/include COMPONENT python EXCLUDE_FROM_ALL)
# The targets' HARDWARE.toml files and the kernel templates as files (they are also embedded in the
# library): the starting point of an engine's own target file, with no checkout.
install(DIRECTORY hardware/ DESTINATION metrale/share/hardware COMPONENT python EXCLUDE_FROM_ALL
        FILES_MATCHING PATTERN "HARDWARE.toml")
install(FILES ${METRALE_TEMPLATE_FILES} DESTINATION metrale/share/templates COMPONENT python EXCLUDE_FROM_ALL)
