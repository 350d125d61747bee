//! One collective call as Open MPI hands it over, decoded once into typed,
//! per-operation arguments (`Args`).  The glue passes every call as one flat
//! record (`ffi::Call`: raw pointers, counts and handles); nothing above this
//! module reads that record.
//!
//! The decoding also computes the one size every process knows for the call
//! (`Args::shared_bytes`): the decisions taken on it (serve or hand over,
//! which algorithm) must come out alike on every process.

use std::ffi::c_void;

use crate::ompi::dtype::{self, ReduceLayout, Unreducible};
use crate::ompi::ffi::{self, Call, Dtype, DtypeInfo, Op};
use crate::ompi::payload::{RootSide, TypedBuf};

/// Collective operations, in the order of `enum sharm_coll` in sharm_glue.h.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(usize)]
pub enum Coll {
    Barrier = 0,
    Bcast,
    Reduce,
    Allreduce,
    Gather,
    Gatherv,
    Scatter,
    Scatterv,
    Allgather,
    Allgatherv,
    Alltoall,
    Alltoallv,
    ReduceScatterBlock,
    ReduceScatter,
    Scan,
    Exscan,
}

pub const ALL: [Coll; COLLS] = [
    Coll::Barrier,
    Coll::Bcast,
    Coll::Reduce,
    Coll::Allreduce,
    Coll::Gather,
    Coll::Gatherv,
    Coll::Scatter,
    Coll::Scatterv,
    Coll::Allgather,
    Coll::Allgatherv,
    Coll::Alltoall,
    Coll::Alltoallv,
    Coll::ReduceScatterBlock,
    Coll::ReduceScatter,
    Coll::Scan,
    Coll::Exscan,
];

const NAMES: [&str; COLLS] = [
    "MPI_Barrier",
    "MPI_Bcast",
    "MPI_Reduce",
    "MPI_Allreduce",
    "MPI_Gather",
    "MPI_Gatherv",
    "MPI_Scatter",
    "MPI_Scatterv",
    "MPI_Allgather",
    "MPI_Allgatherv",
    "MPI_Alltoall",
    "MPI_Alltoallv",
    "MPI_Reduce_scatter_block",
    "MPI_Reduce_scatter",
    "MPI_Scan",
    "MPI_Exscan",
];

impl Coll {
    pub fn from_raw(v: i32) -> Option<Coll> {
        ALL.get(usize::try_from(v).ok()?).copied()
    }

    pub fn name(self) -> &'static str {
        NAMES[self as usize]
    }
}

/// Number of collectives the glue registers counters for (SHARM_COLL_COUNT).
pub const COLLS: usize = 16;

impl Coll {
    /// The collective whose rules (`coll_sharm_<name>_rules`) and algorithm
    /// choice decide this one's: Exscan's are Scan's, and
    /// Reduce_scatter_block's Reduce_scatter's.
    pub fn ruled_as(self) -> Coll {
        match self {
            Coll::Exscan => Coll::Scan,
            Coll::ReduceScatterBlock => Coll::ReduceScatter,
            other => other,
        }
    }

    /// The reductions (they take an operation).
    pub fn is_reduction(self) -> bool {
        matches!(
            self,
            Coll::Reduce
                | Coll::Allreduce
                | Coll::Scan
                | Coll::Exscan
                | Coll::ReduceScatterBlock
                | Coll::ReduceScatter
        )
    }
}

/// A reduction's arguments (Reduce, Allreduce, Scan, Exscan,
/// Reduce_scatter(_block)).
pub struct ReductionArgs {
    pub coll: Coll,
    /// The send buffer; None for MPI_IN_PLACE (the receive buffer holds this
    /// process's contribution).
    pub sbuf: Option<*const u8>,
    pub rbuf: *mut u8,
    pub dtype: Dtype,
    /// The datatype's geometry, asked of Open MPI once per call.
    pub info: DtypeInfo,
    pub op: Op,
    /// The operation's facts, asked of Open MPI once per call: a predefined
    /// (intrinsic) operation, and whether it commutes.
    pub intrinsic: bool,
    pub commutative: bool,
    pub root: usize,
    /// Elements of each process's result slice (Reduce_scatter(_block) only).
    pub slices: Vec<usize>,
    /// Elements reduced in all.
    pub total: usize,
    /// How the elements lie in the buffers, or why sharm cannot reduce them
    /// (decided here, once: it depends on the call alone).
    pub layout: Result<ReduceLayout, Unreducible>,
}

impl ReductionArgs {
    /// This process's contribution.
    pub fn own(&self) -> *const u8 {
        self.sbuf.unwrap_or(self.rbuf)
    }
}

/// A data-movement call's arguments (Gather(v), Scatter(v), Allgather(v),
/// Alltoall(v)): each side as p blocks (the v-variants with counts and
/// displacements).
pub struct MovementArgs<'a> {
    pub coll: Coll,
    pub root: usize,
    /// This process's send buffer as one block (Gather, Allgather).
    pub send: TypedBuf,
    /// This process's receive buffer as one block (Scatter).
    pub recv: TypedBuf,
    pub send_side: RootSide<'a>,
    pub recv_side: RootSide<'a>,
    pub send_in_place: bool,
    pub recv_in_place: bool,
}

/// One call, decoded.  It lives on the stack for the call's duration; boxing
/// the large variant would put a heap allocation on every call's path.
#[allow(clippy::large_enum_variant)]
pub enum Args<'a> {
    Barrier,
    Bcast { buf: TypedBuf, root: usize },
    Reduction(ReductionArgs),
    Movement(MovementArgs<'a>),
}

/// The application's count or displacement array of a v-variant (p entries).
///
/// # Safety
/// `ptr` is null or addresses p integers that outlive the call.
pub(crate) unsafe fn ints<'a>(ptr: *const i32, p: usize) -> &'a [i32] {
    if ptr.is_null() {
        &[]
    } else {
        std::slice::from_raw_parts(ptr, p)
    }
}

fn count(c: i32) -> usize {
    c.max(0) as usize
}

impl<'a> Args<'a> {
    /// Decodes `call`, made by a process of `p`, and hands the arguments to
    /// `serve` (None: an operation sharm does not know, which goes to the
    /// next component as it is).
    ///
    /// Why a callback instead of returning the `Args`: the enum is as large
    /// as its largest variant (456 bytes, four typed buffers of a data
    /// movement), and returning it moved all of it on every call, even a
    /// Bcast's one buffer: about 100 of an 8-byte Bcast's 1,000 instructions
    /// (callgrind, np=2).  Each arm builds its variant where `serve` reads it.
    ///
    /// # Safety
    /// `call` must be a call Open MPI made with the application's (validated)
    /// arguments; its arrays live as long as `'a`.
    #[inline(always)]
    pub unsafe fn decode<R>(
        call: &'a Call,
        p: usize,
        serve: impl FnOnce(&Args<'a>) -> R,
    ) -> Option<R> {
        let coll = Coll::from_raw(call.coll)?;
        let root = call.root.max(0) as usize;
        let in_place = |ptr: *const c_void| ptr == ffi::in_place();
        let (sdt, rdt) = (Dtype(call.sdtype), Dtype(call.rdtype));
        Some(match coll {
            Coll::Barrier => serve(&Args::Barrier),
            Coll::Bcast => serve(&Args::Bcast {
                buf: TypedBuf::new(call.rbuf.cast(), call.rcount, rdt),
                root,
            }),
            c if c.is_reduction() => {
                let slices: Vec<usize> = match c {
                    Coll::ReduceScatterBlock => vec![count(call.rcount); p],
                    Coll::ReduceScatter => {
                        ints(call.rcounts, p).iter().map(|&n| count(n)).collect()
                    }
                    _ => Vec::new(),
                };
                let total = if slices.is_empty() {
                    count(call.rcount)
                } else {
                    slices.iter().sum()
                };
                let op = Op(call.op);
                let (info, intrinsic) = (rdt.info(), op.intrinsic());
                serve(&Args::Reduction(ReductionArgs {
                    coll: c,
                    sbuf: (!in_place(call.sbuf)).then_some(call.sbuf.cast()),
                    rbuf: call.rbuf.cast(),
                    dtype: rdt,
                    info,
                    op,
                    intrinsic,
                    commutative: op.commutative(),
                    root,
                    slices,
                    total,
                    layout: ReduceLayout::of(&info, total, intrinsic),
                }))
            }
            c => {
                // Each datatype's geometry is asked for once (one question
                // when both sides use the same datatype, as most calls do).
                let sinfo = sdt.info();
                let rinfo = if rdt.0 == sdt.0 { sinfo } else { rdt.info() };
                let side =
                    |buf: *const c_void, n: i32, cs: *const i32, ds: *const i32, dt, info| {
                        RootSide {
                            whole: TypedBuf::with_info(buf.cast(), n, dt, info),
                            count: n,
                            counts: (!cs.is_null()).then(|| (ints(cs, p), ints(ds, p))),
                        }
                    };
                serve(&Args::Movement(MovementArgs {
                    coll: c,
                    root,
                    send: TypedBuf::with_info(call.sbuf.cast(), call.scount, sdt, sinfo),
                    recv: TypedBuf::with_info(call.rbuf.cast(), call.rcount, rdt, rinfo),
                    send_side: side(
                        call.sbuf,
                        call.scount,
                        call.scounts,
                        call.sdispls,
                        sdt,
                        sinfo,
                    ),
                    recv_side: side(
                        call.rbuf,
                        call.rcount,
                        call.rcounts,
                        call.rdispls,
                        rdt,
                        rinfo,
                    ),
                    send_in_place: in_place(call.sbuf),
                    recv_in_place: in_place(call.rbuf),
                }))
            }
        })
    }

    pub fn coll(&self) -> Coll {
        match self {
            Args::Barrier => Coll::Barrier,
            Args::Bcast { .. } => Coll::Bcast,
            Args::Reduction(r) => r.coll,
            Args::Movement(m) => m.coll,
        }
    }

    /// Bytes the call moves in all, as every process computes them alike
    /// (None for the v-variants whose counts only some processes know, and
    /// for a size beyond u64, and for Barrier, which moves no data and is
    /// never empty).
    pub fn shared_bytes(&self, me: usize, p: usize) -> Option<u64> {
        // The typed buffers carry their geometry: no second question to Open MPI.
        let bytes_of = |b: &TypedBuf| dtype::message_bytes(b.info(), b.count);
        let times_p = |b: Option<u64>| b.and_then(|b| b.checked_mul(p as u64));
        match self {
            Args::Barrier => None,
            Args::Bcast { buf, .. } => dtype::message_bytes(buf.info(), buf.count),
            Args::Reduction(r) => {
                let n = i32::try_from(r.total).ok()?;
                dtype::message_bytes(&r.info, n)
            }
            Args::Movement(m) => match m.coll {
                Coll::Gather => times_p(if me == m.root {
                    bytes_of(&m.recv)
                } else {
                    bytes_of(&m.send)
                }),
                Coll::Scatter => times_p(if me == m.root {
                    bytes_of(&m.send)
                } else {
                    bytes_of(&m.recv)
                }),
                Coll::Allgather | Coll::Alltoall => times_p(if m.send_in_place {
                    bytes_of(&m.recv)
                } else {
                    bytes_of(&m.send)
                }),
                Coll::Allgatherv => {
                    let (counts, _) = m.recv_side.counts?;
                    let elements: u64 = counts.iter().map(|&c| count(c) as u64).sum();
                    m.recv.info().size.checked_mul(elements)
                }
                _ => None,
            },
        }
    }
}
