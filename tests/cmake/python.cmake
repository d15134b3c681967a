# The Python package's tests (python/tests), run with pytest against the extension this build
# made (build/python), so CI builds the library once for C++, C, Python and Rust alike.
if(NOT TARGET metrale_python)
  return()
endif()
add_test(NAME python_pytest COMMAND ${Python_EXECUTABLE} -m pytest -q -p no:cacheprovider
                                    ${PROJECT_SOURCE_DIR}/python/tests WORKING_DIRECTORY ${PROJECT_BINARY_DIR})
# METRALE_JIT_CLI: `python -m metrale info` runs this build's CLI (a wheel runs its metrale/bin copy).
set(metrale_pytest_cli "")
if(TARGET metrale-jit)
  set(metrale_pytest_cli ";METRALE_JIT_CLI=$<TARGET_FILE:metrale-jit>")
endif()
set_tests_properties(
  python_pytest
  # COST: its seconds in a fresh clone's CI, so CTest starts it early (toolkit_free.cmake says why).
  PROPERTIES COST 59 ENVIRONMENT
             "PYTHONPATH=${PROJECT_BINARY_DIR}/python;METRALE_CACHE_DIR=${PROJECT_BINARY_DIR}/test-cache${metrale_pytest_cli}")

# The package as its wheel lays it out (the "python" install component and python/metrale), run
# from a fresh folder with no METRALE_* variable: the host JIT finds its headers in the package.
add_test(NAME python_wheel_layout
         COMMAND ${CMAKE_COMMAND} -DSOURCE_DIR=${PROJECT_SOURCE_DIR} -DBINARY_DIR=${PROJECT_BINARY_DIR}
                 -DWORK_DIR=${PROJECT_BINARY_DIR}/python-wheel-test -DPYTHON=${Python_EXECUTABLE} -P
                 ${PROJECT_SOURCE_DIR}/tests/python_wheel/run.cmake)

# The PyTorch custom ops (metrale.torch) in the cached torch environment (tools/torch_env.sh):
# skips (77) where none was made, fails there under METRALE_REQUIRE_TORCH=1 (.ci/run).
add_test(NAME python_torch COMMAND bash ${PROJECT_SOURCE_DIR}/tests/torch/run.sh ${Python_EXECUTABLE}
                                   ${PROJECT_SOURCE_DIR} WORKING_DIRECTORY ${PROJECT_BINARY_DIR})
set_tests_properties(
  python_torch
  PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 900 COST 51 ENVIRONMENT
             "PYTHONPATH=${PROJECT_BINARY_DIR}/python;METRALE_CACHE_DIR=${PROJECT_BINARY_DIR}/test-cache")
