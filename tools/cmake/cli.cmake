# The metrale-jit command-line tool.
find_package(CLI11 REQUIRED)
file(GLOB METRALE_CLI_SOURCES CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/cli/*.cpp)
add_executable(metrale-jit ${METRALE_CLI_SOURCES})
target_link_libraries(metrale-jit PRIVATE metrale::jit CLI11::CLI11 metrale_warnings)
target_include_directories(metrale-jit PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/cli)
install(TARGETS metrale-jit RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
# `metrale-jit info` names the library's version.
target_compile_definitions(metrale-jit PRIVATE METRALE_VERSION_STRING="${PROJECT_VERSION}")
# The wheel's copy (python/pyproject.toml): metrale/bin/metrale-jit, run by the console script.
if(TARGET metrale_python)
  install(TARGETS metrale-jit RUNTIME DESTINATION metrale/bin COMPONENT python EXCLUDE_FROM_ALL)
endif()
