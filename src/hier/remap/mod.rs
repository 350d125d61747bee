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
//! * [`partition`]: exact part sizes (METIS, then a repair: greedy moves to
//!   the exact sizes and size-preserving swaps), switch levels.
//! * [`mapping`]: π, the four variants of the paper, the neighbours' share
//!   of the mapping.
//! * [`allgather`]: the variants as schedules of `hier::schedule` (run by
//!   its executor in the plugin, checked by its simulator in the tests).
//!
//! The only path out of this folder is `hier::schedule` (the schedule
//! type).  Graph, partition and π are computed once per communicator (the
//! paper: at its first Allgather); [`Remap::new`] is that computation.

pub mod allgather;
pub mod graph;
pub mod mapping;
pub mod metis;
pub mod partition;
pub mod pattern;

use crate::hier::schedule::plan::{Action, Collective};

pub use allgather::RemappedAllgather;
pub use mapping::{Mapping, Placement, Variant};
pub use partition::RepairStats;
pub use pattern::Algorithm;

/// The once-per-communicator result: π for one variant on one placement.
#[derive(Clone, Debug)]
pub struct Remap {
    pub variant: Variant,
    pub mapping: Mapping,
    /// Partition statistics (of the METIS partition even when it lost).
    pub stats: RepairStats,
    /// Inter-node blocks at m = 1 without remapping (π = identity) and with
    /// the repaired METIS mapping.
    pub identity_blocks: u64,
    pub metis_blocks: u64,
    /// π = identity was kept: the METIS mapping would move as many or more
    /// blocks between nodes than the placement as it is.
    pub identity: bool,
}

impl Remap {
    /// Graph of the variant's algorithm for the placement's n, partitioned
    /// onto its nodes (through `switches` — node lists per switch — when
    /// given), π built from the parts.  Guard: a mapping whose inter-node
    /// blocks (the exch variants' first exchange included) are not below
    /// the identity's is not used; π = identity then (e.g. round-robin
    /// placement, or a small uneven layout the repair could not bring
    /// down): remapping never costs traffic.
    pub fn new(
        variant: Variant,
        placement: &Placement,
        switches: &[Vec<u32>],
    ) -> Result<Remap, metis::MetisError> {
        let g = pattern::graph(variant.algorithm(), placement.n());
        let (node_of_vertex, stats) = partition::partition_nodes(&g, &placement.sizes(), switches)?;
        let candidate = Mapping::from_parts(&node_of_vertex, placement);
        // Without remapping logical vertex v runs on rank v: its cut is the
        // placement's, and the exch variants' first exchange stays local.
        let identity_blocks = g.cut(&placement.node_of);
        let metis_blocks = stats.cut_repaired
            + if variant.exch() {
                first_exchange_blocks(&candidate, placement)
            } else {
                0
            };
        let identity = identity_blocks <= metis_blocks;
        Ok(Remap {
            variant,
            mapping: if identity {
                Mapping::identity(placement.n())
            } else {
                candidate
            },
            stats,
            identity_blocks,
            metis_blocks,
            identity,
        })
    }

    /// Inter-node blocks of the mapping in use.
    pub fn blocks(&self) -> u64 {
        self.identity_blocks.min(self.metis_blocks)
    }
}

/// Blocks the exch variants' first exchange moves between nodes: a_i goes
/// from rank i to rank π⁻¹(i).
pub fn first_exchange_blocks(m: &Mapping, placement: &Placement) -> u64 {
    (0..m.n())
        .filter(|&i| {
            placement.node_of[i as usize] != placement.node_of[m.pi_inv[i as usize] as usize]
        })
        .count() as u64
}

/// Elements sent between nodes when every rank runs its schedule (blocks,
/// i.e. bytes at m = 1, for a schedule of one element per block).
pub fn inter_node_elements(coll: &dyn Collective, placement: &Placement) -> u64 {
    let mut total = 0;
    let mut step = Vec::new();
    for r in 0..coll.size() {
        for s in 0..coll.steps(r) {
            step.clear();
            coll.step(r, s, &mut step);
            for a in &step {
                if let Action::Send { to, span } = *a {
                    if placement.node_of[r] != placement.node_of[to] {
                        total += span.len as u64;
                    }
                }
            }
        }
    }
    total
}

/// Inter-node blocks of `variant` on `placement` without remapping (π =
/// identity: the exch variants' first exchange is then empty) and with the
/// given mapping, counted on the schedules themselves.
pub fn compare(variant: Variant, placement: &Placement, mapping: &Mapping) -> (u64, u64) {
    let count = |m: &Mapping| {
        let coll = RemappedAllgather {
            variant,
            mapping: m,
            block: 1,
        };
        inter_node_elements(&coll, placement)
    };
    (count(&Mapping::identity(placement.n())), count(mapping))
}

#[cfg(test)]
mod tests;
