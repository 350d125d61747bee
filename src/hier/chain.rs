//! Hierarchical Bcast, Reduce and Allreduce (the coll/tcl design, paper 004,
//! Fig. 3-6) over the process groups of `hierarchy`.
//!
//! Every process knows its chain of groups, bottom-up: it is a member of each
//! and the leader (lowest rank) of all but the last.  Rank 0 leads every group
//! it is in, so it is the global leader.  No communicator is created for the
//! groups.  A group inside one node (levels L2 ... node) gets a shared-memory
//! segment of its own, created at its first use with point-to-point messages
//! among its members, and runs sharm's queue algorithms on it (group index 0,
//! the leader, as root).  Network groups (switch levels, the top group) send
//! point to point through Open MPI's PML with the collective tags, which keeps
//! per-pair MPI ordering between consecutive collectives of a communicator.
//!
//! * Reduce: up the chain, each group reduced into its leader (flat, or a
//!   binomial tree over the group's member indices); rank 0 ends with the
//!   result and hands it to the root.  Commutative operations only (the
//!   caller hands others to the flat algorithms or the next component).
//! * Bcast: the root hands the message to rank 0, then down the chain from the
//!   top group (flat, or binomial).
//! * Allreduce: ReduceBcast (reduce to rank 0, bcast down) or
//!   ReduceAllreduceBcast (reduce up to the top group, recursive-doubling
//!   allreduce among its members, bcast down).

use crate::coll::gather::receive_all;
use crate::coll::reduction::Reduction;
use crate::coll::{bcast as queue_bcast, reduce as queue_reduce};
use crate::hier::network::{self, TopSpec};
use crate::ompi::call::Coll;
use crate::ompi::combine::Combiner;
use crate::ompi::dtype::ReduceLayout;
use crate::ompi::ffi::{self, Comm};
use crate::ompi::params::{Algorithm, AllreduceForm, GroupAlgorithm, TopAllreduce};
use crate::ompi::payload::Payload;
use crate::shm::bootstrap::Bootstrap;
use crate::shm::calibrate;
use crate::shm::channel::{Cut, Shared};
use crate::shm::queue::Readers;

/// Byte range of chunk `c` of `g` chunks of a message of `count` elements
/// laid out by `layout` (whole elements per chunk, padding excluded).
fn chunk(layout: &ReduceLayout, g: usize, c: usize) -> std::ops::Range<usize> {
    let (first, end) = (c * layout.count / g, (c + 1) * layout.count / g);
    let start = first * layout.extent;
    start..start + layout.span(end - first)
}

/// Two disjoint chunks of one buffer, one to send and one to receive into.
///
/// # Safety
/// The ranges must not overlap and must lie within `buf`.
unsafe fn split(
    buf: &mut [u8],
    out: std::ops::Range<usize>,
    into: std::ops::Range<usize>,
) -> (&[u8], &mut [u8]) {
    let base = buf.as_mut_ptr();
    (
        std::slice::from_raw_parts(base.add(out.start), out.len()),
        std::slice::from_raw_parts_mut(base.add(into.start), into.len()),
    )
}

/// Ring allgather: member `idx` holds chunk `(idx + shift) mod g` and ends
/// with all of them.
fn ring_allgather(
    comm: Comm,
    group: &[usize],
    idx: usize,
    shift: usize,
    layout: &ReduceLayout,
    buf: &mut [u8],
    tag: i32,
) -> bool {
    let g = group.len();
    let (next, prev) = (group[(idx + 1) % g], group[(idx + g - 1) % g]);
    for k in 0..g - 1 {
        let send = (idx + shift + g - k) % g;
        let recv = (idx + shift + g - k - 1) % g;
        // SAFETY: distinct chunks of `buf`.
        let (out, into) = unsafe { split(buf, chunk(layout, g, send), chunk(layout, g, recv)) };
        if !comm.sendrecv(out, next, into, prev, tag) {
            return false;
        }
    }
    true
}

/// Ring reduce-scatter: afterwards member `idx` holds the fully reduced
/// chunk `(idx + 1) mod g` in `ops.acc`.
fn ring_reduce_scatter(
    comm: Comm,
    group: &[usize],
    idx: usize,
    ops: &mut Operands,
    tag: i32,
) -> bool {
    let g = group.len();
    let (next, prev) = (group[(idx + 1) % g], group[(idx + g - 1) % g]);
    for k in 0..g - 1 {
        let send = chunk(&ops.layout, g, (idx + g - k) % g);
        let c = (idx + 2 * g - k - 1) % g;
        let recv = chunk(&ops.layout, g, c);
        let n = (c + 1) * ops.layout.count / g - c * ops.layout.count / g;
        let into = &mut ops.tmp[..recv.len()];
        if !comm.sendrecv(&ops.acc[send], next, into, prev, tag) {
            return false;
        }
        // SAFETY: both ranges hold `n` elements.
        unsafe {
            ops.comb
                .fold(ops.tmp.as_ptr(), ops.acc[recv].as_mut_ptr(), n)
        };
    }
    true
}

/// How a group moves data.
pub enum Transport {
    /// Point to point through the PML (network levels).
    Pml,
    /// Shared memory; the segment is created at the group's first use.
    SharedPending,
    SharedReady(Box<Shared>),
    /// The segment could not be created: point to point instead.
    SharedFailed,
}

/// One group of a process's chain.
pub struct Group {
    /// Member ranks, ascending; the leader first.
    pub members: Vec<usize>,
    /// Per member, the ranks whose data it carries at this level, ascending
    /// (itself and everyone below it).
    pub carried: Vec<Vec<usize>>,
    pub transport: Transport,
    /// This level's algorithm, when it overrides the per-operation one.
    pub algorithm: Option<GroupAlgorithm>,
}

/// One process's view: its chain of groups, bottom-up.
pub struct Chain<'a> {
    pub me: usize,
    pub groups: &'a mut [Group],
    /// Whether the last group is the top (root) group of the hierarchy.
    pub reaches_top: bool,
}

/// Bootstrap of a group's segment: point-to-point messages to and from its
/// leader.
struct GroupBoot<'a> {
    comm: Comm,
    members: &'a [usize],
    me: usize,
}

impl Bootstrap for GroupBoot<'_> {
    fn bcast_bytes(&self, buf: &mut [u8]) -> bool {
        let (tag, leader) = (ffi::tag_bcast(), self.members[0]);
        if self.me == leader {
            self.members[1..]
                .iter()
                .all(|&m| self.comm.send(buf, m, tag))
        } else {
            self.comm.recv(buf, leader, tag)
        }
    }
    fn agree_min(&self, value: i32) -> Option<i32> {
        let (tag, leader) = (ffi::tag_reduce(), self.members[0]);
        let mut v = value.to_le_bytes();
        if self.me == leader {
            for &m in &self.members[1..] {
                let mut other = [0u8; 4];
                if !self.comm.recv(&mut other, m, tag) {
                    return None;
                }
                v = i32::from_le_bytes(v)
                    .min(i32::from_le_bytes(other))
                    .to_le_bytes();
            }
        } else if !self.comm.send(&v, leader, tag) {
            return None;
        }
        self.bcast_bytes(&mut v).then(|| i32::from_le_bytes(v))
    }
}

impl Group {
    /// The group's shared memory, created at first use (collective among the
    /// members, who all reach this group in the same call).
    fn shared(&mut self, comm: Comm, me: usize) -> Option<&mut Shared> {
        if matches!(self.transport, Transport::SharedPending) {
            let boot = GroupBoot {
                comm,
                members: &self.members,
                me,
            };
            let index = self.members.iter().position(|&r| r == me).expect("member");
            let label = format!("hierarchy group {:?}", self.members);
            self.transport = match calibrate::establish(&boot, index, self.members.len(), &label) {
                Ok(mut sh) => {
                    // A level override picks sharm's flat or tree algorithms.
                    let queue_alg = match self.algorithm {
                        Some(GroupAlgorithm::Flat) => Some(Algorithm::Linear),
                        Some(GroupAlgorithm::Binomial) => Some(Algorithm::Knomial),
                        _ => None,
                    };
                    if let Some(a) = queue_alg {
                        sh.params.algorithm[Coll::Bcast as usize] = a;
                        sh.params.algorithm[Coll::Reduce as usize] = a;
                    }
                    Transport::SharedReady(Box::new(sh))
                }
                Err(why) => {
                    tracing::info!("{label}: no shared memory ({why}); point to point instead");
                    Transport::SharedFailed
                }
            };
        }
        match &mut self.transport {
            Transport::SharedReady(sh) => Some(sh),
            _ => None,
        }
    }
}

/// A reduction's operands, as contiguous bytes.
pub struct Operands<'a> {
    pub layout: ReduceLayout,
    /// How two operands are combined (sharm's kernel or Open MPI's).
    pub comb: Combiner,
    /// Accumulator, initialised with this process's contribution.
    pub acc: &'a mut [u8],
    /// Receive space of the same size.
    pub tmp: &'a mut [u8],
    /// False for a non-commutative operation: then every group is reduced
    /// in member order (the plan checked that members carry ascending rank
    /// ranges), the incoming part always on the right.
    pub commutative: bool,
}

impl Operands<'_> {
    /// Folds in the part received from `src`, which carries higher ranks
    /// than this process's accumulator (see `fold_tmp`).
    fn absorb(&mut self, comm: Comm, src: usize, tag: i32) -> bool {
        comm.recv(self.tmp, src, tag) && self.fold_tmp()
    }

    /// Combines `tmp` (higher ranks) into `acc`.  Commutative: `acc = tmp op
    /// acc` in place.  Otherwise the canonical `acc = acc op tmp`: Open MPI's
    /// primitive computes `target = source op target`, so the result forms
    /// in `tmp` and is copied back.
    fn fold_tmp(&mut self) -> bool {
        let n = self.layout.count;
        // SAFETY: both buffers hold `layout.count` elements.
        unsafe {
            if self.commutative {
                self.comb.fold(self.tmp.as_ptr(), self.acc.as_mut_ptr(), n);
            } else {
                self.comb.fold(self.acc.as_ptr(), self.tmp.as_mut_ptr(), n);
                self.acc.copy_from_slice(self.tmp);
            }
        }
        true
    }
}

fn index_in(group: &[usize], me: usize) -> usize {
    group
        .iter()
        .position(|&r| r == me)
        .expect("a process is a member of every group of its chain")
}

/// Reduces `group` into its leader.  Returns Some(true) when this process
/// still holds a partial result afterwards (it is the leader), Some(false)
/// when it handed its part on, None on a communication error.
fn reduce_group(
    comm: Comm,
    grp: &mut Group,
    me: usize,
    alg: GroupAlgorithm,
    ops: &mut Operands,
) -> Option<bool> {
    let alg = grp.algorithm.unwrap_or(alg);
    if let Some(sh) = grp.shared(comm, me) {
        // sharm's queue Reduce to the leader (group index 0), accumulating
        // in place in `acc` there.
        let leader = sh.me == 0;
        let red = Reduction {
            own: ops.acc.as_ptr(),
            rbuf: ops.acc.as_mut_ptr(),
            in_place: leader,
            layout: ops.layout,
            comb: ops.comb,
            commutative: ops.commutative,
        };
        // A failed single-copy pull is a transfer error like any other.
        return queue_reduce::reduce(sh, &red, 0).then_some(leader);
    }
    let group = &grp.members[..];
    let tag = ffi::tag_reduce();
    let idx = index_in(group, me);
    let g = group.len();
    match alg {
        GroupAlgorithm::Flat => {
            if idx != 0 {
                return comm.send(ops.acc, group[0], tag).then_some(false);
            }
            for &m in &group[1..] {
                if !ops.absorb(comm, m, tag) {
                    return None;
                }
            }
            Some(true)
        }
        GroupAlgorithm::Ring if ops.commutative && g > 1 && ops.layout.count >= g => {
            if !ring_reduce_scatter(comm, group, idx, ops, tag) {
                return None;
            }
            // Gather the reduced chunks into the leader.
            let mine = chunk(&ops.layout, g, (idx + 1) % g);
            if idx != 0 {
                return comm.send(&ops.acc[mine], group[0], tag).then_some(false);
            }
            for (j, &m) in group.iter().enumerate().skip(1) {
                let range = chunk(&ops.layout, g, (j + 1) % g);
                if !comm.recv(&mut ops.acc[range], m, tag) {
                    return None;
                }
            }
            Some(true)
        }
        GroupAlgorithm::Ring | GroupAlgorithm::Binomial => {
            let mut mask = 1;
            while mask < g {
                if idx & mask != 0 {
                    return comm.send(ops.acc, group[idx - mask], tag).then_some(false);
                }
                if idx + mask < g && !ops.absorb(comm, group[idx + mask], tag) {
                    return None;
                }
                mask <<= 1;
            }
            Some(true)
        }
    }
}

/// Broadcasts `buf` from the group's leader to its members.
fn bcast_group(
    comm: Comm,
    grp: &mut Group,
    me: usize,
    alg: GroupAlgorithm,
    buf: &mut [u8],
) -> bool {
    let alg = grp.algorithm.unwrap_or(alg);
    if let Some(sh) = grp.shared(comm, me) {
        let bytes = buf.len();
        return queue_bcast::bcast(sh, &mut Payload::Contiguous(buf.as_mut_ptr()), bytes, 0);
    }
    let group = &grp.members[..];
    let tag = ffi::tag_bcast();
    let idx = index_in(group, me);
    let g = group.len();
    match alg {
        GroupAlgorithm::Flat => {
            if idx != 0 {
                return comm.recv(buf, group[0], tag);
            }
            group[1..].iter().all(|&m| comm.send(buf, m, tag))
        }
        GroupAlgorithm::Ring if g > 1 && buf.len() >= g => {
            // Scatter chunk j to member j, then a ring allgather.
            let bytes = ReduceLayout {
                count: buf.len(),
                size: 1,
                extent: 1,
            };
            if idx == 0 {
                for (j, &m) in group.iter().enumerate().skip(1) {
                    if !comm.send(&buf[chunk(&bytes, g, j)], m, tag) {
                        return false;
                    }
                }
            } else if !comm.recv(&mut buf[chunk(&bytes, g, idx)], group[0], tag) {
                return false;
            }
            ring_allgather(comm, group, idx, 0, &bytes, buf, tag)
        }
        GroupAlgorithm::Ring | GroupAlgorithm::Binomial => {
            // Receive from the index with our lowest set bit cleared, then
            // send to the indices below that bit.
            let mut mask = 1;
            while mask < g {
                if idx & mask != 0 {
                    if !comm.recv(buf, group[idx - mask], tag) {
                        return false;
                    }
                    break;
                }
                mask <<= 1;
            }
            mask >>= 1;
            while mask > 0 {
                if idx + mask < g && !comm.send(buf, group[idx + mask], tag) {
                    return false;
                }
                mask >>= 1;
            }
            true
        }
    }
}

/// Reduces up the chain over `levels` groups (all when None).  Returns whether
/// this process holds the result of its last group afterwards.
fn reduce_up(
    comm: Comm,
    chain: &mut Chain,
    upto: usize,
    alg: GroupAlgorithm,
    ops: &mut Operands,
) -> Option<bool> {
    let me = chain.me;
    for group in chain.groups.iter_mut().take(upto) {
        if !reduce_group(comm, group, me, alg, ops)? {
            return Some(false);
        }
    }
    Some(true)
}

/// Broadcasts down the chain from its group number `from` (top first).
pub(crate) fn bcast_down(
    comm: Comm,
    chain: &mut Chain,
    from: usize,
    alg: GroupAlgorithm,
    buf: &mut [u8],
) -> bool {
    let me = chain.me;
    chain
        .groups
        .iter_mut()
        .take(from)
        .rev()
        .all(|group| bcast_group(comm, group, me, alg, buf))
}

/// Gathers byte strings into the group's leader: every other member sends
/// `mine`; the leader receives member j's string into `into[j]` (sized by the
/// caller; entry 0, its own, is left alone).  Returns whether this process
/// is the leader (it goes on up the chain), None on a transfer error.
pub(crate) fn gather_group(
    comm: Comm,
    grp: &mut Group,
    me: usize,
    mine: &[u8],
    into: &mut [Vec<u8>],
) -> Option<bool> {
    if let Some(sh) = grp.shared(comm, me) {
        // One stream per member in its own queue, for the leader alone; the
        // leader takes fragment i of every stream before i+1 of any.
        let op = sh.next_op();
        if sh.me != 0 {
            let cut = sh.cut(mine.len());
            let mut src = Payload::Contiguous(mine.as_ptr() as *mut u8);
            for i in 0..cut.count() {
                sh.send(&mut src, cut, op, i, Readers::One(0));
            }
            return Some(false);
        }
        let from: Vec<usize> = (1..sh.p).collect();
        let mut sinks: Vec<(Payload, Cut)> = into[1..]
            .iter_mut()
            .map(|v| (Payload::Contiguous(v.as_mut_ptr()), sh.cut(v.len())))
            .collect();
        receive_all(sh, &from, &mut sinks, op);
        return Some(true);
    }
    let (group, tag) = (&grp.members[..], ffi::tag_reduce());
    if group[0] != me {
        return comm.send(mine, group[0], tag).then_some(false);
    }
    for (j, &m) in group.iter().enumerate().skip(1) {
        if !comm.recv(&mut into[j], m, tag) {
            return None;
        }
    }
    Some(true)
}

/// Allreduce among the top group, as a schedule over the PML
/// (`network`): the algorithm `coll_sharm_hierarchy_top_allreduce_algorithm`
/// names, or under `auto` the cost models' choice; a `ring` group algorithm
/// keeps asking for the ring under `auto`, as before.
fn allreduce_top(
    comm: Comm,
    group: &[usize],
    me: usize,
    alg: GroupAlgorithm,
    top: &TopSpec,
    ops: &mut Operands,
) -> bool {
    let mut spec = top.clone();
    if spec.algorithm == TopAllreduce::Auto && alg == GroupAlgorithm::Ring {
        spec.algorithm = TopAllreduce::Ring;
    }
    let layout = ops.layout;
    network::run_top_allreduce(
        network::Pml {
            comm,
            members: group,
        },
        me,
        &spec,
        &layout,
        &ops.comb,
        ffi::tag_reduce(),
        ops.acc,
    )
}

/// Hierarchical Reduce to `root`; `ops.acc` holds the result at the root
/// afterwards.
pub fn reduce(
    comm: Comm,
    chain: &mut Chain,
    root: usize,
    alg: GroupAlgorithm,
    ops: &mut Operands,
) -> bool {
    let Some(holds) = reduce_up(comm, chain, chain.groups.len(), alg, ops) else {
        return false;
    };
    let tag = ffi::tag_reduce();
    if root == 0 {
        return true;
    }
    if chain.me == 0 {
        debug_assert!(holds);
        return comm.send(ops.acc, root, tag);
    }
    if chain.me == root {
        return comm.recv(ops.acc, 0, tag);
    }
    true
}

/// Hierarchical Bcast of `buf` from `root`.
pub fn bcast(
    comm: Comm,
    chain: &mut Chain,
    root: usize,
    alg: GroupAlgorithm,
    buf: &mut [u8],
) -> bool {
    let tag = ffi::tag_bcast();
    if root != 0 {
        if chain.me == root && !comm.send(buf, 0, tag) {
            return false;
        }
        if chain.me == 0 && !comm.recv(buf, root, tag) {
            return false;
        }
    }
    {
        let levels = chain.groups.len();
        bcast_down(comm, chain, levels, alg, buf)
    }
}

/// Hierarchical Allreduce; `ops.acc` holds the result everywhere afterwards.
pub fn allreduce(
    comm: Comm,
    chain: &mut Chain,
    form: AllreduceForm,
    alg: GroupAlgorithm,
    top: &TopSpec,
    ops: &mut Operands,
) -> bool {
    let levels = chain.groups.len();
    match form {
        AllreduceForm::ReduceBcast => {
            reduce_up(comm, chain, levels, alg, ops).is_some()
                && bcast_down(comm, chain, levels, alg, ops.acc)
        }
        // Recursive doubling combines in partner order: commutative only.
        AllreduceForm::ReduceAllreduceBcast
            if ops.commutative && chain.reaches_top && levels > 0 =>
        {
            // We lead every group below the top one: reduce up to it, combine
            // among its members by recursive doubling, and bring it down.
            if reduce_up(comm, chain, levels - 1, alg, ops) != Some(true) {
                return false;
            }
            allreduce_top(
                comm,
                &chain.groups[levels - 1].members,
                chain.me,
                alg,
                top,
                ops,
            ) && bcast_down(comm, chain, levels - 1, alg, ops.acc)
        }
        AllreduceForm::ReduceAllreduceBcast => {
            // Our last group is below the top: hand our part to its leader,
            // and receive the result from it.
            reduce_up(comm, chain, levels, alg, ops).is_some()
                && bcast_down(comm, chain, levels, alg, ops.acc)
        }
    }
}
