# capi.cmake: libmetrale.so, the C ABI (include/metrale/metrale.h) over the static library,
# for C, Python (python/) and Rust (examples/rust-engine/). Only metrale_* symbols are exported
# (hidden visibility plus a version script), so the C++ inside never clashes with a host's.
file(GLOB METRALE_CAPI_SOURCES CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/src/capi/*.cpp)
add_library(metrale_c SHARED ${METRALE_CAPI_SOURCES})
add_library(metrale::c ALIAS metrale_c)
set_target_properties(
  metrale_c
  PROPERTIES OUTPUT_NAME metrale
             EXPORT_NAME c
             C_VISIBILITY_PRESET hidden
             CXX_VISIBILITY_PRESET hidden
             VISIBILITY_INLINES_HIDDEN ON
             LINK_DEPENDS ${PROJECT_SOURCE_DIR}/cmake/metrale_c.map)
# A wheel cannot hold the soname links, so the Python package ships the bare libmetrale.so.
if(NOT SKBUILD)
  set_target_properties(metrale_c PROPERTIES VERSION ${PROJECT_VERSION} SOVERSION ${PROJECT_VERSION_MAJOR})
endif()
target_compile_definitions(metrale_c PRIVATE METRALE_VERSION_STRING="${PROJECT_VERSION}")
target_include_directories(metrale_c PUBLIC $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include>
                                            $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
# The C ABI sits above the runtime: it may use the layers' private headers (src/), never the reverse.
target_include_directories(metrale_c PRIVATE ${PROJECT_SOURCE_DIR}/src)
target_link_libraries(metrale_c PRIVATE metrale_jit $<BUILD_INTERFACE:metrale_warnings>)
target_link_options(metrale_c PRIVATE -Wl,--version-script=${PROJECT_SOURCE_DIR}/cmake/metrale_c.map
                    -Wl,--no-undefined)
