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

use crate::coll::gather::{receive_all, send_stream};
use crate::coll::reduction::Reduction;
use crate::coll::{allreduce as queue_allreduce, bcast as queue_bcast, reduce as queue_reduce};
use crate::hier::network::{self, TopSpec};
use crate::hier::schedule::basic::{Binomial, Flat, RingRooted};
use crate::hier::schedule::exec::Layout;
use crate::hier::schedule::plan::Collective;
use crate::ompi::call::Coll;
use crate::ompi::combine::Combiner;
use crate::ompi::dtype::ReduceLayout;
use crate::ompi::ffi::{self, Comm};
use crate::ompi::p2p;
use crate::ompi::params::{Algorithm, AllreduceForm, GroupAlgorithm, TopAllreduce};
use crate::ompi::payload::Payload;
use crate::shm::bootstrap::Bootstrap;
use crate::shm::calibrate;
use crate::shm::channel::Shared;
use crate::shm::queue::Readers;

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
                .all(|&m| p2p::send(self.comm, buf, m, tag))
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
        } else if !p2p::send(self.comm, &v, leader, tag) {
            return None;
        }
        self.bcast_bytes(&mut v).then(|| i32::from_le_bytes(v))
    }
}

impl Group {
    /// Whether the group moves data through shared memory (its segment may
    /// still have to be created); the same answer on every member.
    fn is_shared(&self) -> bool {
        matches!(
            self.transport,
            Transport::SharedPending | Transport::SharedReady(_)
        )
    }

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
    /// False for a non-commutative operation: then every group is reduced
    /// in member order (the plan checked that members carry ascending rank
    /// ranges) by algorithms that combine in rank order.
    pub commutative: bool,
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
    // A network group: the algorithm as a schedule, run by the executor.
    // Flat and binomial combine in rank order (non-commutative operations
    // too); the ring only for commutative ones with an element per member.
    let (g, count) = (grp.members.len(), ops.layout.count);
    let coll: Box<dyn Collective> = match alg {
        GroupAlgorithm::Flat => Box::new(Flat {
            p: g,
            count,
            reduce: true,
        }),
        GroupAlgorithm::Ring if ops.commutative && count >= g => Box::new(RingRooted {
            p: g,
            count,
            reduce: true,
        }),
        GroupAlgorithm::Ring | GroupAlgorithm::Binomial => Box::new(Binomial {
            p: g,
            count,
            reduce: true,
        }),
    };
    let shape = Layout {
        size: ops.layout.size,
        extent: ops.layout.extent,
    };
    let pml = network::Pml {
        comm,
        members: &grp.members,
    };
    let leader = grp.members[0] == me;
    match network::run_schedule(
        pml,
        me,
        coll.as_ref(),
        shape,
        Some(&ops.comb),
        ffi::tag_reduce(),
        ops.acc,
    ) {
        Ok(_) => Some(leader),
        Err(e) => {
            tracing::warn!("group reduce: {e}");
            None
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
    // A network group: the algorithm as a schedule over bytes.
    let (g, count) = (grp.members.len(), buf.len());
    let coll: Box<dyn Collective> = match alg {
        GroupAlgorithm::Flat => Box::new(Flat {
            p: g,
            count,
            reduce: false,
        }),
        GroupAlgorithm::Ring if count >= g => Box::new(RingRooted {
            p: g,
            count,
            reduce: false,
        }),
        GroupAlgorithm::Ring | GroupAlgorithm::Binomial => Box::new(Binomial {
            p: g,
            count,
            reduce: false,
        }),
    };
    let pml = network::Pml {
        comm,
        members: &grp.members,
    };
    let bytes = Layout { size: 1, extent: 1 };
    match network::run_schedule(pml, me, coll.as_ref(), bytes, None, ffi::tag_bcast(), buf) {
        Ok(_) => true,
        Err(e) => {
            tracing::warn!("group bcast: {e}");
            false
        }
    }
}

/// Walks up the first `upto` groups of the chain, running `step(level,
/// group, me)` at each, which returns whether this process leads the group
/// (and so goes on up).  Returns whether it reached the top of the walk,
/// None when a step failed.  Everything that climbs (Reduce, the gathers of
/// Barrier and Allgather) climbs this way.
pub(crate) fn walk_up(
    chain: &mut Chain,
    upto: usize,
    mut step: impl FnMut(usize, &mut Group, usize) -> Option<bool>,
) -> Option<bool> {
    let me = chain.me;
    for (level, group) in chain.groups.iter_mut().take(upto).enumerate() {
        if !step(level, group, me)? {
            return Some(false);
        }
    }
    Some(true)
}

/// Reduces up the chain over its first `upto` groups.  Returns whether this
/// process holds the result of its last group afterwards.
fn reduce_up(
    comm: Comm,
    chain: &mut Chain,
    upto: usize,
    alg: GroupAlgorithm,
    ops: &mut Operands,
) -> Option<bool> {
    walk_up(chain, upto, |_, group, me| {
        reduce_group(comm, group, me, alg, ops)
    })
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
            // The same sender as the queue Gather's, so single copy is
            // chosen alike at both ends of the stream.
            let mut src = Payload::Contiguous(mine.as_ptr() as *mut u8);
            send_stream(sh, &mut src, mine.len(), op, Readers::One(0));
            return Some(false);
        }
        let mut sinks = sh.peer_streams();
        for (j, v) in into.iter_mut().enumerate().skip(1) {
            sinks.push((j, Payload::Contiguous(v.as_mut_ptr()), sh.cut(v.len())));
        }
        let received = receive_all(sh, &mut sinks, op, false);
        sh.recycle(sinks);
        return received.then_some(true);
    }
    let (group, tag) = (&grp.members[..], ffi::tag_reduce());
    if group[0] != me {
        return p2p::send(comm, mine, group[0], tag).then_some(false);
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

/// Allreduce when the top group lies inside one node (a hierarchy of one
/// node, or levels that end below the node): reduce up to it, run sharm's
/// queue Allreduce among its members (reduce-scatter + allgather for large
/// messages, every member working on a slice) instead of a Reduce to its
/// leader and a Bcast back, and bring the result down.  Both Allreduce forms
/// end here: among processes sharing memory the queue Allreduce is the
/// fastest of them (measured: the Reduce+Bcast detour was 1.1-1.8x the flat
/// path from 64 KiB).  Member order is rank order, so non-commutative
/// operations combine in the canonical order.
fn allreduce_in_shared_top(
    comm: Comm,
    chain: &mut Chain,
    alg: GroupAlgorithm,
    top: &TopSpec,
    ops: &mut Operands,
) -> bool {
    let (me, levels) = (chain.me, chain.groups.len());
    if reduce_up(comm, chain, levels - 1, alg, ops) != Some(true) {
        return false;
    }
    let group = &mut chain.groups[levels - 1];
    let done = match group.shared(comm, me) {
        Some(sh) => {
            let red = Reduction {
                own: ops.acc.as_ptr(),
                rbuf: ops.acc.as_mut_ptr(),
                in_place: true,
                layout: ops.layout,
                comb: ops.comb,
                commutative: ops.commutative,
            };
            queue_allreduce::allreduce(sh, &red)
        }
        // No segment after all (reported): the members still agree on the
        // network schedule.
        None => {
            let members = group.members.clone();
            allreduce_top(comm, &members, me, alg, top, ops)
        }
    };
    done && bcast_down(comm, chain, levels - 1, alg, ops.acc)
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
        return p2p::send(comm, ops.acc, root, tag);
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
        if chain.me == root && !p2p::send(comm, buf, 0, tag) {
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
    if chain.reaches_top && levels > 0 && chain.groups[levels - 1].is_shared() {
        return allreduce_in_shared_top(comm, chain, alg, top, ops);
    }
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
