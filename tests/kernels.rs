//! sharm's own reduction kernels (`src/kernels`) at work in the plugin:
//! 8-bit integer MPI_SUM over 1000 elements wraps, as MPI's reference
//! behaviour does, through every reduction (scenario `wrap8` of the C
//! checker: Reduce, Allreduce, Reduce_scatter(_block), Scan, Exscan), at
//! np 2-4 and with every Allreduce algorithm.  Open MPI 4.1's op/avx
//! saturates these sums instead (Open MPI issue 8045), so a result check
//! alone could pass only if sharm's kernels ran; the verbose-100 line that
//! names the combiner proves it either way, and the `ompi` setting must
//! name Open MPI's.

mod support;

use support::{checker, run_checker};

const KERNEL_LINE: &str = "MPI_SUM on MPI_INT8_T: sharm's reduction kernel";
const OMPI_LINE: &str = "MPI_SUM on MPI_INT8_T: Open MPI's ompi_op_reduce";

fn wrap8(np: usize, allreduce: &str) {
    let job = checker()
        .job(np, "wrap8")
        .mca("coll_sharm_allreduce_algorithm", allreduce)
        .mca("coll_sharm_verbose", "100")
        .mpirun_args(&["--oversubscribe"]);
    let (run, summary) = run_checker(&job, "wrap8");
    assert!(
        summary.served > 0 && summary.fallbacks == 0,
        "{}",
        run.report("not all served")
    );
    assert!(
        run.output().contains(KERNEL_LINE),
        "{}",
        run.report("sharm's kernel was not used for MPI_SUM on MPI_INT8_T")
    );
    assert!(
        !run.output().contains(OMPI_LINE),
        "{}",
        run.report("Open MPI's reduce was used")
    );
}

#[test]
fn np2_int8_sums_wrap() {
    wrap8(2, "auto");
}

#[test]
fn np3_int8_sums_wrap_every_allreduce_algorithm() {
    for alg in ["linear", "knomial", "allgather", "reduce_scatter_allgather"] {
        wrap8(3, alg);
    }
}

#[test]
fn np4_int8_sums_wrap_every_allreduce_algorithm() {
    for alg in ["linear", "knomial", "allgather", "reduce_scatter_allgather"] {
        wrap8(4, alg);
    }
}

/// `coll_sharm_reduction_kernels ompi` hands every fold to Open MPI: the
/// verbose line names it (the results then depend on Open MPI's op
/// components, so only the generic reductions, whose checks avoid
/// overflow, are run).
#[test]
fn ompi_setting_uses_open_mpis_reduction() {
    let job = checker()
        .job(2, "allreduce")
        .mca("coll_sharm_reduction_kernels", "ompi")
        .mca("coll_sharm_verbose", "100");
    let (run, _) = run_checker(&job, "allreduce");
    assert!(
        run.output().contains("Open MPI's ompi_op_reduce"),
        "{}",
        run.report("no fold went to Open MPI")
    );
    assert!(
        !run.output().contains("sharm's reduction kernel"),
        "{}",
        run.report("a fold used sharm's kernel although coll_sharm_reduction_kernels is ompi")
    );
}

/// The element-wise kernels in the built plugin contain no gather or scatter
/// instruction.  LLVM's loop vectoriser once vectorised the block loop of
/// `kernels::elementwise::apply` *across* blocks for 64-bit elements at
/// AVX-512 (a 256-byte-stride gather per operand, a scatter per result):
/// fused double SUM ran at a tenth of the contiguous speed (docs/kernels.md).
/// The kernels only ever walk their buffers contiguously, so any such
/// instruction in them is that mistake again.  Reads the plugin's code with
/// `objdump` (binutils, which comes with gcc).
#[test]
fn compiled_kernels_use_no_gather_or_scatter() {
    let plugin = support::target_dir().join("release/libmca_coll_sharm.so");
    let out = std::process::Command::new("objdump")
        .args(["-d", "--no-show-raw-insn"])
        .arg(&plugin)
        .output()
        .unwrap_or_else(|e| panic!("objdump {}: {e}", plugin.display()));
    assert!(
        out.status.success(),
        "objdump {} failed (run `cargo build --release` first): {}",
        plugin.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    let (mut kernels, mut current, mut bad) = (0, false, Vec::new());
    for line in text.lines() {
        if line.ends_with(">:") {
            // A function's first line: `<address> <symbol>:`.
            current = line.contains("kernels11elementwise");
            kernels += current as usize;
        } else if current {
            let mnemonic = line.split('\t').nth(1).unwrap_or("").trim();
            if ["vgather", "vpgather", "vscatter", "vpscatter"]
                .iter()
                .any(|p| mnemonic.starts_with(p))
            {
                bad.push(line.to_string());
            }
        }
    }
    assert!(
        kernels > 0,
        "no kernels::elementwise function found in {}",
        plugin.display()
    );
    assert!(
        bad.is_empty(),
        "{} gather/scatter instructions in {kernels} element-wise kernels, e.g. {:?}",
        bad.len(),
        &bad[..bad.len().min(3)]
    );
}
