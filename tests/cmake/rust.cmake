# The Rust engine example (examples/rust-engine): `cargo test --offline` against the
# libmetrale.so of this build (METRALE_LIB_DIR), its target folder inside the build tree.
find_program(METRALE_CARGO cargo HINTS $ENV{CARGO_HOME}/bin $ENV{HOME}/.cargo/bin)
if(METRALE_CARGO)
  add_test(NAME rust_engine_cargo_test
           COMMAND ${CMAKE_COMMAND} -E env METRALE_LIB_DIR=$<TARGET_FILE_DIR:metrale_c>
                   CARGO_TARGET_DIR=${PROJECT_BINARY_DIR}/rust-engine METRALE_CACHE_DIR=${PROJECT_BINARY_DIR}/test-cache
                   ${METRALE_CARGO} test --offline --manifest-path ${PROJECT_SOURCE_DIR}/examples/rust-engine/Cargo.toml)
else()
  # Reported as a failure, not skipped: tools/install_deps.sh installs cargo.
  add_test(NAME rust_engine_cargo_test COMMAND sh -c
                                               "echo 'cargo not found: run tools/install_deps.sh (Debian package cargo)'; exit 1")
endif()
