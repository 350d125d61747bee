//! Hierarchical, topology-aware collectives (the coll/tcl design, paper 004):
//! levels and topology files (`topology`), groups per level (`groups`), one
//! process's plan built once per communicator (`plan`), and the collectives
//! up and down its chain of groups (`chain`): shared-memory groups run the
//! queue collectives of `coll`, network groups send through Open MPI's PML.

pub mod chain;
pub mod collect;
pub mod groups;
pub mod network;
pub mod plan;
pub mod remap;
pub mod schedule;
pub mod topology;
