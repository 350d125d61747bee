//! Runs a served call over the communicator's shared-memory channel: maps the
//! decoded arguments onto the collectives of `coll`.

use crate::coll::reduction::Reduction;
use crate::coll::{allgather, allreduce, alltoall, barrier, bcast, gather, reduce};
use crate::coll::{reduce_scatter, scan};
use crate::ompi::call::{Args, Coll, MovementArgs, ReductionArgs};
use crate::ompi::stats;
use crate::shm::channel::Shared;

/// Runs `args`; false when a buffer could not be packed or unpacked, or a
/// single-copy pull failed.  Counts the routes the call's data took
/// (`count_routes`).
pub fn run(sh: &mut Shared, args: &Args) -> bool {
    let ok = match tried_class(sh, args) {
        Some((coll, bytes)) => sh.on_learned_path(coll, bytes, |sh| run_call(sh, args)),
        None => run_call(sh, args),
    };
    count_routes(sh, args.coll());
    ok
}

/// Counts a served call of `coll` that moved data by single copy (MPI_T
/// `coll_sharm_<op>_single_copy`) or through the pair buffer
/// (`coll_sharm_<op>_pair_buffer`): the channel says whether an offer was
/// made or accepted, and the buffer whether an exchange or a stream ran,
/// since the last call's count.  Every path that serves a call over one
/// channel ends with it (this one and the express lane's); the hierarchy
/// asks each of its groups' channels (`hierarchical::count_routes`).
pub(super) fn count_routes(sh: &mut Shared, coll: Coll) {
    let (single, paired) = (sh.took_single(), sh.took_pair());
    count_took(coll, single, paired, "");
}

/// Counts a served call of `coll` in the MPI_T counters of the routes it
/// took: `single` copy and the `paired` buffer, whichever channels they
/// were in (`count_routes`, and the hierarchy's groups).  `place` ends the
/// verbose line ("" for the communicator's own channel).
pub(super) fn count_took(coll: Coll, single: bool, paired: bool, place: &str) {
    if single {
        stats::single_copy(coll);
        tracing::trace!("{}: single copy (cma){place}", coll.name());
    }
    if paired {
        stats::pair_buffer(coll);
    }
}

/// The collective and bytes in all by which a call's path and landing are
/// tried and learned (`shm::trials`): the calls with a single-copy path whose bytes
/// every process knows alike.  Not the Scans and Reduce_scatter (no
/// single-copy path), nor the v-variants whose counts only some processes
/// know (their blocks keep the set-up floors); an Allgatherv's counts are
/// known to all.
fn tried_class(sh: &Shared, args: &Args) -> Option<(Coll, u64)> {
    let coll = args.coll();
    let tried = matches!(
        coll,
        Coll::Bcast
            | Coll::Reduce
            | Coll::Allreduce
            | Coll::Gather
            | Coll::Scatter
            | Coll::Allgather
            | Coll::Allgatherv
            | Coll::Alltoall
    );
    tried
        .then(|| args.shared_bytes(sh.me, sh.p))
        .flatten()
        .map(|b| (coll, b))
}

fn run_call(sh: &mut Shared, args: &Args) -> bool {
    match args {
        Args::Barrier => {
            barrier::barrier(sh);
            true
        }
        Args::Bcast { buf, root } => {
            let mut payload = if sh.me == *root {
                buf.source()
            } else {
                buf.sink()
            };
            bcast::bcast(sh, &mut payload, buf.bytes(), *root)
        }
        Args::Reduction(r) => reduction(sh, r),
        Args::Movement(m) => movement(sh, m),
    }
}

fn reduction(sh: &mut Shared, r: &ReductionArgs) -> bool {
    let red = Reduction {
        own: r.own(),
        rbuf: r.rbuf,
        in_place: r.sbuf.is_none(),
        layout: r.layout.expect("a served reduction has its layout"),
        comb: sh.combiners.get(
            r.op,
            r.dtype,
            sh.params.reduction_kernels,
            r.intrinsic && r.info.predefined != 0,
        ),
        commutative: r.commutative,
    };
    match r.coll {
        Coll::Reduce => return reduce::reduce(sh, &red, r.root),
        Coll::Allreduce => return allreduce::allreduce(sh, &red),
        Coll::Scan => scan::scan(sh, &red, true),
        Coll::Exscan => scan::scan(sh, &red, false),
        _ => return reduce_scatter::reduce_scatter_op(sh, &red, &r.slices, r.coll),
    }
    true
}

fn movement(sh: &mut Shared, m: &MovementArgs) -> bool {
    let own_send = (!m.send_in_place).then_some(m.send);
    match m.coll {
        Coll::Gather | Coll::Gatherv => gather::gather(sh, own_send, &m.recv_side, m.root),
        Coll::Scatter | Coll::Scatterv => {
            let own_recv = (!m.recv_in_place).then_some(m.recv);
            gather::scatter(sh, own_recv, &m.send_side, m.root)
        }
        Coll::Allgather | Coll::Allgatherv => {
            allgather::allgather(sh, own_send, &m.recv_side, m.coll == Coll::Allgather)
        }
        _ => alltoall::alltoall(
            sh,
            (!m.send_in_place).then_some(&m.send_side),
            &m.recv_side,
            m.coll == Coll::Alltoall,
        ),
    }
}
