//! The component's MCA parameters, validated, as one communicator uses them.

use crate::ffi;
use crate::stats::Coll;

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
}

impl Algorithm {
    fn from_raw(v: i32) -> Algorithm {
        match v {
            1 => Algorithm::Linear,
            2 => Algorithm::Knomial,
            3 => Algorithm::Allgather,
            4 => Algorithm::ReduceScatterAllgather,
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
