//! Links libmetrale.so from METRALE_LIB_DIR (the CMake build folder; the CTest entry sets it)
//! and records that folder as the run-time search path of the test binaries.
use std::env;
use std::path::Path;

fn main() {
    println!("cargo:rerun-if-env-changed=METRALE_LIB_DIR");
    let dir = env::var("METRALE_LIB_DIR").unwrap_or_else(|_| {
        panic!("METRALE_LIB_DIR is not set: point it at the folder holding libmetrale.so (the CMake build folder)")
    });
    if !Path::new(&dir).join("libmetrale.so").exists() {
        panic!("METRALE_LIB_DIR={dir} holds no libmetrale.so: build the metrale_c target first");
    }
    println!("cargo:rustc-link-search=native={dir}");
    println!("cargo:rustc-link-lib=dylib=metrale");
    println!("cargo:rustc-link-arg=-Wl,-rpath,{dir}");
}
