//! Collective schedules as data (issues 9 and 13): a per-process list of
//! steps of concurrent sends and receives over element spans of one
//! message buffer, builders for the network algorithms (those of `hier.rs`,
//! the lattice ring Allreduce of paper 001 and Trinaryx3 of paper 002), one
//! executor over a point-to-point transport, and a simulator that runs all
//! p schedules with symbolic values and an α-β-γ cost model.
//!
//! Self-contained (pure Rust, no MPI, nothing from the rest of the crate):
//! * [`plan`]: the schedule type, the `Collective` description, step rules;
//! * [`basic`]: flat, binomial, ring Bcast/Reduce, recursive doubling and
//!   ring Allreduce; [`lattice`] (001); [`trinaryx3`] (002);
//! * [`cost`]: closed-form costs, lattice dimensions and segment counts from
//!   the papers' models, the `auto` rule;
//! * [`exec`]: runs one process's schedule over a [`exec::Transport`];
//! * [`gather`]: the local block moves before and after an Allgather's steps;
//! * [`sim`]: runs them all, checks results, counts and estimates costs.

pub mod basic;
pub mod cost;
pub mod exec;
pub mod gather;
pub mod lattice;
pub mod plan;
pub mod sim;
pub mod trinaryx3;

#[cfg(test)]
pub(crate) mod loopback;
#[cfg(test)]
mod tests;

pub use plan::{Action, BlockOrder, Collective, Into, Kind, Order, Schedule, Span};
