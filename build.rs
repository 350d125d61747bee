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
    metis();
}

/// METIS (`src/hier/remap/metis.rs`): links libmetis and passes the integer and
/// real widths the installed `metis.h` was configured with to the crate, which
/// checks them at compile time against its hand-written `idx_t`/`real_t`
/// (a library built with 64-bit `idx_t` would otherwise read every array
/// wrongly).  Debian: `libmetis-dev` (build), `libmetis5` (run time).
fn metis() {
    let dirs: Vec<PathBuf> = match std::env::var("SHARM_METIS_INCLUDE") {
        Ok(dir) => vec![PathBuf::from(dir)],
        Err(_) => ["/usr/include", "/usr/local/include"]
            .iter()
            .map(PathBuf::from)
            .collect(),
    };
    let header = dirs
        .iter()
        .map(|d| d.join("metis.h"))
        .find(|h| h.exists())
        .unwrap_or_else(|| {
            panic!("metis.h not found in {dirs:?}: install libmetis-dev or set SHARM_METIS_INCLUDE")
        });
    let text = std::fs::read_to_string(&header).expect("metis.h is readable");
    for name in ["IDXTYPEWIDTH", "REALTYPEWIDTH"] {
        let width = text
            .lines()
            .filter_map(|l| l.trim().strip_prefix("#define "))
            .filter_map(|l| l.trim().strip_prefix(name))
            .map(str::trim)
            .find(|v| !v.is_empty())
            .unwrap_or_else(|| panic!("{} defines no {name}", header.display()));
        println!("cargo:rustc-env=SHARM_METIS_{name}={width}");
    }
    if let Ok(dir) = std::env::var("SHARM_METIS_LIB") {
        println!("cargo:rustc-link-search=native={dir}");
    }
    println!("cargo:rustc-link-lib=dylib=metis");
    println!("cargo:rerun-if-changed={}", header.display());
    println!("cargo:rerun-if-env-changed=SHARM_METIS_INCLUDE");
    println!("cargo:rerun-if-env-changed=SHARM_METIS_LIB");
}
