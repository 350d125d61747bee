//! The network algorithms over Open MPI's PML: a `schedule::exec` transport
//! whose ranks are indices into a group's members; the top group's Allreduce
//! chosen by `coll_sharm_hierarchy_top_allreduce_algorithm` (recursive
//! doubling, ring, lattice ring (paper 001), Trinaryx3 (paper 002)), built
//! as a schedule and run by the one executor; and paper 003's remapped
//! Allgather (`remapped_allgather`), whose variants are schedules too.

use crate::hier::remap::{Mapping, RemappedAllgather, Variant};
use crate::hier::schedule::cost::{self, Net, TopAllreduce as Shape, PACKET_BYTES};
use crate::hier::schedule::exec::{Executor, Layout, Ran, Transport};
use crate::hier::schedule::gather;
use crate::hier::schedule::lattice::Lattice;
use crate::hier::schedule::plan::{Collective, Order};
use crate::hier::schedule::trinaryx3::Trinaryx3;
use crate::ompi::combine::Combiner;
use crate::ompi::dtype::ReduceLayout;
use crate::ompi::ffi::Comm;
use crate::ompi::p2p::{self, RawRequest};
use crate::ompi::params::TopAllreduce;

/// Point-to-point among a group's members (schedule ranks are indices into
/// `members`).
pub struct Pml<'a> {
    pub comm: Comm,
    pub members: &'a [usize],
}

impl Transport for Pml<'_> {
    type Req = RawRequest;

    unsafe fn isend(&mut self, to: usize, buf: *const u8, len: usize, tag: i32) -> RawRequest {
        p2p::isend_raw(self.comm, buf, len, self.members[to], tag)
    }

    unsafe fn irecv(&mut self, from: usize, buf: *mut u8, len: usize, tag: i32) -> RawRequest {
        p2p::irecv_raw(self.comm, buf, len, self.members[from], tag)
    }

    fn wait_all(&mut self, reqs: &mut Vec<RawRequest>) -> Result<(), String> {
        let posted = reqs.iter().all(|r| !r.is_null());
        let done = p2p::wait_all_raw(reqs);
        if posted && done {
            Ok(())
        } else {
            Err("a point-to-point transfer of the schedule failed".into())
        }
    }
}

/// What the top group runs, as the parameters ask.
#[derive(Clone, Debug)]
pub struct TopSpec {
    pub algorithm: TopAllreduce,
    /// Explicit lattice and torus shapes ("AxBxC"; None: from the model).
    pub lattice: Option<Vec<usize>>,
    pub torus: Option<Vec<usize>>,
}

impl TopSpec {
    pub fn new(algorithm: TopAllreduce, lattice: &str, torus: &str) -> TopSpec {
        // A malformed shape was said once, at the first communicator
        // (`hier::plan::check_parameters`); here it means the model's.
        let dims = |t: &str| TopSpec::shape(t).ok().flatten();
        TopSpec {
            algorithm,
            lattice: dims(lattice),
            torus: dims(torus),
        }
    }

    /// A shape parameter (`coll_sharm_lattice_dims`, `coll_sharm_torus_dims`):
    /// `auto` (or empty) leaves the shape to the model (None); otherwise
    /// sides of at least 1 joined by `x`, such as `4x4x2`.  Whether the
    /// sides fit the top group is known only when it is built.
    pub fn shape(text: &str) -> Result<Option<Vec<usize>>, String> {
        let text = text.trim();
        if text.is_empty() || text.eq_ignore_ascii_case("auto") {
            return Ok(None);
        }
        Lattice::parse_dims(text)
            .map(Some)
            .ok_or_else(|| format!("'{text}' is neither auto nor sides such as 4x4x2"))
    }
}

/// The network the cost models assume when choosing under `auto` and
/// shaping the lattice: the papers' figures (α = 2 µs, 5 GB/s links,
/// 6.57 GB/s reduction), documented in docs/schedules.md.
const NET: Net = Net::PAPERS;

/// The schedule of the top group's Allreduce for `g` members and `count`
/// elements of `elem` bytes, and its name for messages.  A shape that does
/// not fit the group (product differs, a torus side below 3) falls back to
/// the model's choice, said at verbose >= 1.
pub fn top_allreduce(
    spec: &TopSpec,
    g: usize,
    count: usize,
    elem: usize,
) -> (Box<dyn Collective>, &'static str) {
    let m = (count * elem) as f64;
    let shape = match spec.algorithm {
        TopAllreduce::Auto => cost::auto(g, m, elem, &NET),
        TopAllreduce::RecursiveDoubling => Shape::RecursiveDoubling,
        TopAllreduce::Ring => Shape::Ring,
        TopAllreduce::LatticeRing => Shape::LatticeRing,
        TopAllreduce::Trinaryx3 => Shape::Trinaryx3,
    };
    let packet = (PACKET_BYTES / elem.max(1)).max(1);
    match shape {
        Shape::LatticeRing => {
            if let Some(dims) = &spec.lattice {
                if dims.iter().product::<usize>() == g {
                    return (
                        Box::new(Lattice::new(dims.clone(), count, packet)),
                        "lattice_ring",
                    );
                }
                tracing::info!(
                    "coll_sharm_lattice_dims {dims:?} does not multiply to the top group's {g} members; the model's shape is used"
                );
            }
            (
                cost::allreduce_for(shape, g, count, elem, &NET),
                "lattice_ring",
            )
        }
        Shape::Trinaryx3 => {
            if let Some(dims) = &spec.torus {
                let fits = dims.iter().product::<usize>() == g;
                match fits.then(|| Trinaryx3::new(dims.clone(), count, 1)).flatten() {
                    Some(_) => {
                        let segs = cost::trinaryx3_segments(dims, m, count.max(1), &NET);
                        let t = Trinaryx3::new(dims.clone(), count, segs).expect("checked above");
                        return (Box::new(t), "trinaryx3");
                    }
                    None => tracing::info!(
                        "coll_sharm_torus_dims {dims:?} is no 2-D or 3-D torus (sides >= 3) of the top group's {g} members; the model's torus is used"
                    ),
                }
            }
            if cost::torus_shape(g).is_none() {
                tracing::info!(
                    "Trinaryx3: no torus of {g} members (sides >= 3); the lattice ring runs instead"
                );
                return (
                    cost::allreduce_for(shape, g, count, elem, &NET),
                    "lattice_ring",
                );
            }
            (
                cost::allreduce_for(shape, g, count, elem, &NET),
                "trinaryx3",
            )
        }
        Shape::RecursiveDoubling => (
            cost::allreduce_for(shape, g, count, elem, &NET),
            "recursive_doubling",
        ),
        Shape::Ring => (cost::allreduce_for(shape, g, count, elem, &NET), "ring"),
    }
}

/// Runs this process's part of `collective` (ranks = indices into
/// `pml.members`) on `buf` with the one executor; `comb` combines the
/// operands of a reduction (None for a Bcast, whose schedule never
/// combines).  Ok, with what the executor did, when every transfer worked.
pub fn run_schedule(
    mut pml: Pml,
    me: usize,
    collective: &dyn Collective,
    layout: Layout,
    comb: Option<&Combiner>,
    tag: i32,
    buf: &mut [u8],
) -> Result<Ran, String> {
    let idx = pml
        .members
        .iter()
        .position(|&m| m == me)
        .expect("a member of the group");
    let (size, extent) = (layout.size, layout.extent);
    let mut failed = None;
    let combine = |incoming: &[u8], mine: &mut [u8], order: Order| {
        let Some(comb) = comb else {
            failed = Some("a schedule without an operation combined".to_owned());
            return;
        };
        // Whole elements: the last one may end at its data bytes.
        let n = (incoming.len() + extent - size) / extent;
        // SAFETY: both slices hold n elements laid out by `layout`.
        unsafe {
            match order {
                Order::IncomingFirst => comb.fold(incoming.as_ptr(), mine.as_mut_ptr(), n),
                Order::MineFirst => {
                    // mine = mine op incoming: the combiner's target is its
                    // right operand, so fold ours into a copy of the incoming.
                    let mut right = incoming.to_vec();
                    comb.fold(mine.as_ptr(), right.as_mut_ptr(), n);
                    mine.copy_from_slice(&right);
                }
            }
        }
    };
    let ran =
        Executor::new(layout, tag).run(&collective.schedule_of(idx), buf, &mut pml, combine)?;
    failed.map_or(Ok(ran), Err)
}

/// Runs the top group's Allreduce on `acc` (this member's partial result,
/// `layout.count` elements) over the PML among `pml.members`; true when
/// every transfer worked.
pub fn run_top_allreduce(
    pml: Pml,
    me: usize,
    spec: &TopSpec,
    layout: &ReduceLayout,
    comb: &Combiner,
    tag: i32,
    acc: &mut [u8],
) -> bool {
    let g = pml.members.len();
    let (collective, name) = top_allreduce(spec, g, layout.count, layout.extent);
    tracing::trace!("top group of {g}: allreduce by {name}");
    let shape = Layout {
        size: layout.size,
        extent: layout.extent,
    };
    match run_schedule(pml, me, collective.as_ref(), shape, Some(comb), tag, acc) {
        Ok(ran) => {
            // Paper 001's asynchronous form at work (`schedule::exec`).
            tracing::trace!(
                "top group of {g}: {name} posted {} of its {} steps before the step ahead completed",
                ran.early,
                ran.steps
            );
            true
        }
        Err(e) => {
            tracing::warn!("top group allreduce ({name}): {e}");
            false
        }
    }
}

/// Paper 003's Allgather over all processes through the PML: the
/// variant's schedule (`remap::allgather`) in `mapping`'s numbering, run by
/// the one executor like every other network schedule.  `all` holds the p
/// blocks of `block` bytes in rank order, this process's own at position
/// `me` on entry; the local moves before and after the steps are
/// `schedule::gather`'s.  True when every transfer worked.
pub fn remapped_allgather(
    comm: Comm,
    me: usize,
    variant: Variant,
    mapping: &Mapping,
    block: usize,
    all: &mut [u8],
    tag: i32,
) -> bool {
    let coll = RemappedAllgather {
        variant,
        mapping,
        block,
    };
    let members: Vec<usize> = (0..coll.size()).collect();
    debug_assert_eq!(all.len(), coll.count());
    gather::place_own(&coll, me, all, block);
    // Elements are bytes: blocks need no datatype here.
    let bytes = Layout { size: 1, extent: 1 };
    let pml = Pml {
        comm,
        members: &members,
    };
    match run_schedule(pml, me, &coll, bytes, None, tag, all) {
        Ok(_) => {
            gather::arrange(&coll, me, all, block);
            true
        }
        Err(e) => {
            tracing::warn!("allgather ({variant:?}): {e}");
            false
        }
    }
}
