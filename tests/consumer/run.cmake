# run.cmake: installs the built library into a fresh prefix and builds three small consumers
# against it with find_package(metrale_jit): a C++ one that includes only <metrale/metrale.hpp>,
# a C one that includes only <metrale/metrale.h>, and the C ABI's host JIT test (an engine kernel
# compiled at run time by the system compiler against the installed host prelude). Then it moves
# the prefix elsewhere and runs them there with every METRALE_* variable unset, from copies of
# their sources, so nothing of the source or build tree can be read:
# - libmetrale.so and libmetrale_jit.a hold no path of either tree outside their debug sections
#   (their loadable bytes, debug sections stripped, are searched for both paths);
# - the prefix they were installed into no longer exists when they run, so the host JIT can only
#   have found its headers relative to the loaded libmetrale.so (src/host/host_include_dir.hpp).
# Inputs: SOURCE_DIR, BINARY_DIR, WORK_DIR, LIBDIR (CMAKE_INSTALL_LIBDIR), OBJCOPY.
file(REMOVE_RECURSE ${WORK_DIR})
set(prefix ${WORK_DIR}/prefix)
execute_process(COMMAND ${CMAKE_COMMAND} --install ${BINARY_DIR} --prefix ${prefix} RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "install into ${prefix} failed: ${rc}")
endif()
foreach(header metrale/host/cuda_host_prelude.hpp metrale/host/thread_context.hpp metrale/host/host_kernel.hpp)
  if(NOT EXISTS ${prefix}/include/${header})
    message(FATAL_ERROR "the install lacks include/${header}, which the host JIT compiles against")
  endif()
endforeach()

# No path of the source or build tree in the libraries' loadable bytes.
file(GLOB installed_libraries ${prefix}/${LIBDIR}/libmetrale*.so ${prefix}/${LIBDIR}/libmetrale*.a)
list(LENGTH installed_libraries count)
if(count LESS 2)
  message(FATAL_ERROR "expected libmetrale.so and libmetrale_jit.a under ${prefix}/${LIBDIR}, found: ${installed_libraries}")
endif()
file(MAKE_DIRECTORY ${WORK_DIR}/stripped)
foreach(library IN LISTS installed_libraries)
  get_filename_component(name ${library} NAME)
  set(stripped ${WORK_DIR}/stripped/${name})
  execute_process(COMMAND ${OBJCOPY} --strip-debug ${library} ${stripped} RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${OBJCOPY} --strip-debug ${library} failed: ${rc}")
  endif()
  foreach(tree ${SOURCE_DIR} ${BINARY_DIR})
    file(STRINGS ${stripped} baked REGEX "${tree}")
    if(baked)
      list(GET baked 0 first)
      message(FATAL_ERROR "${name} has a path of ${tree} baked in: '${first}'")
    endif()
  endforeach()
endforeach()

# The consumers' sources, copied: the build reads its own copy, never the checkout.
file(COPY ${SOURCE_DIR}/tests/consumer/ DESTINATION ${WORK_DIR}/src)
file(COPY ${SOURCE_DIR}/tests/capi/capi_host_jit.c ${SOURCE_DIR}/tests/capi/capi_check.h DESTINATION ${WORK_DIR}/src)
execute_process(COMMAND ${CMAKE_COMMAND} -S ${WORK_DIR}/src -B ${WORK_DIR}/build -DCMAKE_PREFIX_PATH=${prefix}
                RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "configuring the consumer against the installed package failed: ${rc}")
endif()
execute_process(COMMAND ${CMAKE_COMMAND} --build ${WORK_DIR}/build RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "building the consumer failed: ${rc}")
endif()

# The install moved away: only what is relative to the loaded library can be found.
set(moved ${WORK_DIR}/moved)
file(RENAME ${prefix} ${moved})
set(clean_env
    ${CMAKE_COMMAND} -E env --unset=METRALE_INCLUDE_DIR --unset=METRALE_TEMPLATE_DIR --unset=METRALE_HARDWARE_DIR
    --unset=METRALE_CUDA_INCLUDE_DIR --unset=METRALE_CACHE_DIR --unset=METRALE_BUNDLE_DIR
    LD_LIBRARY_PATH=${moved}/${LIBDIR})

execute_process(COMMAND ${clean_env} ${WORK_DIR}/build/consumer WORKING_DIRECTORY ${WORK_DIR} RESULT_VARIABLE rc
                OUTPUT_VARIABLE out)
message(STATUS "consumer printed: ${out}")
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "the consumer exited ${rc}")
endif()
if(NOT out MATCHES "target hopper")
  message(FATAL_ERROR "the consumer did not open the hopper target")
endif()
execute_process(COMMAND ${clean_env} ${WORK_DIR}/build/c_consumer WORKING_DIRECTORY ${WORK_DIR} RESULT_VARIABLE rc
                OUTPUT_VARIABLE out)
message(STATUS "c_consumer printed: ${out}")
if(NOT rc EQUAL 0 OR NOT out MATCHES "metrale [0-9.]+ on hopper")
  message(FATAL_ERROR "the C consumer exited ${rc} or did not name the hopper target")
endif()
execute_process(COMMAND ${clean_env} ${WORK_DIR}/build/c_host_jit ${WORK_DIR}/cache WORKING_DIRECTORY ${WORK_DIR}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
message(STATUS "c_host_jit printed: ${out}${err}")
if(NOT rc EQUAL 0 OR NOT out MATCHES "all C ABI host JIT checks passed")
  message(FATAL_ERROR "an engine kernel did not run through the host JIT of the moved install (exit ${rc})")
endif()
file(GLOB objects ${WORK_DIR}/cache/host/capi_jit_mirror*.so)
if(NOT objects)
  message(FATAL_ERROR "the host JIT kept no object under ${WORK_DIR}/cache/host")
endif()
