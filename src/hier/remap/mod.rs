//! Topology-aware remapping of Allgather algorithms (paper 003, TopoMPI,
//! Kurnosov 2010): the weighted exchange graph of recursive doubling or
//! Bruck at m = 1 is partitioned by METIS into parts of exactly the nodes'
//! process counts s_u, the parts are mapped onto the nodes (π), and the
//! algorithm runs over the permuted numbering so that its heavy late steps
//! stay inside nodes.
//!
//! * [`graph`]: CSR weighted graphs.
//! * [`pattern`]: per-step exchanges of both algorithms (any n) and their
//!   graphs.
//! * [`metis`]: the METIS binding (libmetis, linked by build.rs).
//! * [`partition`]: exact part sizes (METIS + greedy repair), switch levels.
//! * [`mapping`]: π, the four variants of the paper and per-process plans
//!   built from the neighbours' mapping only.
//! * [`sim`]: delivery simulation of the plans.
//!
//! This module is self-contained (no `crate::` paths) so that it can move
//! as a folder.  Graph, partition and π are computed once per communicator
//! (the paper: at its first Allgather); [`Remap::new`] is that computation.

pub mod graph;
pub mod mapping;
pub mod metis;
pub mod partition;
pub mod pattern;
pub mod sim;

pub use mapping::{Mapping, Placement, Plan, Variant};
pub use partition::RepairStats;
pub use pattern::Algorithm;

/// The once-per-communicator result: π for one algorithm on one placement.
#[derive(Clone, Debug)]
pub struct Remap {
    pub algorithm: Algorithm,
    pub mapping: Mapping,
    /// Partition statistics (of the METIS partition even when it lost).
    pub stats: RepairStats,
    /// π = identity was kept: the partition did not beat the placement.
    pub identity: bool,
}

impl Remap {
    /// Graph of `algorithm` for the placement's n, partitioned onto its
    /// nodes (through `switches` — node lists per switch — when given), π
    /// built from the parts.
    pub fn new(
        algorithm: Algorithm,
        placement: &Placement,
        switches: &[Vec<u32>],
    ) -> Result<Remap, metis::MetisError> {
        let g = pattern::graph(algorithm, placement.n());
        let (node_of_vertex, stats) = partition::partition_nodes(&g, &placement.sizes(), switches)?;
        // Without remapping logical vertex v runs on rank v; when that cut
        // is already as small (e.g. round-robin placement), keep π = id:
        // the exch variants' first exchange then stays a local copy.
        let identity_cut = g.cut(&placement.node_of);
        let (mapping, identity) = if identity_cut <= stats.cut_repaired {
            (Mapping::identity(placement.n()), true)
        } else {
            (Mapping::from_parts(&node_of_vertex, placement), false)
        };
        Ok(Remap {
            algorithm,
            mapping,
            stats,
            identity,
        })
    }
}

/// Blocks (= bytes at m = 1) that cross between nodes when every rank runs
/// its plan: per step, and the total.
pub fn inter_node_blocks(plans: &[Plan], placement: &Placement) -> (Vec<u64>, u64) {
    let steps = plans.iter().map(|p| p.steps.len()).max().unwrap_or(0);
    let mut per_step = vec![0u64; steps];
    for p in plans {
        for (k, s) in p.steps.iter().enumerate() {
            if let Some(x) = s.send {
                if placement.node_of[p.rank as usize] != placement.node_of[x.peer as usize] {
                    per_step[k] += match x.from {
                        mapping::Source::Own => 1,
                        mapping::Source::Buf { count, .. } => count as u64,
                    };
                }
            }
        }
    }
    let total = per_step.iter().sum();
    (per_step, total)
}

/// Inter-node blocks of `variant` on `placement` without remapping (π =
/// identity: the exch variants' first exchange is then a local copy) and
/// with the given mapping.
pub fn compare(variant: Variant, placement: &Placement, mapping: &Mapping) -> (u64, u64) {
    let plain = mapping::all_plans(variant, &Mapping::identity(placement.n()));
    let remapped = mapping::all_plans(variant, mapping);
    (
        inter_node_blocks(&plain, placement).1,
        inter_node_blocks(&remapped, placement).1,
    )
}

#[cfg(test)]
mod tests;
