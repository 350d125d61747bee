//! The component's MCA parameters, validated, as one communicator uses them.

use crate::ompi::call::Coll;
use crate::ompi::ffi;

/// Algorithm choice of a `*_algorithm` parameter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Algorithm {
    Auto,
    Linear,
    Knomial,
    /// Every process gathers all contributions and reduces them itself
    /// (Allreduce only).
    Allgather,
    /// Reduce-scatter, then allgather of the reduced slices (Allreduce only).
    ReduceScatterAllgather,
    /// p-1 pairwise exchange rounds (Alltoall only).
    Pairwise,
    /// Prefix passed from rank to rank (Scan/Exscan only).
    Chain,
    /// Gather to rank 0, then Bcast (Allgather only).
    GatherBcast,
    /// Reduce to rank 0, then Scatterv (Reduce_scatter(_block) only).
    ReduceThenScatter,
}

/// One decoding table: the stored integer, the name `ompi_info` shows, and
/// the variant.  The glue's tables must agree (`check_tables`).
type Table<T> = &'static [(i32, &'static str, T)];

const ALGORITHMS: Table<Algorithm> = &[
    (0, "auto", Algorithm::Auto),
    (1, "linear", Algorithm::Linear),
    (2, "knomial", Algorithm::Knomial),
    (3, "allgather", Algorithm::Allgather),
    (
        4,
        "reduce_scatter_allgather",
        Algorithm::ReduceScatterAllgather,
    ),
    (6, "pairwise", Algorithm::Pairwise),
    (7, "chain", Algorithm::Chain),
    (8, "gather_bcast", Algorithm::GatherBcast),
    (9, "reduce_then_scatter", Algorithm::ReduceThenScatter),
];

const TOP_ALLREDUCE: Table<TopAllreduce> = &[
    (0, "auto", TopAllreduce::Auto),
    (1, "recursive_doubling", TopAllreduce::RecursiveDoubling),
    (2, "ring", TopAllreduce::Ring),
    (3, "lattice_ring", TopAllreduce::LatticeRing),
    (4, "trinaryx3", TopAllreduce::Trinaryx3),
];

const HIER_ALLGATHER: Table<HierAllgather> = &[
    (0, "auto", HierAllgather::Auto),
    (1, "hierarchical", HierAllgather::Hierarchical),
    (2, "recursive_doubling", HierAllgather::RecursiveDoubling),
    (3, "bruck", HierAllgather::Bruck),
];

const ALLGATHER_REMAPS: Table<AllgatherRemap> = &[
    (0, "none", AllgatherRemap::None),
    (1, "exch", AllgatherRemap::Exch),
    (2, "reorder", AllgatherRemap::Reorder),
];

const KERNEL_SOURCES: Table<KernelSource> = &[
    (0, "sharm", KernelSource::Sharm),
    (1, "ompi", KernelSource::Ompi),
];

const HIERARCHY_MODES: Table<HierarchyMode> = &[
    (0, "auto", HierarchyMode::Auto),
    (1, "off", HierarchyMode::Off),
    (2, "on", HierarchyMode::On),
];

const GROUP_ALGORITHMS: Table<GroupAlgorithm> = &[
    (1, "flat", GroupAlgorithm::Flat),
    (2, "knomial", GroupAlgorithm::Binomial),
    (5, "ring", GroupAlgorithm::Ring),
];

const ALLREDUCE_FORMS: Table<AllreduceForm> = &[
    (0, "reduce_bcast", AllreduceForm::ReduceBcast),
    (
        1,
        "reduce_allreduce_bcast",
        AllreduceForm::ReduceAllreduceBcast,
    ),
];

/// How large streams move between processes (`coll_sharm_single_copy`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SingleCopyMode {
    /// CMA when permitted and (with calibration) faster.
    Auto,
    /// Always the queues.
    None,
    /// process_vm_readv whenever permitted.
    Cma,
}

/// How large streams are written into the queues (`coll_sharm_nontemporal`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NontemporalMode {
    /// Non-temporal while this process's ordinary fills measure slow
    /// (`shm::stores`).
    Auto,
    /// Ordinary stores.
    Never,
    /// Non-temporal stores.
    Always,
    /// As `Auto`, from the writer's own fills alone: the readers' reports
    /// of slow copies are neither made nor heeded (`shm::stores`).
    Fills,
}

/// The largest half `coll_sharm_pair_buffer_size` may ask for: a segment
/// holds two, and larger blocks gain nothing from the turns (they no longer
/// fit the cache the turns rely on).
const MAX_PAIR_BUFFER: u64 = 256 << 20;

/// `coll_sharm_pair_buffer_size` in bytes, at most [`MAX_PAIR_BUFFER`]
/// (said once when cut down).
fn pair_buffer_size(raw: u64) -> usize {
    let (bytes, said) = cut_pair_buffer(raw);
    if let Some(line) = said {
        say_once(line);
    }
    bytes
}

/// `pair_buffer_size`'s value and what it says about `raw`.
fn cut_pair_buffer(raw: u64) -> (usize, Option<String>) {
    let said = (raw > MAX_PAIR_BUFFER).then(|| {
        format!(
            "coll_sharm_pair_buffer_size: {} is more than sharm takes for a half; \
             using {MAX_PAIR_BUFFER} bytes",
            as_typed(raw)
        )
    });
    (raw.min(MAX_PAIR_BUFFER) as usize, said)
}

/// A size parameter's value as the user most likely typed it.  Open MPI
/// reads a size_t parameter with strtoull, which takes "-1" and answers
/// 2^64-1: a value beyond i64::MAX is named as the negative number it
/// came from, with what it was read as (nobody types 2^63 bytes).
fn as_typed(raw: u64) -> String {
    if raw > i64::MAX as u64 {
        format!("{} (read as {raw} bytes)", raw as i64)
    } else {
        format!("{raw} bytes")
    }
}

const NONTEMPORAL_MODES: Table<NontemporalMode> = &[
    (0, "auto", NontemporalMode::Auto),
    (1, "never", NontemporalMode::Never),
    (2, "always", NontemporalMode::Always),
    (3, "fills", NontemporalMode::Fills),
];

const SINGLE_COPY_MODES: Table<SingleCopyMode> = &[
    (0, "auto", SingleCopyMode::Auto),
    (1, "none", SingleCopyMode::None),
    (2, "cma", SingleCopyMode::Cma),
];

/// Warns about a parameter's value once per process: the parameters are
/// read at every communicator's query, and a job of 2,000 communicators
/// would otherwise say the same line 2,000 times.
fn say_once(line: String) {
    static SAID: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());
    let mut said = SAID.lock().unwrap_or_else(|e| e.into_inner());
    if !said.contains(&line) {
        tracing::warn!("{line}");
        said.push(line);
    }
}

/// Decodes a stored value; an unknown one (only possible when the glue's
/// tables changed without this file) is reported and replaced by `default`.
fn decode<T: Copy>(table: Table<T>, what: &str, value: i32, default: T) -> T {
    match table.iter().find(|(v, _, _)| *v == value) {
        Some(&(_, _, t)) => t,
        None => {
            say_once(format!("{what}: unknown value {value}; using the default"));
            default
        }
    }
}

/// Decodes a stored algorithm value (a compiled rule's).
pub fn decode_algorithm(value: i32) -> Algorithm {
    decode(ALGORITHMS, "coll_sharm_*_rules", value, Algorithm::Auto)
}

/// The stored value of an algorithm's name (`ompi_info`'s spelling).
pub fn algorithm_value(name: &str) -> Option<i32> {
    ALGORITHMS.iter().find(|(_, n, _)| *n == name).map(|e| e.0)
}

/// Checks every named-value table of the glue against the decoding tables
/// above: each (value, name) must decode to the variant of that name.
pub fn check_tables() -> Result<(), String> {
    check_entries(&ffi::enum_entries())
}

/// `check_tables` over given entries: (table, index, kind, value, name).
fn check_entries(entries: &[(i32, i32, String, i32, String)]) -> Result<(), String> {
    fn check<T: Copy + PartialEq>(table: Table<T>, value: i32, name: &str) -> Result<(), String> {
        let by_value = table.iter().find(|(v, _, _)| *v == value).map(|e| e.2);
        let by_name = table.iter().find(|(_, n, _)| *n == name).map(|e| e.2);
        match (by_value, by_name) {
            (Some(a), Some(b)) if a == b => Ok(()),
            _ => Err(format!(
                "the glue's value {value} named '{name}' decodes differently in Rust"
            )),
        }
    }
    if entries.is_empty() {
        return Err("the glue lists no parameter tables".into());
    }
    for (table, index, kind, value, name) in entries {
        let (value, name) = (*value, name.as_str());
        let result = match kind.as_str() {
            "algorithm" => check(ALGORITHMS, value, name),
            "hierarchy_mode" => check(HIERARCHY_MODES, value, name),
            "group_algorithm" => check(GROUP_ALGORITHMS, value, name),
            "hierarchy_allreduce" => check(ALLREDUCE_FORMS, value, name),
            "reduction_kernels" => check(KERNEL_SOURCES, value, name),
            "top_allreduce" => check(TOP_ALLREDUCE, value, name),
            "hier_allgather" => check(HIER_ALLGATHER, value, name),
            "allgather_remap" => check(ALLGATHER_REMAPS, value, name),
            "single_copy" => check(SINGLE_COPY_MODES, value, name),
            "nontemporal" => check(NONTEMPORAL_MODES, value, name),
            other => Err(format!(
                "the glue has a table of kind '{other}' Rust does not know"
            )),
        };
        result.map_err(|e| format!("parameter table {table} ({kind}), entry {index}: {e}"))?;
    }
    Ok(())
}

/// `coll_sharm_nontemporal_far_latency` 0: a header this late (ns) is a
/// sign of far cores (measured in `shm::stores`, "The readers' side").
pub const DEFAULT_FAR_LATENCY_NS: u32 = 300;

/// `coll_sharm_single_copy_retry_after`'s default, which a negative value
/// falls back to (as the glue registers it).
pub const DEFAULT_RETRY_AFTER: usize = 1000;

/// The most calls of each path `coll_sharm_single_copy_trials` may ask
/// for: trials beyond a few dozen only spend the application's time on the
/// slower path.
pub const MOST_SINGLE_COPY_TRIALS: i32 = 64;

#[derive(Clone, Copy, Debug)]
pub struct Params {
    pub priority: i32,
    pub verbose: i32,
    pub fragment_size: usize,
    /// Slots per queue; 0 (auto) until a channel's set-up resolves it.
    pub queue_slots: usize,
    /// Algorithm per collective (indexed by `stats::Coll`).
    pub algorithm: [Algorithm; 16],
    pub radix: usize,
    /// Largest message sharm serves (bytes); `None` = no limit.
    pub max_message_size: Option<u64>,
    pub shared_memory_budget: u64,
    pub single_copy: SingleCopyMode,
    /// Streams below this many bytes use the queues.
    pub single_copy_min_size: usize,
    /// How streams of at least `nontemporal_min_size` bytes are written
    /// into the queues (`coll_sharm_nontemporal`).
    pub nontemporal: NontemporalMode,
    pub nontemporal_min_size: usize,
    /// Bytes of each half of a two-process channel's pair buffer
    /// (`coll_sharm_pair_buffer_size`, `shm::pair`); 0: none.
    pub pair_buffer_size: usize,
    /// Under `auto`, a header that reaches its waiting reader this many ns
    /// after its stamp or later is a sign of far cores
    /// (`coll_sharm_nontemporal_far_latency`; `shm::stores::Reads`).
    pub nontemporal_far_latency_ns: u32,
    /// `auto` times both paths at the first segment set-up.
    pub calibrate: bool,
    /// Large Gather(v) blocks are written by their senders
    /// (`coll_sharm_single_copy_push`), when CMA writes are permitted.
    pub single_copy_push: bool,
    /// Calls of each path a size class tries before its processes pick
    /// one (`coll_sharm_single_copy_trials`; 0: none, `shm::trials`).
    pub single_copy_trials: usize,
    /// Calls a decided size class makes before it is tried again
    /// (`coll_sharm_single_copy_retry_after`; 0: never).
    pub single_copy_retry_after: usize,
    /// Copies into receive buffers of at least this many bytes use
    /// non-temporal stores (`coll_sharm_nontemporal_landing_min_size`;
    /// None: auto, `kernels::isa::stream_threshold`).
    pub nontemporal_landing_min_size: Option<usize>,
    /// Whether large size classes try their landing too
    /// (`coll_sharm_nontemporal_landing_trials`, `shm::trials`).
    pub nontemporal_landing_trials: bool,
    /// Who combines reduction operands (`coll_sharm_reduction_kernels`).
    pub reduction_kernels: KernelSource,
}

/// Who combines the operands of a reduction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KernelSource {
    /// sharm's own kernels (`kernels`) where they cover the operation and
    /// datatype, Open MPI's otherwise.
    Sharm,
    /// Always Open MPI's `ompi_op_reduce`.
    Ompi,
}

impl Params {
    pub fn from_raw(raw: ffi::RawParams) -> Params {
        Params {
            priority: raw.priority,
            verbose: raw.verbose,
            fragment_size: (raw.fragment_size.max(64)) as usize,
            // 0: auto, resolved by rank 0 when a channel is set up
            // (`layout::auto_slots`); 1 or negative: the least that works.
            queue_slots: if raw.queue_slots == 0 {
                0
            } else {
                raw.queue_slots.max(2) as usize
            },
            algorithm: raw
                .algorithm
                .map(|v| decode(ALGORITHMS, "coll_sharm_*_algorithm", v, Algorithm::Auto)),
            radix: (raw.knomial_radix.max(2)) as usize,
            max_message_size: (raw.max_message_size != 0).then_some(raw.max_message_size),
            shared_memory_budget: raw.shared_memory_budget,
            reduction_kernels: decode(
                KERNEL_SOURCES,
                "coll_sharm_reduction_kernels",
                raw.reduction_kernels,
                KernelSource::Sharm,
            ),
            single_copy: decode(
                SINGLE_COPY_MODES,
                "coll_sharm_single_copy",
                raw.single_copy,
                SingleCopyMode::Auto,
            ),
            single_copy_min_size: usize::try_from(raw.single_copy_min_size).unwrap_or(usize::MAX),
            nontemporal: decode(
                NONTEMPORAL_MODES,
                "coll_sharm_nontemporal",
                raw.nontemporal,
                NontemporalMode::Auto,
            ),
            nontemporal_min_size: usize::try_from(raw.nontemporal_min_size).unwrap_or(usize::MAX),
            pair_buffer_size: pair_buffer_size(raw.pair_buffer_size),
            nontemporal_far_latency_ns: match raw.nontemporal_far_latency {
                0 => DEFAULT_FAR_LATENCY_NS,
                ns if ns > 0 => ns as u32,
                ns => {
                    say_once(format!(
                        "coll_sharm_nontemporal_far_latency: {ns} ns is not a latency; \
                         using the default, {DEFAULT_FAR_LATENCY_NS} ns"
                    ));
                    DEFAULT_FAR_LATENCY_NS
                }
            },
            calibrate: raw.calibrate != 0,
            single_copy_push: raw.single_copy_push != 0,
            single_copy_trials: match raw.single_copy_trials {
                n @ 0..=MOST_SINGLE_COPY_TRIALS => n as usize,
                n => {
                    let kept = n.clamp(0, MOST_SINGLE_COPY_TRIALS);
                    say_once(format!(
                        "coll_sharm_single_copy_trials: {n} is outside 0..={MOST_SINGLE_COPY_TRIALS}; using {kept}"
                    ));
                    kept as usize
                }
            },
            single_copy_retry_after: match raw.single_copy_retry_after {
                n if n >= 0 => n as usize,
                n => {
                    say_once(format!(
                        "coll_sharm_single_copy_retry_after: {n} is not a number of calls; using {DEFAULT_RETRY_AFTER}"
                    ));
                    DEFAULT_RETRY_AFTER
                }
            },
            nontemporal_landing_min_size: match raw.nontemporal_landing_min_size {
                0 => None,
                n => Some(usize::try_from(n).unwrap_or(usize::MAX)),
            },
            nontemporal_landing_trials: match raw.nontemporal_landing_trials {
                0 => false,
                1 => true,
                n => {
                    say_once(format!(
                        "coll_sharm_nontemporal_landing_trials: {n} is neither 0 nor 1; using 1"
                    ));
                    true
                }
            },
        }
    }

    pub fn algorithm(&self, coll: Coll) -> Algorithm {
        self.algorithm[coll as usize]
    }

    /// The current values of the MCA parameters.
    pub fn current() -> Params {
        Params::from_raw(ffi::params())
    }
}

/// How a hierarchy group runs its part over point to point.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GroupAlgorithm {
    /// The leader exchanges with every member.
    Flat,
    /// A binomial tree over the member indices.
    Binomial,
    /// Large messages: Bcast as scatter + ring allgather, Reduce as ring
    /// reduce-scatter + gather (every member moves and reduces 1/g).
    Ring,
}

/// The Allreduce of the top group (`coll_sharm_hierarchy_top_allreduce_algorithm`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TopAllreduce {
    /// From the cost models, by message and group size.
    Auto,
    RecursiveDoubling,
    /// Ring reduce-scatter + allgather.
    Ring,
    /// Paper 001: ring reduce-scatter along each lattice dimension, pipelined.
    LatticeRing,
    /// Paper 002: three edge-disjoint spanning trees of a torus.
    Trinaryx3,
}

/// MPI_Allgather across nodes (`coll_sharm_hierarchy_allgather_algorithm`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HierAllgather {
    /// Hierarchical, for now (documented in the README).
    Auto,
    /// Up the groups to rank 0, the whole buffer back down.
    Hierarchical,
    /// Over all processes through the PML, in the remapped numbering (paper 003).
    RecursiveDoubling,
    Bruck,
}

/// Paper 003's rank remapping (`coll_sharm_allgather_remap`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AllgatherRemap {
    None,
    /// One extra exchange first: each block goes to the rank running its
    /// logical vertex.
    Exch,
    /// A local permutation at the end.
    Reorder,
}

/// The two Allreduce forms of paper 004.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AllreduceForm {
    ReduceBcast,
    ReduceAllreduceBcast,
}

/// When the hierarchical collectives are used.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HierarchyMode {
    /// When the communicator spans several (real or virtual) nodes.
    Auto,
    Off,
    /// Also within one node, over its intra-node levels.
    On,
}

/// Parameters of the hierarchical collectives (each process reads its own;
/// the groups built from them are checked to agree across processes).
#[derive(Clone, Debug)]
pub struct HierParams {
    pub mode: HierarchyMode,
    /// Every k consecutive ranks form a node (testing on one machine).
    pub virtual_node_size: Option<usize>,
    pub bcast: GroupAlgorithm,
    pub reduce: GroupAlgorithm,
    pub allreduce: AllreduceForm,
    pub levels: String,
    pub topology_file: Option<String>,
    pub dot_file: Option<String>,
    /// Per-level overrides, "<level>:<algorithm>,..." (parsed by `hier_plan`).
    pub level_algorithms: String,
    /// The top group's Allreduce, and the shapes its algorithms assume
    /// ("auto" or "AxBxC").
    pub top_allreduce: TopAllreduce,
    pub lattice_dims: String,
    pub torus_dims: String,
    /// Allgather across nodes, and paper 003's remapping for it.
    pub allgather: HierAllgather,
    pub allgather_remap: AllgatherRemap,
    /// Most bytes a call packs, stages, climbs or reduces at once
    /// (`coll_sharm_hierarchy_piece_size`; 0 there: no limit).
    pub piece_bytes: usize,
}

impl HierParams {
    pub fn current() -> HierParams {
        let (raw, [levels, topology_file, dot_file, level_algorithms, lattice_dims, torus_dims]) =
            ffi::hier_params();
        let group = |what: &str, v: i32| decode(GROUP_ALGORITHMS, what, v, GroupAlgorithm::Flat);
        HierParams {
            mode: decode(
                HIERARCHY_MODES,
                "coll_sharm_hierarchy",
                raw.mode,
                HierarchyMode::Auto,
            ),
            virtual_node_size: (raw.virtual_node_size > 0)
                .then_some(raw.virtual_node_size as usize),
            bcast: group("coll_sharm_hierarchy_bcast_algorithm", raw.bcast_algorithm),
            reduce: group(
                "coll_sharm_hierarchy_reduce_algorithm",
                raw.reduce_algorithm,
            ),
            allreduce: decode(
                ALLREDUCE_FORMS,
                "coll_sharm_hierarchy_allreduce_algorithm",
                raw.allreduce_algorithm,
                AllreduceForm::ReduceBcast,
            ),
            levels,
            topology_file: (!topology_file.is_empty()).then_some(topology_file),
            dot_file: (!dot_file.is_empty()).then_some(dot_file),
            level_algorithms,
            top_allreduce: decode(
                TOP_ALLREDUCE,
                "coll_sharm_hierarchy_top_allreduce_algorithm",
                raw.top_allreduce_algorithm,
                TopAllreduce::Auto,
            ),
            lattice_dims,
            torus_dims,
            allgather: decode(
                HIER_ALLGATHER,
                "coll_sharm_hierarchy_allgather_algorithm",
                raw.allgather_algorithm,
                HierAllgather::Auto,
            ),
            allgather_remap: decode(
                ALLGATHER_REMAPS,
                "coll_sharm_allgather_remap",
                raw.allgather_remap,
                AllgatherRemap::None,
            ),
            piece_bytes: match raw.piece_size {
                0 => usize::MAX,
                n => usize::try_from(n).unwrap_or(usize::MAX),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(kind: &str, value: i32, name: &str) -> (i32, i32, String, i32, String) {
        (0, 0, kind.to_owned(), value, name.to_owned())
    }

    #[test]
    fn pair_buffer_sizes_beyond_the_largest_are_cut_and_named_as_typed() {
        assert_eq!(cut_pair_buffer(4096), (4096, None));
        assert_eq!(cut_pair_buffer(MAX_PAIR_BUFFER).1, None);
        let (bytes, said) = cut_pair_buffer(MAX_PAIR_BUFFER + 1);
        assert_eq!(bytes, MAX_PAIR_BUFFER as usize);
        assert!(said.unwrap().contains(": 268435457 bytes is more"));
        // "-1" on the command line.
        let (bytes, said) = cut_pair_buffer(u64::MAX);
        assert_eq!(bytes, MAX_PAIR_BUFFER as usize);
        let said = said.unwrap();
        assert!(
            said.contains(": -1 (read as 18446744073709551615 bytes) is more"),
            "{said}"
        );
    }

    #[test]
    fn tables_agree_and_mismatches_are_named() {
        let good: Vec<_> = ALGORITHMS
            .iter()
            .map(|(v, n, _)| entry("algorithm", *v, n))
            .chain(
                GROUP_ALGORITHMS
                    .iter()
                    .map(|(v, n, _)| entry("group_algorithm", *v, n)),
            )
            .collect();
        assert_eq!(check_entries(&good), Ok(()));
        // A value renumbered on one side only.
        let err = check_entries(&[entry("algorithm", 5, "pairwise")]).unwrap_err();
        assert!(err.contains("value 5 named 'pairwise'"), "{err}");
        // A name Rust does not know.
        assert!(check_entries(&[entry("algorithm", 2, "binomial")]).is_err());
        // A table kind Rust does not know, and no tables at all.
        assert!(check_entries(&[entry("teleport", 0, "auto")]).is_err());
        assert_eq!(check_entries(&[entry("single_copy", 2, "cma")]), Ok(()));
        assert!(check_entries(&[entry("single_copy", 2, "xpmem")]).is_err());
        assert!(check_entries(&[]).is_err());
    }

    #[test]
    fn unknown_values_decode_to_the_default() {
        assert_eq!(
            decode(ALGORITHMS, "x", 6, Algorithm::Auto),
            Algorithm::Pairwise
        );
        assert_eq!(
            decode(ALGORITHMS, "x", 42, Algorithm::Auto),
            Algorithm::Auto
        );
    }
}
