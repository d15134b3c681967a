# The library with no CUDA toolkit, only NVIDIA's wheels (tests/toolkit_free/run.sh): the system
# toolkit hidden in a private mount namespace, the CUDA 13 wheels and the CUDA 12.9 ones each in a
# virtual environment cached outside the checkout; the hopper set compiled for sm_90 with each
# wheel's NVRTC, the toolkit-header kernels against its headers, the cache key split by release.
# Skips (77) only where namespaces are refused.
if(NOT TARGET metrale-jit)
  return()
endif()
if(Python_EXECUTABLE)
  set(metrale_toolkit_free_python ${Python_EXECUTABLE})
else()
  find_program(metrale_toolkit_free_python NAMES python3)
endif()
if(NOT metrale_toolkit_free_python)
  return()
endif()
# COST: seconds each took in a fresh clone's CI (2026-12-07). CTest orders tests costliest first
# only from a previous run's timings, which a fresh clone lacks, so these two ran last. With COST
# they start first: a fixed order, not a speed-up (make test took 595 s before, 609 and 625 s after).
set(metrale_toolkit_free_cost_cu13 97)
set(metrale_toolkit_free_cost_cu12 42)
foreach(flavor cu13 cu12)
  add_test(NAME toolkit_free_${flavor}
           COMMAND bash ${PROJECT_SOURCE_DIR}/tests/toolkit_free/run.sh ${flavor} ${PROJECT_BINARY_DIR}
                   ${PROJECT_SOURCE_DIR} ${PROJECT_BINARY_DIR}/toolkit-free-${flavor} ${metrale_toolkit_free_python})
  # The lock: both flavors' NVRTC compiles at once would double the test's share of a loaded CI.
  set_tests_properties(toolkit_free_${flavor} PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 1200 RESOURCE_LOCK toolkit_free
                                                         COST ${metrale_toolkit_free_cost_${flavor}})
endforeach()
