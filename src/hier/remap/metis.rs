//! A minimal hand-written binding to METIS 5.1 (`libmetis`, Debian
//! `libmetis-dev` / `libmetis5`): graph partitioning with target part
//! weights.  Only the three entry points remapping needs are declared.
//!
//! Why not a crate: the `metis` crate on crates.io generates its bindings with
//! bindgen (libclang at build time) or vendors and compiles METIS itself; both
//! are heavy build dependencies for three functions whose C signatures have
//! been stable since METIS 5.0.  The one real risk of a hand-written binding,
//! the width of `idx_t`/`real_t` (a build-time choice of METIS), is checked at
//! compile time against the installed header (build.rs reads `IDXTYPEWIDTH`
//! and `REALTYPEWIDTH` from `metis.h`).

use std::sync::Mutex;

use super::graph::Graph;

/// METIS `idx_t`: Debian builds METIS with `IDXTYPEWIDTH 32`.
pub type Idx = i32;
/// METIS `real_t`: Debian builds METIS with `REALTYPEWIDTH 32`.
pub type Real = f32;

const fn decimal(s: &str) -> usize {
    let b = s.as_bytes();
    let mut v = 0;
    let mut i = 0;
    while i < b.len() {
        assert!(b[i].is_ascii_digit(), "width in metis.h is not a number");
        v = v * 10 + (b[i] - b'0') as usize;
        i += 1;
    }
    v
}

// The widths come from the installed metis.h (build.rs); a mismatch would make
// METIS read our arrays with the wrong stride, so refuse to compile instead.
const _: () = assert!(
    decimal(env!("SHARM_METIS_IDXTYPEWIDTH")) == 8 * std::mem::size_of::<Idx>(),
    "metis.h IDXTYPEWIDTH differs from remap::metis::Idx"
);
const _: () = assert!(
    decimal(env!("SHARM_METIS_REALTYPEWIDTH")) == 8 * std::mem::size_of::<Real>(),
    "metis.h REALTYPEWIDTH differs from remap::metis::Real"
);

/// `METIS_NOPTIONS` in metis.h 5.1.
const NOPTIONS: usize = 40;
/// `METIS_OK`.
const OK: i32 = 1;
/// Indices into the options array (`moptions_et` in metis.h).
const OPTION_SEED: usize = 8;
const OPTION_NUMBERING: usize = 17;

// Declarations copied by hand from /usr/include/metis.h (METIS 5.1.0).  All
// pointer arguments are arrays owned by the caller; METIS reads the inputs
// and writes `edgecut` and `part` only, and keeps no pointer after returning.
// Optional arrays (vwgt, vsize, adjwgt, tpwgts, ubvec, options) may be null.
#[link(name = "metis")]
extern "C" {
    fn METIS_SetDefaultOptions(options: *mut Idx) -> i32;
    fn METIS_PartGraphKway(
        nvtxs: *mut Idx,
        ncon: *mut Idx,
        xadj: *mut Idx,
        adjncy: *mut Idx,
        vwgt: *mut Idx,
        vsize: *mut Idx,
        adjwgt: *mut Idx,
        nparts: *mut Idx,
        tpwgts: *mut Real,
        ubvec: *mut Real,
        options: *mut Idx,
        edgecut: *mut Idx,
        part: *mut Idx,
    ) -> i32;
    fn METIS_PartGraphRecursive(
        nvtxs: *mut Idx,
        ncon: *mut Idx,
        xadj: *mut Idx,
        adjncy: *mut Idx,
        vwgt: *mut Idx,
        vsize: *mut Idx,
        adjwgt: *mut Idx,
        nparts: *mut Idx,
        tpwgts: *mut Real,
        ubvec: *mut Real,
        options: *mut Idx,
        edgecut: *mut Idx,
        part: *mut Idx,
    ) -> i32;
}

/// The common signature of the two partitioning drivers.
type PartFn = unsafe extern "C" fn(
    *mut Idx,
    *mut Idx,
    *mut Idx,
    *mut Idx,
    *mut Idx,
    *mut Idx,
    *mut Idx,
    *mut Idx,
    *mut Real,
    *mut Real,
    *mut Idx,
    *mut Idx,
    *mut Idx,
) -> i32;

/// GKlib, under METIS, keeps its memory bookkeeping in process-wide state in
/// some builds; tests call METIS from several threads, so calls are
/// serialised.
static METIS_LOCK: Mutex<()> = Mutex::new(());

/// Which METIS driver to use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Method {
    /// `METIS_PartGraphKway` (multilevel k-way; fast for many parts).
    Kway,
    /// `METIS_PartGraphRecursive` (multilevel recursive bisection; often
    /// better balanced for few parts).
    Recursive,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MetisError {
    /// The graph or the part count does not fit `idx_t`.
    TooLarge,
    /// METIS returned this status (`METIS_ERROR_INPUT` = -2, `_MEMORY` = -3,
    /// `METIS_ERROR` = -4).
    Status(i32),
}

impl std::fmt::Display for MetisError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            MetisError::TooLarge => write!(f, "graph too large for METIS idx_t"),
            MetisError::Status(s) => write!(f, "METIS returned status {s}"),
        }
    }
}

impl std::error::Error for MetisError {}

/// Edge weights for METIS: METIS sums weights in `idx_t` (edge cut, gains),
/// and the Allgather graphs carry about n² blocks in total, which overflows
/// 32 bits from n ≈ 46,000 on.  Weights are scaled down proportionally so
/// that the total stays below 2^30 (never below 1, so no edge disappears);
/// the caller measures the true cut in u64 on the unscaled graph.
fn metis_weights(graph: &Graph) -> Vec<Idx> {
    let total: u64 = graph.adjwgt.iter().sum();
    let limit = 1u64 << 30;
    if total <= limit {
        return graph.adjwgt.iter().map(|&w| w as Idx).collect();
    }
    let scale = limit as f64 / total as f64;
    graph
        .adjwgt
        .iter()
        .map(|&w| ((w as f64 * scale).round() as Idx).max(1))
        .collect()
}

/// Partitions `graph` into `targets.len()` parts whose sizes should be close
/// to `targets[u]` vertices (METIS target part weights `tpwgts = s_u / n`,
/// imbalance tolerance `ubvec`), minimising the edge cut.  METIS does not
/// guarantee the sizes exactly; see `partition::repair`.
pub fn part_graph(
    graph: &Graph,
    targets: &[u32],
    method: Method,
    seed: u32,
) -> Result<Vec<u32>, MetisError> {
    let n = graph.n();
    let parts = targets.len();
    debug_assert_eq!(targets.iter().map(|&s| s as usize).sum::<usize>(), n);
    if parts <= 1 || n == 0 {
        return Ok(vec![0; n]);
    }
    let too_large = |v: usize| v > Idx::MAX as usize;
    if too_large(n) || too_large(graph.adjncy.len()) || too_large(parts) {
        return Err(MetisError::TooLarge);
    }
    let mut xadj: Vec<Idx> = graph.xadj.iter().map(|&x| x as Idx).collect();
    let mut adjncy: Vec<Idx> = graph.adjncy.iter().map(|&x| x as Idx).collect();
    let mut adjwgt = metis_weights(graph);
    let mut tpwgts: Vec<Real> = targets.iter().map(|&s| s as Real / n as Real).collect();
    // Tight tolerance: 0.1 %, or one vertex of the smallest part if larger.
    let smallest = targets
        .iter()
        .copied()
        .filter(|&s| s > 0)
        .min()
        .unwrap_or(1);
    let mut ubvec: [Real; 1] = [(1.001 as Real).max(1.0 + 1.0 / smallest as Real)];
    let mut options = [0 as Idx; NOPTIONS];
    let mut nvtxs = n as Idx;
    let mut ncon: Idx = 1;
    let mut nparts = parts as Idx;
    let mut edgecut: Idx = 0;
    let mut part: Vec<Idx> = vec![0; n];

    let _guard = METIS_LOCK.lock().unwrap_or_else(|e| e.into_inner());
    // SAFETY: `options` has METIS_NOPTIONS entries, which is what
    // METIS_SetDefaultOptions writes.
    let status = unsafe { METIS_SetDefaultOptions(options.as_mut_ptr()) };
    if status != OK {
        return Err(MetisError::Status(status));
    }
    options[OPTION_NUMBERING] = 0; // C-style 0-based arrays
    options[OPTION_SEED] = seed as Idx; // deterministic results
    let driver: PartFn = match method {
        Method::Kway => METIS_PartGraphKway,
        Method::Recursive => METIS_PartGraphRecursive,
    };
    // SAFETY: CSR arrays as METIS expects them: xadj has n + 1 entries,
    // adjncy/adjwgt have xadj[n] entries, every neighbour index is < n and the
    // graph is symmetric without self-loops (guaranteed by Graph); tpwgts has
    // nparts * ncon entries, ubvec ncon entries, part n entries.  vwgt and
    // vsize are null (unit weights).  All live until the call returns and
    // METIS does not keep them.
    let status = unsafe {
        driver(
            &mut nvtxs,
            &mut ncon,
            xadj.as_mut_ptr(),
            adjncy.as_mut_ptr(),
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            adjwgt.as_mut_ptr(),
            &mut nparts,
            tpwgts.as_mut_ptr(),
            ubvec.as_mut_ptr(),
            options.as_mut_ptr(),
            &mut edgecut,
            part.as_mut_ptr(),
        )
    };
    if status != OK {
        return Err(MetisError::Status(status));
    }
    Ok(part
        .into_iter()
        .map(|p| {
            assert!((0..nparts).contains(&p), "METIS part out of range");
            p as u32
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two 4-cliques with heavy inner edges joined by one light edge: METIS
    /// must cut only the light edge.
    #[test]
    fn metis_separates_two_cliques() {
        let mut edges = Vec::new();
        for base in [0u32, 4] {
            for a in 0..4 {
                for b in a + 1..4 {
                    edges.push((base + a, base + b, 10));
                }
            }
        }
        edges.push((3, 4, 1));
        let g = Graph::from_edges(8, edges);
        for method in [Method::Kway, Method::Recursive] {
            let part = part_graph(&g, &[4, 4], method, 1).unwrap();
            assert_eq!(g.cut(&part), 1, "{method:?}: {part:?}");
            assert!(part[..4].iter().all(|&p| p == part[0]));
            assert!(part[4..].iter().all(|&p| p == part[4]));
            assert_ne!(part[0], part[4]);
        }
    }

    #[test]
    fn scaled_weights_keep_every_edge() {
        let g = Graph::from_edges(3, vec![(0, 1, 1u64 << 40), (1, 2, 1)]);
        let w = metis_weights(&g);
        assert!(w.iter().all(|&x| x >= 1));
        assert!(w.iter().map(|&x| x as u64).sum::<u64>() <= 1 << 31);
    }
}
