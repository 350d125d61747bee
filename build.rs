//! Compiles the C glue in `ompi-glue/` against Open MPI's development headers
//! and links the plugin against libmpi / libopen-pal.
//!
//! Open MPI's location comes from its wrapper compiler (`mpicc.openmpi
//! --showme:...`), falling back to Debian's fixed paths; set `SHARM_MPICC` to
//! use another Open MPI installation.

use std::path::PathBuf;
use std::process::Command;

fn showme(mpicc: &str, what: &str) -> Option<Vec<String>> {
    let out = Command::new(mpicc)
        .arg(format!("--showme:{what}"))
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    let text = String::from_utf8(out.stdout).ok()?;
    Some(text.split_whitespace().map(str::to_owned).collect())
}

fn main() {
    let mpicc = std::env::var("SHARM_MPICC").unwrap_or_else(|_| "mpicc.openmpi".to_owned());
    let debian = "/usr/lib/x86_64-linux-gnu/openmpi";
    let mut incdirs = showme(&mpicc, "incdirs").unwrap_or_else(|| {
        vec![
            format!("{debian}/include"),
            format!("{debian}/include/openmpi"),
        ]
    });
    // The devel headers (ompi/mca/coll/coll.h, ...) sit in <incdir>/openmpi.
    let devel: Vec<String> = incdirs
        .iter()
        .map(|d| format!("{d}/openmpi"))
        .filter(|d| PathBuf::from(d).join("ompi/mca/coll/coll.h").exists())
        .collect();
    incdirs.extend(devel);
    let libdirs = showme(&mpicc, "libdirs").unwrap_or_else(|| vec![format!("{debian}/lib")]);

    let glue = PathBuf::from("ompi-glue");
    let mut build = cc::Build::new();
    build
        .files(["component.c", "ompi_calls.c", "kernel_ids.c"].map(|f| glue.join(f)))
        .includes(&incdirs)
        // Last, so that a distribution shipping the real header wins.
        .include(glue.join("compat"))
        .flag_if_supported("-std=gnu11")
        .warnings(true)
        .extra_warnings(true)
        .flag_if_supported("-Wno-unused-parameter")
        .flag_if_supported("-Wno-sign-compare")
        .flag_if_supported("-Wno-missing-field-initializers")
        .compile("sharm_glue");

    for dir in &libdirs {
        println!("cargo:rustc-link-search=native={dir}");
    }
    println!("cargo:rustc-link-lib=dylib=mpi");
    println!("cargo:rustc-link-lib=dylib=open-pal");
    println!("cargo:rerun-if-changed=ompi-glue");
    println!("cargo:rerun-if-env-changed=SHARM_MPICC");
}
