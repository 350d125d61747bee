//! Whether a channel moves large streams by single copy, decided once when
//! its segment is set up (collective among its processes):
//!
//! 1. `coll_sharm_single_copy none`: never.
//! 2. Detection: every process offers a probe word, pulls its right
//!    neighbour's with CMA and writes it back beside it; all agree (minimum)
//!    on whether every pull, and every write, worked.  A
//!    refusal (ptrace scope, a container's seccomp filter or missing
//!    capability, different users) is said at `coll_sharm_verbose >= 1`.
//! 3. `cma`, or `auto` without calibration: single copy from
//!    `coll_sharm_single_copy_min_size`.
//! 4. `auto` with `coll_sharm_calibrate 1`: ranks 0 and 1 time both paths on
//!    a few sizes (once per process, later channels reuse rank 0's result;
//!    np=2 on the development VM the first collective, which sets it off,
//!    takes 19-23 ms with it and 2.6-3.0 without: about 10 ms of timed
//!    copies, 8 of making the buffers, see `Buffers`), rank 0 picks the
//!    smallest size from which single copy wins at every larger size
//!    measured, and all adopt it (printed at verbose >= 10).
//!    The machine's state decides, not a threshold fixed in advance: on one
//!    day two copies through cache-resident slots beat CMA, on another CMA
//!    wins from 256 KiB.
//! 5. On a crowded node (processes told to yield, or more processes than
//!    cores; agreed by all at set-up, `Shared::crowded`), Scatter(v) blocks
//!    go by single copy from `coll_sharm_single_copy_min_size`, and
//!    Alltoall(v) blocks from 1 MiB, whatever the calibration found
//!    (`SingleCopy::crowded` says why); the calibration there times only
//!    one-way streams, the one verdict used.  With more processes than cores
//!    (`Crowding::Oversubscribed`) Scatter's floor is at most
//!    `OVERSUBSCRIBED_SCATTER_FLOOR`.
//! 6. Gather(v) blocks are written by their senders when the probe found
//!    CMA writes permitted too (and `coll_sharm_single_copy_push`): from
//!    `coll_sharm_single_copy_min_size` without calibration or on a crowded
//!    node, else from where a third timing, a Gather at np=2 both ways
//!    (`time_gathers`), found the writes faster at every larger size.
//!    Scatter(v) blocks go by single copy from the lower of that size and
//!    the one-way verdict (`SingleCopy::with_scatter` says why).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use tracing::{debug, info};

use crate::kernels::copy;
use crate::ompi::ffi::Crowding;
use crate::ompi::params::SingleCopyMode;
use crate::ompi::payload::Payload;
use crate::shm::bootstrap::Bootstrap;
use crate::shm::channel::Shared;
use crate::shm::cma;
use crate::shm::queue::{Pos, Readers};
use crate::shm::single::SingleCopy;

/// Scatter(v) blocks from this size go by single copy when every process
/// sees more processes of the job than CPUs.  Measured on 2 cores,
/// alternated launches, with this floor against the default 256 KiB (µs,
/// tuned beside): np=8 16 KiB 52.8 -> 36.2 (31.7), 64 KiB 97 -> 68 (64);
/// np=6 16 KiB 30.8 -> 22.4 (44.6), 64 KiB 49.7 -> 51.9 (47.2).  np=4, two
/// per CPU, first measured 1.2x slower (16 KiB 13.4 -> 16.2, 64 KiB 28.3 ->
/// 34.0) and then, in 6 launches on 2026-11-25, 16/64/128 KiB 12.9/32.0/
/// 59.7 -> 9.4/20.8/34.9 (tuned 15.2/23.3/46.1): through the queues a launch
/// ran 64 KiB in 21-22 us or in 41-50, as the scheduler paired the
/// processes on the cores, by single copy in 20-24 every time.
const OVERSUBSCRIBED_SCATTER_FLOOR: usize = 16 << 10;

/// Sizes timed by the calibration (ascending).
const SIZES: [usize; 3] = [256 << 10, 1 << 20, 4 << 20];
/// Sizes timed for exchanges (ascending).  Not 256 KiB: timing it too
/// (2026-11-24, np=2) made Alltoall 256 KiB quicker (34.7 -> 29.6 us) but
/// Allreduce 512 KiB slower (62.5 -> 70.0 us), whose allgather phase then
/// moved 256 KiB halves by single copy.
const EXCHANGE_SIZES: [usize; 2] = [1 << 20, 4 << 20];
/// Rounds over all sizes and both paths (the fastest of each counts).
const ROUNDS: usize = 2;
/// Phases of the one-way timing: a warm-up of each path, then the rounds.
const ONE_WAY_OPS: usize = 2 + ROUNDS * SIZES.len() * 2;
/// Phases of the exchange timing: the rounds.
const EXCHANGE_OPS: usize = ROUNDS * EXCHANGE_SIZES.len() * 2;
/// Operation numbers of the Gather timing: the rounds, two per phase (the
/// root's offer, and the sender's stream or outcome).
const GATHER_OPS: usize = ROUNDS * SIZES.len() * 2 * 2;
/// Operation numbers the calibration uses.
const CALIBRATION_OPS: usize = ONE_WAY_OPS + EXCHANGE_OPS + GATHER_OPS;

/// rank 0's calibrated thresholds in this process: (one-way streams,
/// exchanges); `u64::MAX`: never.
static CALIBRATED: OnceLock<Thresholds> = OnceLock::new();

/// What a calibration found: from which size single copy wins for a stream
/// one process writes and another reads (Bcast, Scatter, ...), for streams
/// two processes exchange at once (Allgather(v), Alltoall(v)), and for a
/// Gather block its sender writes into the root's buffer.  `u64::MAX`:
/// never.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Thresholds {
    one_way: u64,
    exchange: u64,
    push: u64,
}

/// Bytes of `Thresholds::encode`.
const ENCODED: usize = 24;

impl Thresholds {
    fn encode(&self) -> [u8; ENCODED] {
        let mut out = [0u8; ENCODED];
        out[..8].copy_from_slice(&self.one_way.to_le_bytes());
        out[8..16].copy_from_slice(&self.exchange.to_le_bytes());
        out[16..].copy_from_slice(&self.push.to_le_bytes());
        out
    }

    fn decode(bytes: &[u8]) -> Thresholds {
        let word = |i: usize| u64::from_le_bytes(bytes[i..i + 8].try_into().expect("8 bytes"));
        Thresholds {
            one_way: word(0),
            exchange: word(8),
            push: word(16),
        }
    }
}

/// The largest stream any timing moves.
const LARGEST: usize = {
    let (one_way, exchange) = (
        SIZES[SIZES.len() - 1],
        EXCHANGE_SIZES[EXCHANGE_SIZES.len() - 1],
    );
    if one_way > exchange {
        one_way
    } else {
        exchange
    }
};

/// The buffers of one calibration, made once by each of ranks 0 and 1 and
/// used by all its timings: a source of the largest stream, and a receive
/// side of two such blocks (an Allgather's at np=2, a Gather root's; the
/// one-way reader uses the first), each made only where a timing uses it.
///
/// Why once: made anew for each timing (three sources and three receive
/// sides, the sources written byte by byte as `i % 251`), they took most
/// of the calibration's time: a process's first collective, which sets the
/// calibration off, took 33-52 ms against 2.6-3.0 with `coll_sharm_calibrate
/// 0` (np=2, 2026-11-26), of which the timed copies are about 10 ms.  The
/// content does not matter to any copy timed; it only has to be written
/// (not the zero page) and differ between the two.  Where only the one-way
/// streams are timed (a crowded node), the writer needs no receive side and
/// the reader no source, and neither is made (made anyway, they cost more
/// than the sharing saved: np=4 on 2 cores, the first collective 11-15 ->
/// 14-19 ms; made only where used, 14-17.5 -> 13.4-15.5, 4 launches each).
struct Buffers {
    src: Vec<u8>,
    all: Vec<u8>,
}

impl Buffers {
    /// `sources` and `receives` blocks of the largest stream (0 or 1, and
    /// 0 to 2).
    fn new(sources: usize, receives: usize) -> Buffers {
        Buffers {
            src: vec![0xa5; sources * LARGEST],
            all: vec![0x5a; receives * LARGEST],
        }
    }
}

/// The word every process offers for the detection probe: a value the
/// reader can check (it depends on the offering process's pid).
const PROBE_MAGIC: u64 = 0x5348_4152_4d43_4d41; // "SHARMCMA"

/// What the detection probe found CMA allows between all of a channel's
/// processes, as agreed (the minimum over them).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Access {
    None = 0,
    /// `process_vm_readv` only.
    Read = 1,
    /// `process_vm_readv` and `process_vm_writev`.
    ReadWrite = 2,
}

/// Establishes a channel (`Shared::establish`) and decides its single-copy
/// state: the set-up every user of a channel goes through.  Calibration runs
/// over the channel itself, so it sits above it rather than inside it.
pub fn establish(boot: &dyn Bootstrap, me: usize, p: usize, label: &str) -> Result<Shared, String> {
    let mut shared = Shared::establish(boot, me, p, label)?;
    shared.single = setup(&mut shared, boot, label);
    shared.single_used = false;
    Ok(shared)
}

/// Decides a freshly established channel's single-copy state (collective
/// among the channel's processes, through `boot` and the channel itself).
pub fn setup(sh: &mut Shared, boot: &dyn Bootstrap, label: &str) -> Option<SingleCopy> {
    let params = sh.params;
    if params.single_copy == SingleCopyMode::None {
        debug!("{label}: single copy off (coll_sharm_single_copy none)");
        return None;
    }
    let probed = probe(sh);
    let mine = match probed {
        Err(e) => {
            let right = (sh.me + 1) % sh.p;
            info!("{label}: CMA probe of rank {right} failed: {e}");
            Access::None
        }
        Ok(access) => access,
    };
    let access = match boot.agree_min(mine as i32) {
        Some(2) => Access::ReadWrite,
        Some(1) => Access::Read,
        _ => Access::None,
    };
    if access == Access::None {
        info!("{label}: single copy (cma) not permitted between all its processes (ptrace scope, container, users); large messages use the queues");
        return None;
    }
    if access == Access::Read {
        info!("{label}: CMA writes (process_vm_writev) not permitted between all its processes; Gather(v) roots read the blocks instead");
    }
    let push = access == Access::ReadWrite && params.single_copy_push;
    let mut single = setup_threshold(sh, boot, label, push)?;
    single.push_permitted = push;
    match single.push_min_size {
        usize::MAX if push => {
            debug!("{label}: Gather(v) blocks through the queues: the senders' writes were slower at every calibrated size")
        }
        usize::MAX => debug!("{label}: Gather(v) blocks by single copy read by the root"),
        from => debug!(
            "{label}: Gather(v) blocks from {from} bytes written by their senders (cma writes)"
        ),
    }
    // Kept when nothing goes by single copy by the floors as long as the
    // calls' trials may still pick it (`trials`: under `auto`, with a core
    // per process).
    (single.used() || sh.trials_apply()).then_some(single)
}

/// The single-copy thresholds of a channel whose processes may use CMA
/// (collective): the parameter's, or calibrated (`usize::MAX` when the
/// queues won everywhere); with `push` (CMA writes permitted and wanted),
/// also from which size Gather(v) senders write their blocks.  None when
/// the set-up failed.
fn setup_threshold(
    sh: &mut Shared,
    boot: &dyn Bootstrap,
    label: &str,
    push: bool,
) -> Option<SingleCopy> {
    let params = sh.params;
    // Agreed at set-up: all decide Scatter's path alike.
    let crowded = sh.crowded();
    let min = params.single_copy_min_size;
    if params.single_copy == SingleCopyMode::Cma || !params.calibrate {
        debug!("{label}: single copy (cma) from {min} bytes");
        return Some(SingleCopy::new(min).with_push(push.then_some(min)));
    }
    let found = calibrated(sh, boot, label, push, crowded)?;
    let threshold = found.one_way;
    let from = usize::try_from(threshold).map_or(usize::MAX, |t| min.max(t));
    let exchange_from = usize::try_from(found.exchange).map_or(usize::MAX, |t| min.max(t));
    let streams = match threshold {
        u64::MAX => "off: the queues were faster at every calibrated size".to_owned(),
        _ => format!("from {from} bytes (calibrated)"),
    };
    let exchanges = match found.exchange {
        u64::MAX => "exchanges off".to_owned(),
        _ => format!("exchanges from {exchange_from} bytes"),
    };
    if crowded {
        let floor = if sh.crowding >= Crowding::Oversubscribed {
            min.min(OVERSUBSCRIBED_SCATTER_FLOOR)
        } else {
            min
        };
        // Crowded, the exchanges keep the one-way verdict: the pairwise
        // exchange timing runs two processes on two cores, and with more
        // processes than cores forcing single copy on exchanges was as
        // often slower as faster (np=4 on 2 cores, Allgather 16 MiB 22.1
        // -> 24.7 ms, Alltoall 4 MiB 5.3 -> 6.4 ms, Alltoall 16 MiB 27.7
        // -> 24.0 ms).
        // Gather's writes too keep the floor: on a crowded node a sender
        // writes whenever it runs, where a hand-off through the queues
        // needs both ends running (np=4 on 2 cores, Gather 1/4/16 MiB
        // 395/1763/9723 us read by the root, 233/1026/6340 written).
        debug!(
            "{label}: single copy (cma) {streams}; Scatter blocks from {floor} bytes (crowded node: {:?}); exchanges as other streams",
            sh.crowding
        );
        return Some(SingleCopy::crowded(from, floor).with_push(push.then_some(min)));
    }
    let push_from = push
        .then(|| usize::try_from(found.push).ok().map(|t| min.max(t)))
        .flatten();
    debug!("{label}: single copy (cma) {streams}; {exchanges} (calibrated)");
    if let Some(f) = push_from.filter(|&f| f < from) {
        debug!("{label}: Scatter(v) blocks from {f} bytes by single copy (the Gather timing's verdict)");
    }
    Some(
        SingleCopy::new(from)
            .with_exchanges(exchange_from)
            .with_push(push_from)
            .with_scatter(push_from),
    )
}

/// Every process pulls its right neighbour's probe word and writes it back
/// beside it (collective).  Returns what worked: our read of the right
/// neighbour, and (`ReadWrite`) both our write into it and the left
/// neighbour's write into us, checked by the one written to.
fn probe(sh: &mut Shared) -> Result<Access, String> {
    let (me, p) = (sh.me, sh.p);
    let word = PROBE_MAGIC ^ cma::pid() as u64;
    // [the word, the echo our left neighbour writes]: on the heap and
    // atomic, so that the loads below read memory that the kernel wrote on
    // the neighbour's behalf, not a value the compiler kept.
    let probe = Box::new([AtomicU64::new(word), AtomicU64::new(0)]);
    let op = sh.next_op();
    // Our left neighbour reads and writes us; the offer's Release store
    // publishes the word.
    let pos = sh.offer(
        probe.as_ptr().cast(),
        16,
        op,
        Readers::One((me + p - 1) % p),
    );
    let from = (me + 1) % p;
    let pulled = sh.accept(from, op).and_then(|(remote, frag)| {
        let mut got = 0u64;
        // SAFETY: `got` is ours and holds 8 bytes.
        let read = unsafe { remote.pull(0, (&mut got as *mut u64).cast(), 8) };
        // Write back what we read (only a correct read is worth echoing).
        let wrote = match read {
            Ok(()) if got == PROBE_MAGIC ^ remote.pid as u64 => {
                // SAFETY: `got` holds 8 bytes; the neighbour offered 16, the
                // second 8 for this echo, and reads them only after our
                // acknowledgement below.
                unsafe { remote.push(8, (&got as *const u64).cast(), 8) }.is_ok()
            }
            _ => false,
        };
        sh.done(from, frag);
        read?;
        if got != PROBE_MAGIC ^ remote.pid as u64 {
            return Err(format!("read {got:#x}, not the probe word"));
        }
        Ok(wrote)
    });
    // Settling is an Acquire load of the neighbour's acknowledgement, which
    // it stored (Release) after its write returned: the echo is visible.
    sh.settle(pos);
    let written = probe[1].load(Ordering::Relaxed) == word;
    match pulled {
        Err(e) => Err(e),
        Ok(true) if written => Ok(Access::ReadWrite),
        Ok(_) => Ok(Access::Read),
    }
}

/// rank 0's thresholds: cached, or measured now by ranks 0 and 1 (Gather's
/// writes only with `push`, which every process knows alike: agreed access,
/// rank 0's parameters).  On a `crowded` node (agreed) only the one-way
/// streams are timed: `setup_threshold` does not use the exchange and
/// Gather verdicts there, so they read as never.  (A node's crowding is
/// the job's, the same for every channel of a process; a later channel
/// that found otherwise would move exchanges and Gather blocks through
/// the queues, which is always correct.)
fn calibrated(
    sh: &mut Shared,
    boot: &dyn Bootstrap,
    label: &str,
    push: bool,
    crowded: bool,
) -> Option<Thresholds> {
    // [known, thresholds]: whether rank 0 calibrated before, and its result.
    let mut cached = [0u8; 1 + ENCODED];
    if let (0, Some(t)) = (sh.me, CALIBRATED.get()) {
        cached[0] = 1;
        cached[1..].copy_from_slice(&t.encode());
    }
    if !boot.bcast_bytes(&mut cached) {
        return None;
    }
    let found = if cached[0] == 1 {
        Thresholds::decode(&cached[1..])
    } else {
        let first = sh.next_ops(CALIBRATION_OPS);
        let exchanges = first + ONE_WAY_OPS as u64;
        let gathers = exchanges + EXCHANGE_OPS as u64;
        // What else is timed besides the one-way streams (the same for
        // ranks 0 and 1: `push` and `crowded` are agreed).
        let (time_exchanges_too, time_gathers_too) = (!crowded, push && !crowded);
        // Exchanges and Gathers use both buffers at both ranks, in full.
        let full = time_exchanges_too || time_gathers_too;
        let mut result = [0u8; ENCODED];
        match sh.me {
            0 => {
                let mut buf = Buffers::new(1, if full { 2 } else { 0 });
                let one_way = time_as_writer(sh, &buf, first, label);
                let exchange = if time_exchanges_too {
                    time_exchanges(sh, &mut buf, exchanges, 1, label)
                } else {
                    u64::MAX
                };
                let push = if time_gathers_too {
                    time_gathers(sh, &mut buf, gathers, label)
                } else {
                    u64::MAX
                };
                result = Thresholds {
                    one_way,
                    exchange,
                    push,
                }
                .encode();
            }
            1 => {
                let mut buf = Buffers::new(full as usize, if full { 2 } else { 1 });
                time_as_reader(sh, &mut buf, first);
                if time_exchanges_too {
                    time_exchanges(sh, &mut buf, exchanges, 0, label);
                }
                if time_gathers_too {
                    time_gathers(sh, &mut buf, gathers, label);
                }
            }
            _ => {}
        }
        if !boot.bcast_bytes(&mut result) {
            return None;
        }
        Thresholds::decode(&result)
    };
    // Every process must use the thresholds rank 0 broadcast, never values
    // it cached itself: a process that led another channel's calibration
    // (a hierarchy group) holds that channel's result, and deciding by it
    // made processes of one communicator disagree on single copy (a hang,
    // seen at np=8 with virtual nodes of 2).  The first agreed value is
    // kept for channels this process will lead.
    let _ = CALIBRATED.set(found);
    Some(found)
}

/// How much faster than the queues single copy must have run in a timing
/// to be adopted at that size (a fraction of the queues' time).
///
/// Why a margin: the timings are single calls right after set-up, and the
/// queues gain more than single copy from the warm caches of an
/// application's loop.  np=2 exchanges of 1 MiB (2026-11-25 evening, 6
/// launches each, forced): Allgather / Alltoall / Allreduce 86 / 87 / 72 us
/// by the queues against 105 / 106 / 131 by single copy, while the set-up
/// timings put the two within 6 % of each other either way (single copy
/// ahead in 2 of 10 launches, which then ran those calls 20-80 % slower).
/// The wins that count were larger: 4 MiB exchanges 10-19 % in the same
/// timings (forced, Allgather 4 MiB 1079 -> 820 us), and on 2026-11-24
/// Gather's writes 45 % (1 MiB 107 -> 58 us).
const SINGLE_COPY_MARGIN: f64 = 0.10;

/// Whether a timing of single copy beat one of the queues by the margin.
fn single_copy_won(queues: Duration, single: Duration) -> bool {
    single.as_secs_f64() < queues.as_secs_f64() * (1.0 - SINGLE_COPY_MARGIN)
}

/// The smallest of `sizes` from which single copy (`best[i][1]`) beat the
/// queues (`best[i][0]`) by the margin at every larger size measured;
/// `u64::MAX`: none.
fn threshold_of(sizes: &[usize], best: &[[Duration; 2]]) -> u64 {
    let mut threshold = u64::MAX;
    for (i, &[queues, single]) in best.iter().enumerate().rev() {
        if !single_copy_won(queues, single) {
            break;
        }
        threshold = sizes[i] as u64;
    }
    threshold
}

/// The timings and the verdict as one line: "<size> KiB queues <t> us
/// cma <t> us, ...; single copy from <n> bytes" (or "never").
fn findings(sizes: &[usize], best: &[[Duration; 2]], threshold: u64) -> String {
    let verdict = match threshold {
        u64::MAX => "single copy never".to_owned(),
        t => format!("single copy from {t} bytes"),
    };
    format!("{}; {verdict}", table(sizes, best))
}

/// The timings as one line: "<size> KiB queues <t> us cma <t> us, ...".
fn table(sizes: &[usize], best: &[[Duration; 2]]) -> String {
    sizes
        .iter()
        .zip(best.iter())
        .map(|(s, [q, c])| {
            format!(
                "{} KiB queues {:.1} us cma {:.1} us",
                s >> 10,
                q.as_secs_f64() * 1e6,
                c.as_secs_f64() * 1e6
            )
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// Ranks 0 and 1 at once (`peer` is the other): each sends a block to the
/// other and receives the other's while copying a block of its own, as an
/// Allgather at np=2 does, through the queues (the reader trailing its
/// writes by the ring's depth) and by single copy (offer, own copy, pull,
/// settle).  Returns the threshold from rank 0's timings (rank 1's result
/// is not used).
///
/// Both paths copy as `coll::allgather::exchange` does (that layer sits
/// above this one, so its steps are repeated here): the call lands both
/// blocks (`Shared::land_call`), so where that streams, the peer's block
/// and our own land non-temporally; where it does not, our block goes to
/// its own place in the pass of its fills (`Shared::send_copying`).  Timed
/// with `memcpy` for the own block and ordinary landings, as before
/// 2026-11-26, the queues lost here at 4 MiB while the Allgather itself
/// moved 4 and 16 MiB faster through them (np=2, 2 alternated launches:
/// 1048 / 4685 us against 1124 / 5414 as calibrated, by single copy).
///
/// Why apart from the one-way timing: there the writer's copy into the
/// queue runs on a core that would otherwise idle, so two copies cost about
/// one; in an exchange both cores are busy, the queues cost each process
/// three copies against two by single copy, and which wins depends on the
/// state of the machine (np=2 Allgather 4 MiB: 383 us by the queues against
/// 533 for tuned's single copy on 2026-11-23; 922 against 659 forced single
/// copy on 2026-11-24).
fn time_exchanges(sh: &mut Shared, buf: &mut Buffers, first: u64, peer: usize, label: &str) -> u64 {
    let Buffers { src, all } = buf;
    // An Allgather's receive buffer: the two blocks side by side in rank
    // order, `bytes` apart.  Blocks a power of two apart share their cache
    // sets, and that costs: timed into separate vectors instead, the queues
    // moved 4 MiB in 600 us, where every Allgather took 915-980 (single
    // copy 450-520 against 650), and the verdict flipped between launches.
    let mut best = [[Duration::MAX; 2]; EXCHANGE_SIZES.len()];
    for (k, (bytes, single)) in rounds(&EXCHANGE_SIZES).enumerate() {
        let op = first + k as u64;
        let (own, dst) = {
            let (low, high) = all[..2 * bytes].split_at_mut(bytes);
            if sh.me < peer {
                (low, high)
            } else {
                (high, low)
            }
        };
        let started = Instant::now();
        let mut sink = Payload::Contiguous(dst.as_mut_ptr());
        let stores = sh.land_call(if single { bytes } else { 2 * bytes });
        let (own, src_at) = (own.as_mut_ptr(), src.as_ptr());
        // SAFETY: `own` and `src` are separate vectors of >= `bytes` bytes.
        let own_copy = || unsafe { copy::copy_local(own, src_at, bytes, stores) };
        if single {
            // In `allgather::exchange`'s order: offer, pull, own copy.
            let pos = sh.offer(src.as_ptr(), bytes, op, Readers::One(peer));
            if let Err(e) = sh.take(peer, op, &mut sink, bytes) {
                info!("CMA failed during calibration: {e}");
            }
            own_copy();
            sh.settle(pos);
        } else {
            let mut source = Payload::Contiguous(src.as_ptr() as *mut u8);
            let cut = sh.cut(bytes);
            let lag = cut.lag(sh.queues.layout().s, cut.count());
            // As `SelfCopy::hand_over`: a streamed own block is not handed
            // to the sending copy.
            let stream = stores.streams(bytes);
            for step in 0..cut.count() + lag {
                if step < cut.count() && stream {
                    sh.send(&mut source, cut, op, step, Readers::One(peer));
                } else if step < cut.count() {
                    // SAFETY: `src` and `own` hold `bytes` bytes each, apart.
                    unsafe { sh.send_copying(src_at, own, cut, op, step, Readers::One(peer)) };
                }
                if step + 1 == cut.count() && stream {
                    own_copy();
                }
                if let Some(i) = step.checked_sub(lag) {
                    sh.recv(peer, &mut sink, cut, op, i);
                }
            }
            sh.settle(cut.pos(op, cut.count() - 1));
        }
        keep_fastest(
            &mut best,
            &EXCHANGE_SIZES,
            (bytes, single),
            started.elapsed(),
        );
    }
    // The calibration's calls are not numbered by `next_op`, which would
    // forget the last one's landing.
    sh.land_call(0);
    let threshold = threshold_of(&EXCHANGE_SIZES, &best);
    if sh.me == 0 {
        debug!(
            "{label}: exchange calibration (ranks 0-1): {}",
            findings(&EXCHANGE_SIZES, &best, threshold)
        );
    }
    threshold
}

/// Ranks 0 (the root) and 1 (the sender) at once: a Gather of one block
/// each as `coll::gather` runs it at np=2, the root copying its own block
/// while the sender's arrives, through the queues or written by the sender
/// into the root's buffer (offer, own copy, outcome, settle).  Returns the
/// threshold from rank 0's timings (rank 1's call returns `u64::MAX`).
///
/// Why a timing of its own: the writes used to start at
/// `coll_sharm_single_copy_min_size` whatever the machine's state, after a
/// state in which they won from 256 KiB (np=2 Gather 1 MiB 107 -> 58 us,
/// queues against writes, 2026-11-24).  On 2026-11-25 (memcpy 4 MiB 48
/// GB/s instead of 15), 6 launches each: through the queues 256 KiB /
/// 1 MiB / 4 MiB took 13.0 / 45.9 / 442 us, written 37.6 / 82.0 / 389, and
/// when the host placed the cores far apart (line round trip ~310 ns)
/// 22 / 77 / 677 against 160 / 382 / 6271.
fn time_gathers(sh: &mut Shared, buf: &mut Buffers, first: u64, label: &str) -> u64 {
    // The root's receive buffer `all`: its own block, then the sender's.
    let Buffers { src, all } = buf;
    let mut best = [[Duration::MAX; 2]; SIZES.len()];
    for (k, (bytes, single)) in rounds(&SIZES).enumerate() {
        // The sender's stream or outcome at `op`, the root's offer at op + 1.
        let op = first + 2 * k as u64;
        let started = Instant::now();
        if sh.me == 0 {
            let (own, dst) = all[..2 * bytes].split_at_mut(bytes);
            // As `coll::gather` at the root: the call's landing decides
            // whether both blocks land non-temporally.
            let stores = sh.land_call(if single { bytes } else { 2 * bytes });
            let (own, src_at) = (own.as_mut_ptr(), src.as_ptr());
            // SAFETY: `own` and `src` are separate vectors of >= `bytes` bytes.
            let own_copy = || unsafe { copy::copy_local(own, src_at, bytes, stores) };
            if single {
                let pos = sh.offer(dst.as_ptr(), bytes, op + 1, Readers::One(1));
                own_copy();
                if !sh.outcome(1, Pos::new(op, 0)) {
                    info!("CMA write failed during calibration");
                }
                sh.settle(pos);
            } else {
                own_copy();
                let mut sink = Payload::Contiguous(dst.as_mut_ptr());
                let cut = sh.cut(bytes);
                for i in 0..cut.count() {
                    sh.recv(1, &mut sink, cut, op, i);
                }
            }
            keep_fastest(&mut best, &SIZES, (bytes, single), started.elapsed());
        } else {
            let mut source = Payload::Contiguous(src.as_ptr() as *mut u8);
            if single {
                let written = sh.give(0, op + 1, &mut source, bytes);
                if let Err(e) = &written {
                    info!("CMA failed during calibration: {e}");
                }
                sh.report(written.is_ok(), Pos::new(op, 0), 0);
            } else {
                sh.send_all(&mut source, sh.cut(bytes), op, Readers::One(0));
            }
        }
    }
    if sh.me != 0 {
        return u64::MAX;
    }
    sh.land_call(0);
    let threshold = threshold_of(&SIZES, &best);
    debug!(
        "{label}: Gather calibration (ranks 0-1, cma = written by the sender): {}",
        findings(&SIZES, &best, threshold)
    );
    threshold
}

/// The phases of the calibration, in order: (size, by single copy).
fn schedule() -> impl Iterator<Item = (usize, bool)> {
    let warm_up = [(SIZES[0], false), (SIZES[0], true)];
    warm_up.into_iter().chain(rounds(&SIZES))
}

/// `ROUNDS` rounds over `sizes`, each size by both paths: (size, by single
/// copy).  Which path goes first alternates, so neither always runs warmer.
fn rounds(sizes: &'static [usize]) -> impl Iterator<Item = (usize, bool)> {
    (0..ROUNDS).flat_map(move |round| {
        sizes
            .iter()
            .flat_map(move |&s| [(s, round % 2 == 1), (s, round % 2 == 0)])
    })
}

/// Keeps `took` as the time of (`bytes`, by single copy) in `best` (indexed
/// like `sizes`) if it is the fastest so far.
fn keep_fastest(
    best: &mut [[Duration; 2]],
    sizes: &[usize],
    (bytes, single): (usize, bool),
    took: Duration,
) {
    let i = sizes.iter().position(|&s| s == bytes).expect("a size");
    let b = &mut best[i][single as usize];
    *b = (*b).min(took);
}

/// Rank 0: sends every phase to rank 1 and times it until rank 1
/// acknowledged the last byte; returns the threshold.
fn time_as_writer(sh: &mut Shared, buf: &Buffers, first: u64, label: &str) -> u64 {
    let src = &buf.src;
    let mut best = [[Duration::MAX; 2]; SIZES.len()];
    for (k, (bytes, single)) in schedule().enumerate() {
        let op = first + k as u64;
        let started = Instant::now();
        if single {
            let pos = sh.offer(src.as_ptr(), bytes, op, Readers::One(1));
            sh.settle(pos);
        } else {
            let mut payload = Payload::Contiguous(src.as_ptr() as *mut u8);
            let cut = sh.cut(bytes);
            sh.send_all(&mut payload, cut, op, Readers::One(1));
            sh.settle(cut.pos(op, cut.count() - 1));
        }
        let took = started.elapsed();
        if k >= 2 {
            keep_fastest(&mut best, &SIZES, (bytes, single), took);
        }
    }
    let threshold = threshold_of(&SIZES, &best);
    debug!(
        "{label}: calibration (ranks 0-1): {}",
        findings(&SIZES, &best, threshold)
    );
    threshold
}

/// Rank 1: receives every phase of `time_as_writer`.
fn time_as_reader(sh: &mut Shared, buf: &mut Buffers, first: u64) {
    let dst = &mut buf.all;
    for (k, (bytes, single)) in schedule().enumerate() {
        let op = first + k as u64;
        let mut payload = Payload::Contiguous(dst.as_mut_ptr());
        if single {
            if let Err(e) = sh.take(0, op, &mut payload, bytes) {
                // Detection passed a moment ago; a failure now is reported
                // and the timing is worthless but harmless.
                info!("CMA failed during calibration: {e}");
            }
        } else {
            let cut = sh.cut(bytes);
            for i in 0..cut.count() {
                sh.recv(0, &mut payload, cut, op, i);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn us(n: u64) -> Duration {
        Duration::from_micros(n)
    }

    /// Single copy from the smallest size from which it won at every larger
    /// size; a loss at the largest size means never.
    #[test]
    fn threshold_is_where_single_copy_wins_from_on() {
        let sizes = [1, 2, 3];
        let best = |pairs: [(u64, u64); 3]| pairs.map(|(q, c)| [us(q), us(c)]);
        assert_eq!(threshold_of(&sizes, &best([(5, 4), (5, 4), (5, 4)])), 1);
        assert_eq!(threshold_of(&sizes, &best([(4, 5), (5, 4), (5, 4)])), 2);
        // A win below a loss does not count.
        assert_eq!(threshold_of(&sizes, &best([(5, 4), (4, 5), (5, 4)])), 3);
        assert_eq!(
            threshold_of(&sizes, &best([(5, 4), (5, 4), (4, 5)])),
            u64::MAX
        );
        // A tie is no win.
        assert_eq!(
            threshold_of(&sizes, &best([(5, 5), (5, 5), (5, 5)])),
            u64::MAX
        );
        // Nor is a lead within the margin (5 % here, 11 % at the top).
        assert_eq!(
            threshold_of(&sizes, &best([(100, 95), (100, 95), (100, 89)])),
            3
        );
    }

    #[test]
    fn thresholds_round_trip_and_findings_read() {
        let t = Thresholds {
            one_way: 1 << 20,
            exchange: u64::MAX,
            push: 4 << 20,
        };
        assert_eq!(Thresholds::decode(&t.encode()), t);
        let line = findings(&[256 << 10], &[[us(20), us(30)]], u64::MAX);
        assert_eq!(
            line,
            "256 KiB queues 20.0 us cma 30.0 us; single copy never"
        );
    }
}
