//! Compiles the C glue in `ompi-glue/` against Open MPI's development headers
//! and links the plugin against libmpi / libopen-pal.
//!
//! Open MPI's location comes from its wrapper compiler (`mpicc.openmpi
//! --showme:...`), falling back to Debian's fixed paths; set `SHARM_MPICC` to
//! use another Open MPI installation.
//!
//! The glue has one flavour per Open MPI series (`ompi-glue/flavour.h`): 41
//! (4.1, coll API 2.0.0) and 50 (5.0, coll API 2.4.0).  It is read from the
//! installed `mpi.h` (`OMPI_MAJOR_VERSION`); `SHARM_OMPI_FLAVOUR=41|50`
//! forces one (the glue still checks it against the headers).

use std::path::{Path, PathBuf};
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

/// `OMPI_{MAJOR,MINOR,RELEASE}_VERSION` from the first `mpi.h` in `incdirs`.
fn ompi_version(incdirs: &[String]) -> Option<(u32, u32, u32)> {
    let text = incdirs
        .iter()
        .find_map(|d| std::fs::read_to_string(Path::new(d).join("mpi.h")).ok())?;
    let field = |name: &str| -> Option<u32> {
        text.lines().find_map(|l| {
            let mut words = l.split_whitespace();
            match (words.next(), words.next(), words.next()) {
                (Some("#define"), Some(n), Some(v)) if n == name => v.parse().ok(),
                _ => None,
            }
        })
    };
    Some((
        field("OMPI_MAJOR_VERSION")?,
        field("OMPI_MINOR_VERSION")?,
        field("OMPI_RELEASE_VERSION")?,
    ))
}

fn has_header(dirs: &[String], header: &str) -> bool {
    dirs.iter().any(|d| Path::new(d).join(header).exists())
}

/// Include directories of PMIx (5.0's headers include `pmix.h`).
fn pmix_incdirs() -> Vec<String> {
    let from_pkg_config = Command::new("pkg-config")
        .args(["--cflags-only-I", "pmix"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .map(|t| {
            t.split_whitespace()
                .filter_map(|w| w.strip_prefix("-I").map(str::to_owned))
                .collect::<Vec<_>>()
        })
        .filter(|v| has_header(v, "pmix.h"));
    // Debian 13 without pkg-config installed.
    from_pkg_config.unwrap_or_else(|| vec!["/usr/lib/x86_64-linux-gnu/pmix2/include".to_owned()])
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

    let version = ompi_version(&incdirs);
    let flavour = match std::env::var("SHARM_OMPI_FLAVOUR") {
        Ok(f) => match f.trim_start_matches('v').replace('.', "").as_str() {
            "41" => "41",
            "50" => "50",
            other => panic!("SHARM_OMPI_FLAVOUR={other}: the glue has flavours 41 and 50"),
        },
        Err(_) => match version {
            Some((4, _, _)) => "41",
            Some((5, _, _)) => "50",
            Some((major, minor, _)) => panic!(
                "Open MPI {major}.{minor} has no glue flavour yet (ompi-glue/flavour.h: 4.1, 5.0)"
            ),
            None => panic!("no mpi.h with OMPI_MAJOR_VERSION in {incdirs:?}; set SHARM_MPICC"),
        },
    };

    if flavour == "50" {
        incdirs.extend(pmix_incdirs());
        // Debian 13's libopenmpi-dev lacks opal/mca/threads/pthreads/*.h,
        // which opal_config.h includes; ci/ompi-headers.sh extracts them from
        // Debian's source package into a cache (never into this repository).
        let threads = "opal/mca/threads/pthreads/threads_pthreads_mutex.h";
        if !has_header(&incdirs, threads) {
            let dir = std::env::var("SHARM_OMPI_SOURCE_HEADERS").unwrap_or_else(|_| {
                let (a, b, c) = version.unwrap_or((5, 0, 0));
                format!("/var/cache/sharm/openmpi-headers/{a}.{b}.{c}/include")
            });
            if !Path::new(&dir).join(threads).exists() {
                panic!(
                    "{threads} is missing from Open MPI's headers and from {dir}: \
                     run ci/ompi-headers.sh (or set SHARM_OMPI_SOURCE_HEADERS)"
                );
            }
            incdirs.push(dir);
        }
    }

    let glue = PathBuf::from("ompi-glue");
    let flavour_c = format!("flavour_v{flavour}.c");
    // The module follows the coll framework API: 2.x for 4.1 and 5.0 (a
    // coll_api3.c would serve Open MPI 6's API 3.0.0).
    let module_c = "coll_api2.c";
    let mut build = cc::Build::new();
    build
        .files(
            [
                "component.c",
                "ompi_calls.c",
                "kernel_ids.c",
                module_c,
                &flavour_c,
            ]
            .map(|f| glue.join(f)),
        )
        .includes(&incdirs)
        // Last, so that a distribution shipping the real header wins.
        .include(glue.join("compat"))
        .define("SHARM_OMPI_FLAVOUR", flavour)
        // Debian's hardening default (lintian: hardening-no-fortify-functions).
        .define("_FORTIFY_SOURCE", "2")
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
    if flavour == "50" {
        // 5.0's OPAL_MODEX_* macros call PMIx_Get & co. directly (4.1 went
        // through opal_pmix); libpmix.so is in /usr/lib/<triplet> on Debian 13.
        println!("cargo:rustc-link-lib=dylib=pmix");
    }
    println!("cargo:rerun-if-changed=ompi-glue");
    for var in [
        "SHARM_MPICC",
        "SHARM_OMPI_FLAVOUR",
        "SHARM_OMPI_SOURCE_HEADERS",
    ] {
        println!("cargo:rerun-if-env-changed={var}");
    }
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
