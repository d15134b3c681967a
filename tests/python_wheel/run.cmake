# run.cmake: the Python package as the wheel lays it out, without building a wheel: the "python"
# install component (the extension, libmetrale.so and the host JIT's headers under
# metrale/include, what scikit-build-core installs into the wheel) plus python/metrale's files
# (the wheel's packages), in a fresh folder. Then, with every METRALE_* variable unset and that
# folder alone on PYTHONPATH, an engine kernel runs on the host backend through the host JIT
# (host_jit_from_wheel.py), which can only have found its headers beside the loaded libmetrale.so.
# Inputs: SOURCE_DIR, BINARY_DIR, WORK_DIR, PYTHON.
file(REMOVE_RECURSE ${WORK_DIR})
set(site ${WORK_DIR}/site)
execute_process(COMMAND ${CMAKE_COMMAND} --install ${BINARY_DIR} --component python --prefix ${site}
                RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "installing the python component into ${site} failed: ${rc}")
endif()
foreach(file metrale/libmetrale.so metrale/include/metrale/host/cuda_host_prelude.hpp
             metrale/include/metrale/host/thread_context.hpp metrale/include/metrale/host/host_kernel.hpp
             metrale/bin/metrale-jit metrale/share/hardware/hopper/HARDWARE.toml metrale/share/templates/metrale_arith.cuh)
  if(NOT EXISTS ${site}/${file})
    message(FATAL_ERROR "the wheel's layout lacks ${file}")
  endif()
endforeach()
file(GLOB package_files ${SOURCE_DIR}/python/metrale/*)
file(COPY ${package_files} DESTINATION ${site}/metrale)
file(COPY ${SOURCE_DIR}/tests/python_wheel/host_jit_from_wheel.py DESTINATION ${WORK_DIR})
execute_process(
  COMMAND ${CMAKE_COMMAND} -E env --unset=METRALE_INCLUDE_DIR --unset=METRALE_TEMPLATE_DIR
          --unset=METRALE_HARDWARE_DIR --unset=METRALE_CUDA_INCLUDE_DIR --unset=METRALE_CACHE_DIR PYTHONPATH=${site}
          ${PYTHON} ${WORK_DIR}/host_jit_from_wheel.py ${site} ${WORK_DIR}/cache
  WORKING_DIRECTORY ${WORK_DIR}
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
message(STATUS "host_jit_from_wheel.py: ${out}${err}")
if(NOT rc EQUAL 0 OR NOT out MATCHES "engine kernel ran through the host JIT")
  message(FATAL_ERROR "an engine kernel did not run from the wheel's layout (exit ${rc})")
endif()
