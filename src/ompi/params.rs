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

impl Algorithm {
    fn from_raw(v: i32) -> Algorithm {
        match v {
            1 => Algorithm::Linear,
            2 => Algorithm::Knomial,
            3 => Algorithm::Allgather,
            4 => Algorithm::ReduceScatterAllgather,
            6 => Algorithm::Pairwise,
            7 => Algorithm::Chain,
            8 => Algorithm::GatherBcast,
            9 => Algorithm::ReduceThenScatter,
            _ => Algorithm::Auto,
        }
    }
}

#[derive(Clone, Copy, Debug)]
pub struct Params {
    pub priority: i32,
    pub verbose: i32,
    pub fragment_size: usize,
    pub queue_slots: usize,
    /// Algorithm per collective (indexed by `stats::Coll`).
    pub algorithm: [Algorithm; 16],
    pub radix: usize,
    /// Largest message sharm serves (bytes); `None` = no limit.
    pub max_message_size: Option<u64>,
    pub shared_memory_budget: u64,
}

impl Params {
    pub fn from_raw(raw: ffi::RawParams) -> Params {
        Params {
            priority: raw.priority,
            verbose: raw.verbose,
            fragment_size: (raw.fragment_size.max(64)) as usize,
            queue_slots: (raw.queue_slots.max(2)) as usize,
            algorithm: raw.algorithm.map(Algorithm::from_raw),
            radix: (raw.knomial_radix.max(2)) as usize,
            max_message_size: (raw.max_message_size != 0).then_some(raw.max_message_size),
            shared_memory_budget: raw.shared_memory_budget,
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
    pub bcast: crate::hier::chain::GroupAlgorithm,
    pub reduce: crate::hier::chain::GroupAlgorithm,
    pub allreduce: crate::hier::chain::AllreduceForm,
    pub levels: String,
    pub topology_file: Option<String>,
    pub dot_file: Option<String>,
    /// Per-level overrides, "<level>:<algorithm>,..." (parsed by `hier_plan`).
    pub level_algorithms: String,
}

impl HierParams {
    pub fn current() -> HierParams {
        use crate::hier::chain::{AllreduceForm, GroupAlgorithm};
        let (raw, [levels, topology_file, dot_file, level_algorithms]) = ffi::hier_params();
        let group = |v: i32| match v {
            2 => GroupAlgorithm::Binomial,
            5 => GroupAlgorithm::Ring,
            _ => GroupAlgorithm::Flat,
        };
        HierParams {
            mode: match raw.mode {
                1 => HierarchyMode::Off,
                2 => HierarchyMode::On,
                _ => HierarchyMode::Auto,
            },
            virtual_node_size: (raw.virtual_node_size > 0)
                .then_some(raw.virtual_node_size as usize),
            bcast: group(raw.bcast_algorithm),
            reduce: group(raw.reduce_algorithm),
            allreduce: if raw.allreduce_algorithm == 1 {
                AllreduceForm::ReduceAllreduceBcast
            } else {
                AllreduceForm::ReduceBcast
            },
            levels,
            topology_file: (!topology_file.is_empty()).then_some(topology_file),
            dot_file: (!dot_file.is_empty()).then_some(dot_file),
            level_algorithms,
        }
    }
}
