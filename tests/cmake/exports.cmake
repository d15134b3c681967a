# exports.cmake: libmetrale.so exports exactly the C ABI of metrale.h, and executables linking the
# static library export none of its C++ symbols (tests/scripts/check_exports.sh).
set(metrale_export_executables $<TARGET_FILE:metrale_unit_tests>)
if(TARGET metrale-jit)
  list(APPEND metrale_export_executables $<TARGET_FILE:metrale-jit>)
endif()
add_test(NAME exports_c_abi_only COMMAND bash ${PROJECT_SOURCE_DIR}/tests/scripts/check_exports.sh ${CMAKE_NM}
                                         ${PROJECT_SOURCE_DIR}/include/metrale/metrale.h $<TARGET_FILE:metrale_c>
                                         ${metrale_export_executables})
