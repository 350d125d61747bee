//! The built-in decision rules: `coll_sharm_<op>_rules` texts compiled into
//! sharm, consulted after the user's rules and before each algorithm's own
//! heuristics (`Shared::choose`).
//!
//! They are not written by hand.  `built-in-rules.conf`, next to this file,
//! is the output of `ci/tune.sh --derive RUN_A RUN_B ...`, which keeps a
//! cell only where tuning runs in different states of the machine all chose
//! the same algorithm, each by the tuner's margin; the file's comments name
//! the runs, their machine states and the verdict of every contested cell.
//! Only process counts with a core per process are derived: oversubscribed
//! timings on a small VM say nothing about a machine where every process
//! has its core, so those cells stay with the heuristics (which know about
//! oversubscription).

/// The derived file, in `mpirun --tune` format.
const DERIVED: &str = include_str!("built-in-rules.conf");

/// The built-in rule text of the operation `name` (a `RULED` name), "" when
/// the heuristics decide everywhere.
pub fn text(name: &str) -> &'static str {
    DERIVED
        .lines()
        .filter_map(|l| l.strip_prefix("coll_sharm_"))
        .filter_map(|l| l.split_once("_rules"))
        .find(|(op, _)| *op == name)
        .and_then(|(_, rest)| rest.trim_start().strip_prefix('='))
        .map_or("", str::trim)
}
