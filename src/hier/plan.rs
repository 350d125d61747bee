//! Building a communicator's hierarchy (once, lazily, at its first
//! hierarchical collective): node names from Open MPI (or virtual nodes),
//! placement inside nodes from PMIx locality strings, network levels from the
//! topology file; then the groups (see `hierarchy`), checked to be identical
//! on every process before anyone uses them.

use std::collections::HashSet;
use std::hash::{Hash, Hasher};
use std::sync::Mutex;

use tracing::{debug, info, warn};

use crate::hier::chain::{Group, Transport};
use crate::hier::groups::{attach_switch_paths, Hierarchy, ProcInfo};
use crate::hier::topology::{parse_topology_file, virtual_node_names, LevelSelection, Locality};
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
    /// Who combines reduction operands (every process's own parameter; the
    /// digest checks all agree).
    pub kernels: KernelSource,
    /// Whether every group carries a contiguous range of ranks, so that
    /// non-commutative reductions can follow the hierarchy.
    pub rank_ordered: bool,
    pub params: HierParams,
}

/// Topology-file problems already reported by this process (one message per
/// file, not one per communicator).
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
    let levels = LevelSelection::parse(&params.levels).unwrap_or_else(|e| {
        report_once(
            me,
            &params.levels,
            &format!("coll_sharm_hierarchy_levels: {e}; using all levels"),
        );
        LevelSelection::all()
    });
    let nodes: Vec<String> = match params.virtual_node_size {
        Some(k) => virtual_node_names(p, k),
        None => (0..p)
            .map(|r| comm.hostname(r).unwrap_or_default())
            .collect(),
    };
    let mut procs: Vec<ProcInfo> = nodes
        .into_iter()
        .enumerate()
        .map(|(r, node)| {
            ProcInfo::new(
                node,
                comm.locality(r).and_then(|s| Locality::parse(&s).ok()),
            )
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
                report_once(
                    me,
                    path,
                    &format!("topology file {e}; network levels dropped"),
                );
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
    let hierarchy = Hierarchy::build(&procs, &levels.resolve(switch_levels));
    let text = hierarchy.render_text();
    // Every process must have built the same groups (same parameters, same
    // topology file): compare a digest of the rendering.
    // The digest covers the groups and every parameter that changes what the
    // processes do together: the level list, the algorithms (per operation
    // and per level), the Allreduce form, and the limits and geometry the
    // routing decision reads from each process's own parameters.
    let agreed_params = format!(
        "levels={} bcast={:?} reduce={:?} allreduce={:?} per_level={} fragment={} slots={} max={:?} kernels={:?}",
        params.levels,
        params.bcast,
        params.reduce,
        params.allreduce,
        params.level_algorithms,
        shared.fragment_size,
        shared.queue_slots,
        shared.max_message_size,
        shared.reduction_kernels,
    );
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    text.hash(&mut hasher);
    agreed_params.hash(&mut hasher);
    let digest = (hasher.finish() & 0x3fff_ffff) as i32;
    let low = module.agree_min(digest, comm);
    let high = module.agree_min(-digest, comm).map(|v| -v);
    if low != Some(digest) || high != Some(digest) {
        return Err(
            "processes built different groups (differing parameters or topology files?)".into(),
        );
    }
    let overrides = level_algorithms(me, &params.level_algorithms);
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
    Ok(HierPlan {
        me,
        size: p,
        chain,
        reaches_top,
        rank_ordered: hierarchy.rank_ordered(),
        kernels: shared.reduction_kernels,
        params,
    })
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
    format!(
        "algorithms: {}; allreduce {:?}\n",
        parts.join("; "),
        params.allreduce
    )
}
