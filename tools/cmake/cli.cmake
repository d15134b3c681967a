# The metrale-jit command-line tool.
find_package(CLI11 REQUIRED)
file(GLOB METRALE_CLI_SOURCES CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/cli/*.cpp)
add_executable(metrale-jit ${METRALE_CLI_SOURCES})
target_link_libraries(metrale-jit PRIVATE metrale::jit CLI11::CLI11 metrale_warnings)
target_include_directories(metrale-jit PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/cli)
install(TARGETS metrale-jit RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
