# The Python package's tests (python/tests), run with pytest against the extension this build
# made (build/python), so CI builds the library once for C++, C, Python and Rust alike.
if(NOT TARGET metrale_python)
  return()
endif()
add_test(NAME python_pytest COMMAND ${Python_EXECUTABLE} -m pytest -q -p no:cacheprovider
                                    ${PROJECT_SOURCE_DIR}/python/tests WORKING_DIRECTORY ${PROJECT_BINARY_DIR})
set_tests_properties(
  python_pytest PROPERTIES ENVIRONMENT
                           "PYTHONPATH=${PROJECT_BINARY_DIR}/python;METRALE_CACHE_DIR=${PROJECT_BINARY_DIR}/test-cache")
