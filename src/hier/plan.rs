//! Building a communicator's hierarchy (once, lazily, at its first
//! hierarchical collective): every process's node name (or virtual nodes) and
//! placement inside its node (PMIx locality string), exchanged among all
//! processes; network levels from the topology file; then the groups (see
//! `hierarchy`), checked to be identical on every process before anyone uses
//! them.

use std::collections::HashSet;
use std::hash::{Hash, Hasher};
use std::sync::Mutex;

use tracing::{debug, info, warn};

use crate::hier::chain::{Group, Transport};
use crate::hier::groups::{attach_switch_paths, Hierarchy, ProcInfo};
use crate::hier::network::TopSpec;
use crate::hier::remap::mapping::{Mapping, Placement, Variant};
use crate::hier::remap::Remap;
use crate::hier::topology::{
    parse_topology_file, virtual_node_names, Level, LevelSelection, Locality,
};
use crate::ompi::ffi::{Comm, Module};
use crate::ompi::params::{GroupAlgorithm, HierParams, KernelSource, Params};

/// One process's part in the hierarchy.
pub struct HierPlan {
    /// This process's rank in the communicator, and the communicator's size.
    pub me: usize,
    pub size: usize,
    /// Its groups, bottom-up (member ranks ascending, leader first).
    pub chain: Vec<Group>,
    /// Whether the last of them is the top group.
    pub reaches_top: bool,
    /// Node index of every rank, and the nodes under each level-1 switch
    /// (empty without a topology file): paper 003's placement.
    pub node_of: Vec<u32>,
    pub switch_nodes: Vec<Vec<u32>>,
    /// Mappings computed so far (variant, remapped, π), at the first
    /// Allgather that needs each.
    pub remaps: Vec<(Variant, bool, Mapping)>,
    /// Who combines reduction operands (every process's own parameter; the
    /// digest checks all agree).
    pub kernels: KernelSource,
    /// Whether every group carries a contiguous range of ranks, so that
    /// non-commutative reductions can follow the hierarchy.
    pub rank_ordered: bool,
    pub params: HierParams,
    /// What the top group's Allreduce runs: `params`' algorithm and shapes,
    /// parsed once here rather than at every call.
    pub top: TopSpec,
    /// The reduction accumulator, kept between calls: a fresh allocation of
    /// a large message costs its page faults on every call (measured: the
    /// node group's Reduce at 1 MiB ran at 1.8x the flat path with one).
    /// Owned by `dispatch::hierarchical::reduction` alone.
    pub accumulator: Vec<u8>,
}

/// Parameter and topology-file problems already reported by this process,
/// by key (the text or file at fault): one message per problem, not one per
/// communicator, whether `check_parameters` or the plan finds it first.
static REPORTED: Mutex<Option<HashSet<String>>> = Mutex::new(None);

fn report_once(me: usize, key: &str, message: &str) {
    if me != 0 {
        return; // every process finds the same problem: one says it
    }
    let mut seen = REPORTED.lock().unwrap_or_else(|e| e.into_inner());
    if seen.get_or_insert_with(HashSet::new).insert(key.to_owned()) {
        warn!("{message}");
    }
}

/// The levels `coll_sharm_hierarchy_levels` selects; all of them, said
/// once, when it does not parse.
fn levels_or_all(me: usize, text: &str) -> LevelSelection {
    LevelSelection::parse(text).unwrap_or_else(|e| {
        report_once(
            me,
            text,
            &format!("coll_sharm_hierarchy_levels: {e}; using all levels"),
        );
        LevelSelection::all()
    })
}

/// Checks the hierarchy's parameters as text, once per process, at the
/// first communicator sharm serves (`dispatch::state`), whether or not any
/// communicator ever spans nodes.  Why: they are otherwise read only when
/// a hierarchy is built, so a misspelt level, per-level algorithm or shape,
/// or a topology file that cannot be read, went unsaid on the one-node
/// runs where users try their settings, and was first heard of on the
/// cluster (a shape never: it fell back to the model in silence).  Each
/// problem is said at verbose 0 by rank 0 of that communicator; the plan's
/// own reports of the same problems share `report_once`'s keys, so nothing
/// is said twice.  What only the placement can tell (a node missing from
/// the topology file, a shape whose sides do not multiply to the top
/// group) is still said when the plan is built.
pub fn check_parameters(me: usize, params: &HierParams) {
    static CHECKED: std::sync::Once = std::sync::Once::new();
    CHECKED.call_once(|| {
        levels_or_all(me, &params.levels);
        level_algorithms(me, &params.level_algorithms);
        for (name, text) in [
            ("coll_sharm_lattice_dims", &params.lattice_dims),
            ("coll_sharm_torus_dims", &params.torus_dims),
        ] {
            if let Err(e) = TopSpec::shape(text) {
                report_once(me, name, &format!("{name}: {e}; the model's shape is used"));
            }
        }
        if let Some(path) = &params.topology_file {
            if let Err(e) = parse_topology_file(path) {
                report_once(me, path, &topology_message(&e));
            }
        }
    });
}

/// What a topology file that cannot be used makes of the hierarchy.
fn topology_message(e: &dyn std::fmt::Display) -> String {
    format!("topology file {e}; network levels dropped")
}

/// Parses `coll_sharm_hierarchy_level_algorithms` ("<level>:<algorithm>,...");
/// a bad item is reported (once) and skipped.
fn level_algorithms(me: usize, text: &str) -> Vec<(String, GroupAlgorithm)> {
    let mut out = Vec::new();
    for item in text.split(',').map(str::trim).filter(|i| !i.is_empty()) {
        let parsed = item.split_once(':').and_then(|(level, alg)| {
            let alg = match alg.trim().to_ascii_lowercase().as_str() {
                "flat" => GroupAlgorithm::Flat,
                "knomial" | "binomial" => GroupAlgorithm::Binomial,
                "ring" => GroupAlgorithm::Ring,
                _ => return None,
            };
            Some((level.trim().to_ascii_lowercase(), alg))
        });
        match parsed {
            Some(entry) => out.push(entry),
            None => report_once(me, item, &format!("coll_sharm_hierarchy_level_algorithms: '{item}' is not <level>:<flat|knomial|ring>; ignored")),
        }
    }
    out
}

/// Builds the plan; `Err` says why the communicator gets no hierarchy (all
/// processes agree on the outcome).
pub fn build(
    comm: Comm,
    module: Module,
    me: usize,
    p: usize,
    params: HierParams,
    shared: &Params,
    label: &str,
) -> Result<HierPlan, String> {
    let levels = levels_or_all(me, &params.levels);
    // Collective: every process takes part, whatever it knows.
    let placement = exchange_placement(comm, module, me, p);
    let nodes: Vec<String> = match params.virtual_node_size {
        Some(k) => virtual_node_names(p, k),
        None => placement.iter().map(|(node, _)| node.clone()).collect(),
    };
    let mut procs: Vec<ProcInfo> = nodes
        .into_iter()
        .zip(placement)
        .map(|(node, (_, locality))| {
            ProcInfo::new(node, locality.and_then(|s| Locality::parse(&s).ok()))
        })
        .collect();
    let local_ok = procs.iter().all(|p| !p.node.is_empty());
    if procs.iter().all(|p| p.locality.is_none()) {
        debug!("{label}: processes are not bound (no locality strings): no groups below the node level");
    }
    // Network levels: every process must have read the same file.
    let mut switch_levels = 0;
    if let Some(path) = &params.topology_file {
        match parse_topology_file(path)
            .and_then(|file| attach_switch_paths(&mut procs, &file).map(|_| file.switch_levels()))
        {
            Ok(n) => switch_levels = n,
            Err(e) => {
                report_once(me, path, &topology_message(&e));
                for p in procs.iter_mut() {
                    p.switches = None;
                }
            }
        }
    }
    let agreed = module.agree_min(i32::from(local_ok), comm);
    if agreed != Some(1) {
        return Err("node names are not known on every process".into());
    }
    let resolved = levels.resolve(switch_levels);
    let hierarchy = Hierarchy::build(&procs, &resolved);
    let text = hierarchy.render_text();
    let overrides = level_algorithms(me, &params.level_algorithms);
    // Every process must have built the same groups (same parameters, same
    // topology file) and run the same algorithms in them: the digest covers
    // the rendering, the parameters that choose algorithms
    // (`algorithm_digest_text`), and the limits, geometry and reduction
    // kernels the routing decision reads from each process's own parameters.
    let agreed_params = format!(
        "fragment={} slots={} max={:?} kernels={:?}",
        shared.fragment_size, shared.queue_slots, shared.max_message_size, shared.reduction_kernels,
    );
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    text.hash(&mut hasher);
    agreed_params.hash(&mut hasher);
    algorithm_digest_text(&params, &resolved, &overrides).hash(&mut hasher);
    let digest = (hasher.finish() & 0x3fff_ffff) as i32;
    let low = module.agree_min(digest, comm);
    let high = module.agree_min(-digest, comm).map(|v| -v);
    if low != Some(digest) || high != Some(digest) {
        return Err(
            "processes built different groups (differing parameters or topology files?)".into(),
        );
    }
    if me == 0 {
        let algorithms = describe_algorithms(&hierarchy, &params, &overrides);
        info!("{label}: hierarchy\n{text}{algorithms}");
        if let Some(path) = &params.dot_file {
            let file = format!(
                "{path}.{}",
                label.replace(|c: char| !c.is_ascii_alphanumeric(), "_")
            );
            if let Err(e) = std::fs::write(&file, hierarchy.render_dot()) {
                warn!("cannot write {file}: {e}");
            }
        }
    }
    let root_group = hierarchy.root_group().map(<[usize]>::to_vec);
    let reps = hierarchy.representatives();
    let level_index = |level| {
        hierarchy
            .levels()
            .iter()
            .position(|lg| lg.level() == level)
            .expect("a chain's levels are active levels")
    };
    let chain: Vec<Group> = hierarchy
        .groups_of(me)
        .into_iter()
        .map(|(level, g)| Group {
            members: g.to_vec(),
            carried: Hierarchy::covered(&reps, level_index(level), g),
            // Groups within one node (the node level and below) share
            // memory; network groups (switches, top) send point to point.
            algorithm: overrides
                .iter()
                .find(|(name, _)| *name == level.to_string())
                .map(|&(_, a)| a),
            transport: if level.shares_memory() {
                Transport::SharedPending
            } else {
                Transport::Pml
            },
        })
        .collect();
    let reaches_top =
        root_group.is_some() && chain.last().map(|g| &g.members) == root_group.as_ref();
    let (node_of, switch_nodes) = placement_ids(&procs);
    Ok(HierPlan {
        me,
        size: p,
        chain,
        reaches_top,
        rank_ordered: hierarchy.rank_ordered(),
        kernels: shared.reduction_kernels,
        node_of,
        switch_nodes,
        remaps: Vec::new(),
        top: TopSpec::new(
            params.top_allreduce,
            &params.lattice_dims,
            &params.torus_dims,
        ),
        params,
        accumulator: Vec::new(),
    })
}

/// Node index of every rank (numbered by first appearance) and, when a
/// topology file gave switch levels, the nodes under each level-1 switch:
/// the placement paper 003's partition works on.
fn placement_ids(procs: &[ProcInfo]) -> (Vec<u32>, Vec<Vec<u32>>) {
    let mut nodes: Vec<&str> = Vec::new();
    let mut switches: Vec<(&str, Vec<u32>)> = Vec::new();
    let node_of = procs
        .iter()
        .map(|p| match nodes.iter().position(|n| *n == p.node) {
            Some(i) => i as u32,
            None => {
                nodes.push(&p.node);
                let id = (nodes.len() - 1) as u32;
                if let Some(sw) = p.switches.as_ref().and_then(|s| s.first()) {
                    match switches.iter_mut().find(|(name, _)| name == sw) {
                        Some((_, list)) => list.push(id),
                        None => switches.push((sw, vec![id])),
                    }
                }
                id
            }
        })
        .collect();
    // Switch groups only when every node has one.
    let covered: usize = switches.iter().map(|(_, l)| l.len()).sum();
    let switch_nodes = if covered == nodes.len() && switches.len() > 1 {
        switches.into_iter().map(|(_, l)| l).collect()
    } else {
        Vec::new()
    };
    (node_of, switch_nodes)
}

/// One line naming what each active level runs, for the verbose output:
/// shared-memory levels run sharm's queue collectives (linear or k-nomial),
/// network levels the point-to-point group algorithms.
fn describe_algorithms(
    hierarchy: &Hierarchy,
    params: &HierParams,
    overrides: &[(String, GroupAlgorithm)],
) -> String {
    let name = |a: GroupAlgorithm| match a {
        GroupAlgorithm::Flat => "flat",
        GroupAlgorithm::Binomial => "knomial",
        GroupAlgorithm::Ring => "ring",
    };
    let parts: Vec<String> = hierarchy
        .levels()
        .iter()
        .map(|lg| {
            let level = lg.level().to_string();
            let forced = overrides.iter().find(|(l, _)| *l == level).map(|&(_, a)| a);
            let (bcast, reduce) = match forced {
                Some(a) => (a, a),
                None => (params.bcast, params.reduce),
            };
            if lg.level().shares_memory() {
                let queue = |a: GroupAlgorithm| match a {
                    GroupAlgorithm::Flat if forced.is_some() => "linear",
                    GroupAlgorithm::Binomial if forced.is_some() => "knomial",
                    _ => "auto",
                };
                format!(
                    "{level}: shm queues (bcast {}, reduce {})",
                    queue(bcast),
                    queue(reduce)
                )
            } else {
                format!(
                    "{level}: pml (bcast {}, reduce {})",
                    name(bcast),
                    name(reduce)
                )
            }
        })
        .collect();
    // A top group inside one node runs the queue Allreduce whatever the form
    // (chain::allreduce_in_shared_top).
    let shared_top = hierarchy
        .levels()
        .last()
        .is_some_and(|lg| lg.level().shares_memory());
    format!(
        "algorithms: {}; allreduce {}\n",
        parts.join("; "),
        if shared_top {
            "queue allreduce in the top group (shm)".to_string()
        } else {
            format!("{:?}", params.allreduce)
        }
    )
}

/// Bytes of each field of a placement record (node name, locality string),
/// NUL-padded.  Host names are at most 255 bytes; locality strings are a
/// few dozen.
const FIELD: usize = 256;

/// A placement record: `node` and `locality` in fixed fields.  A value that
/// does not fit leaves its field empty (unknown) rather than truncated, so
/// two long names can never be taken for the same node.
fn encode_record(node: &str, locality: Option<&str>) -> Vec<u8> {
    let mut rec = vec![0u8; 2 * FIELD];
    for (i, value) in [node, locality.unwrap_or("")].into_iter().enumerate() {
        let bytes = value.as_bytes();
        if bytes.len() < FIELD && !bytes.contains(&0) {
            rec[i * FIELD..i * FIELD + bytes.len()].copy_from_slice(bytes);
        }
    }
    rec
}

/// The node name (empty: unknown) and locality string of a record.
fn decode_record(rec: &[u8]) -> (String, Option<String>) {
    let field = |i: usize| {
        let f = &rec[i * FIELD..(i + 1) * FIELD];
        let end = f.iter().position(|&b| b == 0).unwrap_or(f.len());
        String::from_utf8_lossy(&f[..end]).into_owned()
    };
    let locality = field(1);
    (field(0), (!locality.is_empty()).then_some(locality))
}

/// Every process's node name and locality string, by rank; the same on
/// every process (collective).
///
/// Each process contributes only what it knows of itself.  Asking Open MPI
/// 4.1 about peers gives different processes different answers: each
/// daemon registers `pmix.locstr` (OPAL_PMIX_LOCALITY_STRING) only for the
/// processes of its own node, and host names only below
/// `orte_hostname_cutoff` nodes.  With processes bound, a process then saw
/// the cache/NUMA/socket placement of its own node's peers but not of other
/// nodes', built other groups than processes elsewhere, and the digest check
/// switched the hierarchy off.  On failure every name is unknown, which the
/// caller's agreement turns into "no hierarchy" on all processes alike.
fn exchange_placement(
    comm: Comm,
    module: Module,
    me: usize,
    p: usize,
) -> Vec<(String, Option<String>)> {
    let node = comm.hostname(me).unwrap_or_default();
    let locality = comm.locality(me);
    let mine = encode_record(&node, locality.as_deref());
    let mut all = vec![0u8; mine.len() * p];
    if !module.allgather_bytes(&mine, &mut all, comm) {
        warn!("exchanging node names and locality strings failed");
        return vec![(String::new(), None); p];
    }
    all.chunks_exact(mine.len()).map(decode_record).collect()
}

/// The parameters that choose algorithms and where calls are cut into
/// pieces (the group tree itself is compared through its rendering, which
/// shows the levels, virtual nodes and the topology file's switches).  Not
/// included: the mode (it only decides whether a tree is built), the
/// topology file's path (its contents are in the tree) and the DOT file.
fn algorithm_digest_text(
    params: &HierParams,
    levels: &[Level],
    overrides: &[(String, GroupAlgorithm)],
) -> String {
    format!(
        "bcast={:?} reduce={:?} allreduce={:?} top={:?} lattice={} torus={} allgather={:?}/{:?} levels={levels:?} virtual_node_size={:?} pieces={} overrides={overrides:?}",
        params.bcast,
        params.reduce,
        params.allreduce,
        params.top_allreduce,
        params.lattice_dims,
        params.torus_dims,
        params.allgather,
        params.allgather_remap,
        params.virtual_node_size,
        params.piece_bytes
    )
}

impl HierPlan {
    /// The mapping π of paper 003 for `variant` on this communicator's
    /// placement: METIS's partition of the exchange graph onto the nodes
    /// (exact sizes), computed at the first Allgather that needs it and kept;
    /// identity when `remapped` is false.  Every process computes it from
    /// the same placement with METIS seeded alike, so all get the same π.
    /// Rank 0 reports the inter-node blocks with and without it (verbose 10).
    pub fn mapping(&mut self, variant: Variant, remapped: bool) -> Option<&Mapping> {
        let known = |r: &(Variant, bool, Mapping)| r.0 == variant && r.1 == remapped;
        if !self.remaps.iter().any(known) {
            let placement = Placement::new(self.node_of.clone());
            let mapping = if remapped {
                let remap = match Remap::new(variant, &placement, &self.switch_nodes) {
                    Ok(r) => r,
                    Err(e) => {
                        warn!(
                            "allgather remapping ({variant:?}): METIS failed: {e:?}; no remapping"
                        );
                        return None;
                    }
                };
                if self.me == 0 {
                    let st = &remap.stats;
                    debug!(
                        "allgather {variant:?} on {} nodes: {} inter-node blocks without remapping, {} with (cut {} by METIS, {} after {} moves to exact sizes, {} after {} swaps){}",
                        placement.nodes,
                        remap.identity_blocks,
                        remap.blocks(),
                        st.cut_metis,
                        st.cut_moved,
                        st.moved,
                        st.cut_repaired,
                        st.swaps,
                        if remap.identity {
                            format!("; the METIS mapping would move {} blocks, no fewer than the placement as it is: pi = identity used", remap.metis_blocks)
                        } else {
                            String::new()
                        }
                    );
                }
                remap.mapping
            } else {
                Mapping::identity(placement.n())
            };
            self.remaps.push((variant, remapped, mapping));
        }
        self.remaps.iter().find(|r| known(r)).map(|r| &r.2)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn record_round_trip() {
        let rec = encode_record("sim01", Some("SK0:L30:L20:L10:CR0:HT0"));
        assert_eq!(rec.len(), 2 * FIELD);
        assert_eq!(
            decode_record(&rec),
            (
                "sim01".to_owned(),
                Some("SK0:L30:L20:L10:CR0:HT0".to_owned())
            )
        );
        assert_eq!(
            decode_record(&encode_record("n", None)),
            ("n".to_owned(), None)
        );
    }

    #[test]
    fn record_too_long_is_unknown_not_truncated() {
        let long = "x".repeat(FIELD);
        assert_eq!(
            decode_record(&encode_record(&long, Some(&long))),
            (String::new(), None)
        );
        let fits = "y".repeat(FIELD - 1);
        assert_eq!(decode_record(&encode_record(&fits, None)).0, fits);
    }
}
