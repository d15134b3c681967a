# install.cmake: headers, the library, the C ABI (libmetrale.so), the CLI and an exported
# CMake package, so a host engine writes find_package(metrale_jit) and links metrale::jit
# (C++) or metrale::c (C, metrale/metrale.h).
include(CMakePackageConfigHelpers)
install(DIRECTORY include/metrale DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(TARGETS metrale_jit metrale_c EXPORT metrale_jit_targets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(EXPORT metrale_jit_targets NAMESPACE metrale:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/metrale_jit)
configure_package_config_file(cmake/metrale_jitConfig.cmake.in ${PROJECT_BINARY_DIR}/metrale_jitConfig.cmake
                              INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/metrale_jit)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/metrale_jitConfigVersion.cmake COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/metrale_jitConfig.cmake ${PROJECT_BINARY_DIR}/metrale_jitConfigVersion.cmake
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/metrale_jit)
