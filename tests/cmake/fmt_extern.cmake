# fmt_extern.cmake: no object of the library compiles its own copy of fmt's formatter core
# (src/ground/fmt_extern.hpp). Only for fmt 9 built shared and GCC: fmt 10 declares it extern
# itself, and clang's name for it differs from the GCC-built libfmt's, so clang keeps its copy.
if(fmt_VERSION VERSION_GREATER_EQUAL 9 AND fmt_VERSION VERSION_LESS 10 AND CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
  add_test(NAME fmt_formatter_left_to_libfmt
           COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/scripts/fmt_formatter_left_to_libfmt.sh $<TARGET_FILE:metrale_jit>)
endif()
