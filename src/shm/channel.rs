//! The channel the collectives work with: a mapped segment shared by the
//! processes of a communicator (or of a hierarchy group), its queues, this
//! process's writer state and the agreed parameters; created collectively by
//! `Shared::establish`.  Streams are cut into fragments (`Cut`) and moved
//! through the queues by `send`/`recv`.
//!
//! Ownership: every field here is private to one process.  What is shared
//! between processes lives in the segment and is reached only through
//! `queues` (see `queue` for its memory ordering).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use tracing::{debug, info, trace, warn};

use crate::kernels::copy::{self, LandingStores};
use crate::ompi::call::Coll;
use crate::ompi::combine::CombinerMemo;
use crate::ompi::ffi::{self, Crowding, RawParams};
use crate::ompi::params::{Algorithm, Params};
use crate::ompi::payload::Payload;
use crate::ompi::rules::{RawRules, Ruled};
use crate::shm::bootstrap::Bootstrap;
use crate::shm::layout::{self, Layout};
use crate::shm::pair::Pair;
use crate::shm::queue::{Incoming, Placement, Pos, Queues, Readers, Writer};
use crate::shm::scratch::Scratch;
use crate::shm::segment::{self, Segment, NAME_BYTES};
use crate::shm::single_state::SingleCopy;
use crate::shm::stores::{Reads, Stores, REPORTS_KEPT, REPORTS_LOOKED_AT};
use crate::shm::tree;
use crate::shm::trials::{StreamPath, Trials};
use crate::shm::wait::Waiter;

/// Bytes of shared segments this process is attached to (for the budget).
pub(crate) static ATTACHED_BYTES: AtomicU64 = AtomicU64::new(0);

/// Everything a served collective works with.
pub struct Shared {
    /// Keeps the mapping alive; `queues` points into it.
    segment: Segment,
    pub queues: Queues,
    pub writer: Writer,
    pub waiter: Waiter,
    pub me: usize,
    pub p: usize,
    /// The parameters every process agreed on (rank 0's).
    pub params: Params,
    /// The least crowding any process of the channel sees, agreed at
    /// set-up (`crowded()`: asked to yield, or more processes than cores;
    /// `Oversubscribed`, the latter, also lowers Scatter's single-copy floor,
    /// `calibrate::setup`, and keeps the queues' placement consecutive).
    /// Algorithm choices read this, never the
    /// local view (`waiter.yield_early`, which only shapes this process's
    /// waits): a process asked to yield while its peers were not must still
    /// pick what they pick.
    pub crowding: Crowding,
    /// Whether every stream and own block of the current call lands
    /// non-temporally, as an exchange (Allgather, Alltoall) or a gathering
    /// root decided from all it lands (`land_call`); false from each call's
    /// first operation number until then, and for every other call.
    streaming_call: bool,
    last_op: u64,
    last_barrier: u64,
    pub scratch: Scratch,
    /// The pair buffer's turns, on two processes (`shm::pair`).
    pub pair: Option<Pair>,
    /// Reusable list of tree children (actual ranks): those of `last_tree`
    /// unless an algorithm rewrote it (which must then clear `last_tree`).
    pub kids: Vec<usize>,
    /// The tree `kids` holds: (algorithm, root, radix, parent).
    pub last_tree: Option<(Algorithm, usize, usize, Option<usize>)>,
    /// Single copy (CMA) for large streams, when permitted and wanted
    /// (decided at set-up, alike on all processes: `calibrate::setup`).
    pub single: Option<SingleCopy>,
    /// Set when this process made or accepted an offer (single copy);
    /// `took_single` reads and clears it after each call, for the
    /// dispatcher's count.
    pub(super) single_used: bool,
    /// The path the current call's streams take when its size class is
    /// tried or decided (`trials`; set and cleared by the dispatcher around
    /// the call); None: the floors of `single` decide.
    pub call_path: Option<StreamPath>,
    /// The stores the current call lands with when its size class is tried
    /// or decided (`trials`; set and cleared as `call_path`); `BySize`:
    /// the size rules decide (`land_call`, `copy::streams`).
    pub call_landing: LandingStores,
    /// The size classes' trials of single copy against the queues.
    pub trials: Trials,
    /// The `coll_sharm_<op>_rules` every process agreed on (rank 0's).
    pub rules: RawRules,
    /// Emptied lists of peer streams from earlier calls (`peer_streams`).
    spares: Vec<Vec<PeerStream>>,
    /// The last predefined reduction's combiner (see `CombinerMemo`).
    pub combiners: CombinerMemo,
    /// How this process writes large fragments into its queue (its own
    /// choice, see `stores`).
    stores: Stores,
    /// How our copies of others' fragments ran (reported to their writers).
    reads: Reads,
    /// What `choose` set for the call in progress: k-nomial radix and the
    /// pipeline fragment (in slots; None: the built-in cut).
    tuning: (usize, Option<usize>),
}

impl Shared {
    /// Creates and maps a segment shared by the `p` processes that `boot`
    /// reaches (collective among them; `me` is this process's index), adopting
    /// rank 0's parameters so that all processes choose the same algorithms.
    pub fn establish(
        boot: &dyn Bootstrap,
        me: usize,
        p: usize,
        label: &str,
    ) -> Result<Shared, String> {
        // 1. Agree on parameters: rank 0's win.
        let mut raw = ffi::params();
        // Rank 0 resolves an automatic slot count before the exchange: cores
        // of one node may differ (hybrid CPUs), and the geometry must not.
        if me == 0 && raw.queue_slots == 0 {
            let s = layout::auto_slots(
                p,
                raw.fragment_size.max(64) as usize,
                l2_cache_bytes(),
                raw.shared_memory_budget,
            );
            raw.queue_slots = s as i32;
        }
        // SAFETY: RawParams is plain old data; viewed as bytes for the exchange.
        let bytes = unsafe {
            std::slice::from_raw_parts_mut(
                &mut raw as *mut RawParams as *mut u8,
                std::mem::size_of::<RawParams>(),
            )
        };
        if !boot.bcast_bytes(bytes) {
            return Err("parameter exchange failed".into());
        }
        let params = Params::from_raw(raw);
        // The rules too; only rank 0 compiles (and reports mistakes).
        let mut rules = if me == 0 {
            RawRules::current()
        } else {
            RawRules::default()
        };
        // SAFETY: RawRules is plain old data; viewed as bytes for the exchange.
        let rule_bytes = unsafe {
            std::slice::from_raw_parts_mut(
                &mut rules as *mut RawRules as *mut u8,
                std::mem::size_of::<RawRules>(),
            )
        };
        if !boot.bcast_bytes(rule_bytes) {
            return Err("rule exchange failed".into());
        }
        let layout = Layout::new(p, params.queue_slots, params.fragment_size)
            .and_then(|l| l.with_pair(params.pair_buffer_size));

        // 2. Everybody checks the layout and its budget, in one agreement
        // with how crowded it sees the node: 4·(layout and budget fine) +
        // crowding level (0-2).  The minimum is at least 4 exactly when
        // every process can go on, and its level is then the least crowding
        // any process sees.
        let fits = match &layout {
            Ok(l) => {
                let attached = ATTACHED_BYTES.load(Ordering::Relaxed);
                if attached + l.total as u64 > params.shared_memory_budget {
                    info!("{}: segment of {} bytes would exceed coll_sharm_shared_memory_budget={} ({attached} in use)", label, l.total, params.shared_memory_budget);
                    false
                } else {
                    true
                }
            }
            Err(_) => false,
        };
        let seen = ffi::crowding();
        let yield_early = seen >= Crowding::Yielding;
        let agreed = boot.agree_min(4 * fits as i32 + seen as i32);
        let crowding = Crowding::from_level(agreed.map_or(0, |v| v - 4));
        if agreed.is_none_or(|v| v < 4) {
            return Err(match layout {
                Err(e) => format!("invalid geometry: {e}"),
                Ok(l) => format!("a process cannot afford a segment of {} bytes (coll_sharm_shared_memory_budget)", l.total),
            });
        }
        let layout = layout.expect("agreed valid");

        // 3. Rank 0 creates; the name travels through the previous component.
        let mut name_buf = [0u8; NAME_BYTES];
        let mut created = None;
        if me == 0 {
            match Segment::create(layout) {
                Ok((seg, name)) => {
                    name_buf[..name.len()].copy_from_slice(name.as_bytes());
                    created = Some((seg, name));
                }
                Err(e) => warn!(
                    "{}: cannot create a shared segment of {} bytes: {e}",
                    label, layout.total
                ),
            }
        }
        if !boot.bcast_bytes(&mut name_buf) {
            if let Some((_, name)) = &created {
                segment::unlink(name);
            }
            return Err("name exchange failed".into());
        }
        let len = name_buf.iter().position(|&b| b == 0).unwrap_or(NAME_BYTES);
        if len == 0 {
            return Err("rank 0 could not create the segment".into());
        }
        let name = String::from_utf8_lossy(&name_buf[..len]).into_owned();

        // 4. Everybody maps it and places its own queue; then all agree.
        let mapped = match created {
            Some((seg, _)) => Ok(seg),
            None => Segment::open(&name, layout),
        }
        .and_then(|seg| seg.place_queue(&name, me).map(|_| seg));
        if let Err(e) = &mapped {
            warn!("{}: cannot attach segment {name}: {e}", label);
        }
        let all = boot.agree_min(mapped.is_ok() as i32);
        // 5. Everybody has opened it (or failed): the name can go.
        if me == 0 {
            segment::unlink(&name);
        }
        if all != Some(1) {
            return Err("a process could not attach the segment".into());
        }
        let segment = mapped.expect("agreed mapped");
        // Every queue is placed (the agreement above): now fault it all in.
        if !segment.prefault() {
            debug!("{label}: the segment's pages fault in on first use (no MADV_POPULATE_WRITE)");
        }
        ATTACHED_BYTES.fetch_add(layout.total as u64, Ordering::Relaxed);
        let waiter = Waiter {
            progress: ffi::progress,
            yield_early,
        };
        debug!(
            "{}: segment of {} bytes ready (p={} s={} f={}, yielding waits: {}, crowded: {} ({crowding:?}), queue stores from {} bytes: {:?})",
            label,
            layout.total,
            layout.p,
            layout.s,
            layout.f,
            waiter.yield_early,
            crowding.crowded(),
            params.nontemporal_min_size,
            params.nontemporal,
        );
        // Spread operations over the ring, except where processes outnumber
        // cores (measured both ways: `queue`, "Where an operation starts").
        // `crowding` is agreed, so every process places alike.
        let placement = if crowding >= Crowding::Oversubscribed {
            Placement::Consecutive
        } else {
            Placement::Spread
        };
        // SAFETY: the mapping is page aligned, zero-filled by the kernel, and
        // lives as long as `segment`, which `Shared` owns alongside `queues`.
        // Every process passes the same placement (above).
        let queues = unsafe { Queues::new(segment.base(), layout, placement) };
        let stores = Stores::new(
            me,
            params.nontemporal,
            params.nontemporal_min_size,
            crowding.crowded(),
            params.nontemporal_far_latency_ns,
        );
        // SAFETY: `segment` maps `layout.total` bytes and moves into the
        // channel beside the pair's end of it.
        let pair = unsafe { Pair::new(segment.base(), &layout) };
        let shared = Shared {
            segment,
            queues,
            // Stamps only for readers that heed them (`Reads`).
            writer: Writer::new(me, layout.s, p, stores.stamp_from()),
            waiter,
            me,
            p,
            streaming_call: false,
            last_op: 0,
            last_barrier: 0,
            scratch: Scratch::new(layout.f * layout.s),
            pair,
            kids: Vec::with_capacity(p),
            last_tree: None,
            single: None,
            single_used: false,
            call_path: None,
            call_landing: LandingStores::BySize,
            trials: Trials::new(params.single_copy_trials, params.single_copy_retry_after),
            combiners: CombinerMemo::default(),
            spares: Vec::new(),
            tuning: (params.radix, None),
            stores,
            reads: Reads::new(params.nontemporal, params.nontemporal_far_latency_ns, p),
            rules,
            params,
            crowding,
        };
        Ok(shared)
    }

    /// Says that this process lands `bytes` in receive buffers by its own
    /// copies over the current call (its streams through the queues and
    /// its own block), after the call's operation numbers were taken;
    /// returns the stores the call's copies then use (`landing`): all
    /// non-temporal when the call lands enough (`copy::call_streams`),
    /// unless its size class learned otherwise (`call_landing`).  Only with
    /// a core per process: the measurements behind the size rule were made
    /// there.
    ///
    /// Why not the blocks that go by single copy: the kernel copies them
    /// with its own stores, and beside its copies the own block's
    /// non-temporal stores cost.  np=2, Gather 4 MiB by single copy, each
    /// block counted (8 MiB landed, so the root's own block streamed): the
    /// trials timed 866 and 1253 us against 674 and 752 without, and then
    /// took the queues (2026-11-30, verbose 10, two launches each).
    pub fn land_call(&mut self, bytes: usize) -> LandingStores {
        let stream = self.call_landing == LandingStores::BySize
            && !self.crowded()
            && copy::call_streams(bytes);
        self.streaming_call = stream;
        if stream && !CALL_STREAMS_SAID.swap(true, Ordering::Relaxed) {
            trace!(
                "a call lands {bytes} bytes here: its streams and own block land non-temporally"
            );
        }
        self.landing()
    }

    /// The stores the current call's copies into receive buffers use: its
    /// size class's choice (`call_landing`), else every copy non-temporal
    /// once `land_call` said so, else by each copy's size.
    pub fn landing(&self) -> LandingStores {
        match self.call_landing {
            LandingStores::BySize if self.streaming_call => LandingStores::Stream,
            chosen => chosen,
        }
    }

    /// Whether this process made or accepted a single-copy offer since
    /// the last time this was asked: the call that ends now counts for
    /// MPI_T `coll_sharm_<op>_single_copy`.
    pub fn took_single(&mut self) -> bool {
        std::mem::take(&mut self.single_used)
    }

    /// Whether the pair buffer (if any) moved data since the last time
    /// this was asked: the call that ends now counts for MPI_T
    /// `coll_sharm_<op>_pair_buffer` (`Pair::take_used`).
    pub fn took_pair(&mut self) -> bool {
        self.pair.as_mut().is_some_and(|pair| pair.take_used())
    }

    /// Number of the next collective phase; identical on every process.
    pub fn next_op(&mut self) -> u64 {
        self.streaming_call = false;
        self.last_op += 1;
        self.stores.new_call();
        self.last_op
    }

    /// How many operation numbers apart the `rounds` rounds of a call
    /// should be, each round one operation, for every round to have a room
    /// of its own in each queue: as many places as the ring holds fragments
    /// of the widest kind ([`WIDE_FRAGMENT`]) for each round.  Under
    /// `Consecutive` (a crowded node) operation op+1 starts one place after
    /// op, on the slots op's later fragments take, so rounds one number
    /// apart overlap from their second fragment on; spaced so, a process
    /// whose blocks take up to that many fragments can hold all of them
    /// published at once (`coll::alltoall::publishes_first`).  1 under
    /// `Spread`, whose starts are scattered anyway, and where the ring holds
    /// no more.  The same on every process: it follows from the layout and
    /// the agreed placement alone.
    pub fn round_spacing(&self, rounds: usize) -> u64 {
        let s = self.queues.layout().s;
        if self.queues.placement() != Placement::Consecutive || rounds == 0 {
            return 1;
        }
        let widest = stream_width(WIDE_FRAGMENT, s, self.fragment());
        ((s / widest) / rounds).max(1) as u64
    }

    /// Numbers of `n` consecutive phases (one per round of a multi-round
    /// operation); returns the first.
    pub fn next_ops(&mut self, n: usize) -> u64 {
        self.streaming_call = false;
        let first = self.last_op + 1;
        self.last_op += n as u64;
        self.stores.new_call();
        first
    }

    /// The algorithm of one call of `coll` moving `bytes` bytes (the size
    /// every process knows alike; None: there is none, e.g. a v-variant):
    /// the forced `coll_sharm_<op>_algorithm`, else the first matching
    /// `coll_sharm_<op>_rules` entry, else the built-in rules
    /// (`ompi::builtin_rules`), else `Auto` (the caller's own heuristics).
    /// A user's entry whose algorithm is `auto` keeps its options and takes
    /// the algorithm from the built-in rules.  Also sets the call's radix
    /// and pipeline fragment (a rule's options, else the parameters), which
    /// `tree_links` and `cut` use until the next `choose`; every served
    /// operation calls it first.
    pub fn choose(&mut self, coll: Coll, bytes: Option<usize>) -> Algorithm {
        self.untuned();
        let forced = self.params.algorithm(coll);
        if forced != Algorithm::Auto {
            return forced;
        }
        let Some(bytes) = bytes else {
            return Algorithm::Auto;
        };
        let built_in = || RawRules::built_in().lookup(coll, self.p, bytes as u64);
        let (rule, origin) = match self.rules.lookup(coll, self.p, bytes as u64) {
            Some(user) if user.algorithm != Algorithm::Auto => (user, ""),
            Some(user) => match built_in() {
                Some(b) => (
                    Ruled {
                        algorithm: b.algorithm,
                        ..user
                    },
                    " (algorithm from the built-in rules)",
                ),
                None => (user, ""),
            },
            None => match built_in() {
                Some(b) => (b, " built into sharm"),
                None => return Algorithm::Auto,
            },
        };
        let (s, f) = (self.queues.layout().s, self.fragment());
        let width = rule.frag.map(|b| fragment_width(b, s, f));
        self.tuning = (rule.radix.unwrap_or(self.params.radix), width);
        trace!(
            "{}: {bytes} bytes on {} processes: rule {}.{} of coll_sharm_{}_rules{origin}: {:?}, radix {}, fragment {}",
            coll.name(),
            self.p,
            rule.block,
            rule.entry,
            RawRules::name(coll).unwrap_or("?"),
            rule.algorithm,
            self.tuning.0,
            width.map_or("built-in".to_string(), |w| format!("{} bytes", w * f)),
        );
        rule.algorithm
    }

    /// Whether a rule (`coll_sharm_<coll>_rules`, or the built-in ones)
    /// speaks for a call of `coll` of some size from 1 to `most` bytes on
    /// this channel's processes: such calls take `choose`'s way (the
    /// express lane asks, `dispatch::express`).
    pub fn ruled_up_to(&self, coll: Coll, most: usize) -> bool {
        self.ruled(coll, 1, most as u64)
    }

    /// Whether a user or built-in rule speaks for some call of `coll` of
    /// `lo` to `hi` bytes at this process count.
    pub fn ruled(&self, coll: Coll, lo: u64, hi: u64) -> bool {
        self.rules.covers(coll, self.p, lo, hi) || RawRules::built_in().covers(coll, self.p, lo, hi)
    }

    /// Sets the radix and fragment width of a call no rule speaks for (the
    /// last call's would otherwise stay for `cut` and `tree_links`).
    #[inline]
    pub fn untuned(&mut self) {
        self.tuning = (self.params.radix, None);
    }

    /// Says, at verbose >= 100, which algorithm a call finally runs.
    pub fn ran(&self, coll: Coll, alg: Algorithm) {
        trace!("{} on {} processes runs {alg:?}", coll.name(), self.p);
    }

    /// Every process of the channel runs crowded (see `crowding`).
    pub fn crowded(&self) -> bool {
        self.crowding.crowded()
    }

    /// Resolves `auto` for the tree algorithms: the flat one up to
    /// `linear_up_to` processes and the k-nomial tree beyond.
    /// Crowded processes always get the flat one under `auto`: every tree
    /// level would add a wait for a process that may not be running.
    pub fn tree_algorithm(&self, alg: Algorithm, linear_up_to: usize) -> Algorithm {
        match alg {
            Algorithm::Auto if self.p <= linear_up_to || self.crowded() => Algorithm::Linear,
            Algorithm::Auto => Algorithm::Knomial,
            other => other,
        }
    }

    /// Places this process in the tree of `alg` (linear: the flat tree of
    /// radix p) rooted at `root`: returns its parent (None at the root) and
    /// leaves its children, as communicator ranks, in `self.kids`.
    pub fn tree_links(&mut self, alg: Algorithm, root: usize) -> Option<usize> {
        let radix = if alg == Algorithm::Linear {
            self.p
        } else {
            self.tuning.0
        };
        // Consecutive calls mostly use the same tree: keep the last one.
        if let Some((a, r, k, parent)) = self.last_tree {
            if a == alg && r == root && k == radix {
                return parent;
            }
        }
        let (me, p) = (self.me, self.p);
        let rel = (me + p - root) % p;
        tree::children(rel, radix, p, &mut self.kids);
        for k in self.kids.iter_mut() {
            *k = (*k + root) % p;
        }
        let parent = tree::parent(rel, radix).map(|v| (v + root) % p);
        self.last_tree = Some((alg, root, radix, parent));
        parent
    }

    /// Number of the next barrier; identical on every process.
    pub fn next_barrier(&mut self) -> u64 {
        self.last_barrier += 1;
        self.last_barrier
    }

    pub fn fragment(&self) -> usize {
        self.queues.fragment_bytes()
    }

    /// How to cut a stream of `bytes` bytes (every process with a part in
    /// the stream knows its size, so all cut it alike).  A stream of at
    /// least two slots moves in fragments of up to [`WIDE_FRAGMENT`] bytes
    /// (whole slots, a divisor of s, at most s/2 of them: a stream of up to
    /// 32 KiB in one), and the rest of the queue keeps further fragments in
    /// flight.  16-48 KiB streams in one or two fragments instead of 8 KiB
    /// ones, measured in one launch against the other on two communicators
    /// taking turns (2026-11-26, 5 launches, medians of the launches' median
    /// ratios): np=2 Bcast 32 KiB 0.81x the time, Allgather and Gather 32 KiB
    /// 0.92x, Reduce, Allreduce and Bcast 16/48 KiB 0.95-0.97x, Alltoall,
    /// Scatter and Allgather 16 KiB 0.98-1.01x; np=8 on 2 cores 0.40-0.89x
    /// (Bcast, Reduce, Gather, Allgather, Alltoall 32 KiB); np=4 on 2 cores
    /// Bcast 32 KiB 0.54x, Reduce 0.38x, Allgather 0.79x, Alltoall 0.73x,
    /// Allreduce 0.92x, Bcast 48 KiB and Scatter the same, and Gather 32 KiB
    /// 1.27x (the root takes three senders' whole blocks in turn instead of
    /// a fragment of each).  Measured on the
    /// development VM (two threads on two cores copying through a ring of
    /// slots): a 1 MiB stream reaches 47 GB/s with two 32 KiB hand-offs in
    /// flight and 52-55 GB/s with eight, because the writer then refills
    /// slots the reader left well before instead of waiting in lock-step
    /// for each acknowledgement (32 KiB fragments were 5-7 % faster than
    /// 16 KiB ones from 1 MiB: half the handshakes).  A rule's `frag=` (see
    /// `choose`) replaces this choice for the call.
    pub fn cut(&self, bytes: usize) -> Cut {
        let (s, f) = (self.queues.layout().s, self.fragment());
        let width = self.tuning.1.unwrap_or_else(|| stream_width(bytes, s, f));
        Cut::new(bytes, width, s, f)
    }

    /// `cut` with no rule's fragment size (checks of the express lane).
    pub fn cut_untuned(&self, bytes: usize) -> Cut {
        let (s, f) = (self.queues.layout().s, self.fragment());
        Cut::new(bytes, stream_width(bytes, s, f), s, f)
    }

    /// Publishes the `len` bytes at `src`, one fragment of a stream of
    /// `stream_bytes` bytes (`fill`), as position `pos` of our queue for
    /// `readers`, and returns the slot: it stays ours, unchanged, until we
    /// reserve it again.
    ///
    /// # Safety
    /// `src` readable for `len` bytes, which a fragment of `pos` holds, and
    /// not within our queue.
    pub unsafe fn send_bytes(
        &mut self,
        src: *const u8,
        len: usize,
        stream_bytes: usize,
        pos: Pos,
        readers: Readers<'_>,
    ) -> *mut u8 {
        let dst = self.writer.reserve(&self.queues, &self.waiter, pos, len);
        // SAFETY: `dst` is our reserved slot of >= len bytes; the rest is
        // forwarded.
        unsafe { self.fill(dst, src, len, stream_bytes) };
        self.writer.publish(&self.queues, pos, len, readers);
        dst
    }

    /// Publishes fragment `i` of the stream `payload` as position (`op`, `i`)
    /// of our queue.
    pub fn send(
        &mut self,
        payload: &mut Payload,
        cut: Cut,
        op: u64,
        i: usize,
        readers: Readers<'_>,
    ) {
        let len = cut.len(i);
        let pos = cut.pos(op, i);
        let dst = self.writer.reserve(&self.queues, &self.waiter, pos, len);
        // SAFETY: `dst` is our reserved slot of >= len bytes.
        unsafe { self.fill_from(payload, cut.bytes, i * cut.size, dst, len) };
        self.writer.publish(&self.queues, pos, len, readers);
    }

    /// Publishes every fragment of the stream `payload` (`send` of each in
    /// turn), for a writer with nothing to do between them.
    pub fn send_all(&mut self, payload: &mut Payload, cut: Cut, op: u64, readers: Readers<'_>) {
        for i in 0..cut.count() {
            self.send(payload, cut, op, i, readers);
        }
    }

    /// `send` of fragment `i` of the contiguous stream at `base`, whose
    /// bytes also go to the same offsets at `also` in the same pass
    /// (`Stores::fill`): a sender's own block in Allgather, bound both for
    /// its queue and for its place in its receive buffer.
    ///
    /// Why, and what it saved: `coll::allgather::exchange`.
    ///
    /// # Safety
    /// `base` readable and `also` writable for `cut.bytes` bytes, not
    /// overlapping.
    pub unsafe fn send_copying(
        &mut self,
        base: *const u8,
        also: *mut u8,
        cut: Cut,
        op: u64,
        i: usize,
        readers: Readers<'_>,
    ) {
        let (len, offset) = (cut.len(i), i * cut.size);
        let pos = cut.pos(op, i);
        let dst = self.writer.reserve(&self.queues, &self.waiter, pos, len);
        // SAFETY: `dst` is our reserved slot of >= len bytes; the caller's
        // ranges hold the fragment at `offset`.
        unsafe {
            self.fill_also(
                dst,
                Some(also.add(offset)),
                base.add(offset),
                len,
                cut.bytes,
            )
        };
        self.writer.publish(&self.queues, pos, len, readers);
    }

    /// Copies `len` bytes from `src` into our reserved slot `dst`, one
    /// fragment of a stream of `stream_bytes` bytes: with ordinary or
    /// non-temporal stores, as `stores` decides.
    ///
    /// # Safety
    /// `dst` is writable and `src` readable for `len` bytes, not overlapping.
    #[inline]
    pub unsafe fn fill(&self, dst: *mut u8, src: *const u8, len: usize, stream_bytes: usize) {
        // A stream too short for non-temporal stores goes straight to the
        // copy: small fills are on the latency path, and the store policy's
        // bookkeeping cost an 8 B-1 KiB Allreduce 1-4 % (np=2, paired).
        if !self.stores.eligible(stream_bytes) {
            // SAFETY: forwarded contract.
            return unsafe { copy::copy(dst, src, len) };
        }
        // SAFETY: forwarded contract.
        unsafe { self.fill_also(dst, None, src, len, stream_bytes) }
    }

    /// `fill` that also copies the bytes to `also` (`Stores::fill`).
    ///
    /// # Safety
    /// As `fill`, with `also` (if any) writable for `len` bytes and
    /// overlapping neither.
    unsafe fn fill_also(
        &self,
        dst: *mut u8,
        also: Option<*mut u8>,
        src: *const u8,
        len: usize,
        stream_bytes: usize,
    ) {
        // A window of readers per call, moving on with every operation
        // (worked out only when asked: small fills are on the latency path).
        let readers_far = || {
            let recent = self.writer.next_wseq().saturating_sub(REPORTS_KEPT);
            let first = (self.last_op as usize).wrapping_mul(REPORTS_LOOKED_AT) % self.p;
            self.queues
                .readers_far(self.me, recent, first, REPORTS_LOOKED_AT)
        };
        // What the reservation of this slot may have timed (`reserve`).
        self.stores.heard_ack(self.writer.take_ack_latency());
        // SAFETY: forwarded contract.
        unsafe {
            self.stores
                .fill(dst, also, src, len, stream_bytes, readers_far)
        };
    }

    /// `fill` from bytes `[offset, offset + len)` of the stream `payload`
    /// (`stream_bytes` long); a packed stream is packed straight into the
    /// slot, as before.
    ///
    /// # Safety
    /// `dst` writable for `len` bytes; the stream holds them.
    pub unsafe fn fill_from(
        &self,
        payload: &mut Payload,
        stream_bytes: usize,
        offset: usize,
        dst: *mut u8,
        len: usize,
    ) {
        match payload {
            // SAFETY: a contiguous stream holds `offset + len` bytes.
            Payload::Contiguous(base) => unsafe {
                self.fill(dst, base.add(offset), len, stream_bytes)
            },
            // SAFETY: forwarded contract.
            _ => unsafe { payload.read(offset, dst, len) },
        }
    }

    /// An empty list for a call's peer streams, with the room of an earlier
    /// call's list: a small Gather, Allgather or Alltoall then allocates
    /// nothing (two allocations cost about a tenth of an 8-byte call).
    /// Hand it back with `recycle`; a list that is not handed back is only
    /// an allocation lost for the next call.
    pub fn peer_streams(&mut self) -> Vec<PeerStream> {
        self.spares.pop().unwrap_or_default()
    }

    /// Takes back a list from `peer_streams`, emptied now (its payloads,
    /// convertors included, are dropped here).
    pub fn recycle(&mut self, mut list: Vec<PeerStream>) {
        list.clear();
        self.spares.push(list);
    }

    /// Receives position (`op`, `i`) of `from`'s queue into fragment `i` of
    /// the stream `payload`.
    pub fn recv(&mut self, from: usize, payload: &mut Payload, cut: Cut, op: u64, i: usize) {
        let (pos, len) = (cut.pos(op, i), cut.len(i));
        self.recv_at(from, payload, cut.bytes, i * cut.size, pos, len);
    }

    /// Receives position `pos` of `from`'s queue, `len` bytes, at `offset`
    /// of the stream `payload` (`bytes` long), and releases it.
    pub fn recv_at(
        &mut self,
        from: usize,
        payload: &mut Payload,
        bytes: usize,
        offset: usize,
        pos: Pos,
        len: usize,
    ) {
        let frag = self.queues.receive_expecting(&self.waiter, from, pos, len);
        // SAFETY: the fragment stays valid until released.
        unsafe { self.land_from(from, payload, bytes, offset, frag) };
        self.queues.release(self.me, from, frag);
    }

    /// [`land`] of fragment `frag` of `from`'s queue at `offset` of the
    /// stream `payload` (`bytes` long); a header that came while we waited
    /// tells `from` whether its core is far from ours (`heard`).
    ///
    /// # Safety
    /// As `land`; `frag` is not yet released.
    pub unsafe fn land_from(
        &self,
        from: usize,
        payload: &mut Payload,
        bytes: usize,
        offset: usize,
        frag: Incoming,
    ) {
        let stream = self.landing().streams(bytes);
        // SAFETY: forwarded contract.
        unsafe { land(payload, stream, offset, frag.data, frag.len) };
        self.heard(from, &frag);
    }

    /// Notes how long `frag`'s header took to reach us from `from`, if
    /// that was measured, and reports to `from` when it says something new
    /// about its core's distance (`Reads::heard`).
    #[inline]
    pub fn heard(&self, from: usize, frag: &Incoming) {
        if frag.latency_ns != 0 {
            self.heard_late(from, frag.latency_ns, frag.wseq());
        }
    }

    /// `heard` of a measured header: off the path of small calls, whose
    /// fragments carry no stamp.
    #[cold]
    fn heard_late(&self, from: usize, ns: u32, wseq: u64) {
        if let Some(at) = self.reads.heard(from, ns, wseq) {
            self.queues.report_far(from, self.me, at);
        }
    }
}

/// Whether this process said (at verbose 100) that a call landed
/// non-temporally; once per process is enough for the tests.
static CALL_STREAMS_SAID: AtomicBool = AtomicBool::new(false);

/// Stores `len` bytes from `src` at offset `offset` of the stream `payload`:
/// a contiguous destination with non-temporal stores when `stream` (the
/// call's `Shared::landing` for a stream of its size), anything else as
/// `Payload::write`.
///
/// # Safety
/// As `Payload::write`.
pub unsafe fn land(payload: &mut Payload, stream: bool, offset: usize, src: *const u8, len: usize) {
    match payload {
        // SAFETY: a contiguous destination holds the whole stream.
        Payload::Contiguous(base) if stream => unsafe {
            copy::land_streaming(base.add(offset), src, len)
        },
        // SAFETY: forwarded contract.
        _ => unsafe { payload.write(offset, src, len) },
    }
}

/// One core's L2 cache in bytes, as the C library reports it (glibc reads
/// CPUID); 1 MiB when it does not know (0 or an error).
pub fn l2_cache_bytes() -> usize {
    // SAFETY: sysconf has no preconditions.
    let bytes = unsafe { libc::sysconf(libc::_SC_LEVEL2_CACHE_SIZE) };
    if bytes > 0 {
        bytes as usize
    } else {
        1 << 20
    }
}

/// The fragment large streams aim at (see `Shared::cut`): small enough that
/// a hand-off is still in the writer's cache when the reader takes it, large
/// enough that the handshake (two cache-line transfers) costs a few per cent
/// of its copy.  (16 KiB measured better below 512 KiB between two threads,
/// but not in the collectives.)
const WIDE_FRAGMENT: usize = 32 << 10;

/// Slots per fragment for a wished fragment of `bytes`: a divisor of s (the
/// queue counts positions in groups of `width` slots) of at most s/2 (a
/// stream must stay double-buffered), nearest to `bytes` from below, and at
/// least 1; the fragment length must fit the slot header's u32.
fn fragment_width(bytes: usize, s: usize, f: usize) -> usize {
    let wish = bytes.div_ceil(f).min(s / 2);
    (1..=wish)
        .rev()
        .find(|w| s.is_multiple_of(*w) && w * f <= u32::MAX as usize)
        .unwrap_or(1)
}

/// Slots per fragment of a stream of `bytes` (`Shared::cut`): streams of
/// two slots or more in fragments of up to [`WIDE_FRAGMENT`] bytes.
fn stream_width(bytes: usize, s: usize, f: usize) -> usize {
    if bytes >= 2 * f && f < WIDE_FRAGMENT {
        fragment_width(bytes.min(WIDE_FRAGMENT), s, f)
    } else {
        1
    }
}

/// Slots a stream of `bytes` takes in the ring: the smallest width·2^k that
/// divides s and holds the stream, at most s/2 (a larger stream wraps the
/// ring anyway).  Both ends of a stream know its size, so they agree.
fn stream_span(bytes: usize, width: usize, s: usize, f: usize) -> usize {
    let mut span = width;
    while span * f < bytes && span * 2 <= s / 2 && s.is_multiple_of(span * 2) {
        span *= 2;
    }
    span
}

/// One peer's stream in a call: the peer, this process's end of the stream
/// (where it is read from or written to), and how it is cut.
pub type PeerStream = (usize, Payload, Cut);

/// How a stream is cut into fragments: `size` bytes each (the last one
/// shorter), each spanning `width` queue slots; and the room of `span`
/// slots the whole stream takes, at whose multiples its operation starts
/// (`queue`, "Where an operation starts").
#[derive(Clone, Copy, Debug)]
pub struct Cut {
    pub bytes: usize,
    pub size: usize,
    pub width: usize,
    pub span: usize,
}

impl Cut {
    /// A stream of `bytes` in fragments of `width` slots of a ring of `s`
    /// slots of `f` bytes, spanning the room that holds it whole.
    fn new(bytes: usize, width: usize, s: usize, f: usize) -> Cut {
        Cut {
            bytes,
            size: width * f,
            width,
            span: stream_span(bytes, width, s, f),
        }
    }

    pub fn count(&self) -> usize {
        // Most streams are one fragment: no division for them.
        if self.bytes <= self.size {
            return usize::from(self.bytes > 0);
        }
        self.bytes.div_ceil(self.size)
    }
    pub fn len(&self, i: usize) -> usize {
        self.size.min(self.bytes - i * self.size)
    }
    pub fn pos(&self, op: u64, i: usize) -> Pos {
        Pos::spanning(op, i, self.width, self.span)
    }
    /// How many positions a reader may trail a writer of the same queue
    /// without a cycle of waits (one less than the fragments a queue of
    /// `slots` slots holds), in a call of `steps` positions: never more than
    /// those, which would only add idle steps to a small call.
    pub fn lag(&self, slots: usize, steps: usize) -> usize {
        (slots / self.width - 1).min(steps)
    }
}

impl Drop for Shared {
    fn drop(&mut self) {
        ATTACHED_BYTES.fetch_sub(self.segment.layout().total as u64, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::{fragment_width, stream_span, stream_width, Cut};

    #[test]
    fn streams_from_two_slots_move_in_fragments_of_up_to_32_kib() {
        let (s, f) = (256, 8192);
        assert_eq!(stream_width(8, s, f), 1);
        assert_eq!(stream_width(12 << 10, s, f), 1);
        assert_eq!(stream_width(16 << 10, s, f), 2);
        assert_eq!(stream_width(24 << 10, s, f), 2, "3 does not divide 256");
        assert_eq!(stream_width(32 << 10, s, f), 4);
        assert_eq!(stream_width(48 << 10, s, f), 4);
        assert_eq!(stream_width(16 << 20, s, f), 4);
        assert_eq!(
            stream_width(1 << 20, s, 32 << 10),
            1,
            "slots already as large"
        );
        assert_eq!(stream_width(1 << 20, 4, 4096), 2, "at most s/2");
    }

    #[test]
    fn a_stream_spans_the_power_of_two_room_that_holds_it() {
        let (s, f) = (256, 8192);
        assert_eq!(stream_span(8, 1, s, f), 1);
        assert_eq!(stream_span(8192, 1, s, f), 1);
        assert_eq!(stream_span(8193, 1, s, f), 2);
        assert_eq!(stream_span(24 << 10, 1, s, f), 4);
        assert_eq!(stream_span(64 << 10, 4, s, f), 8);
        assert_eq!(stream_span(256 << 10, 4, s, f), 32);
        assert_eq!(stream_span(1 << 20, 4, s, f), 128, "half the ring");
        assert_eq!(stream_span(16 << 20, 4, s, f), 128, "at most half the ring");
        // A width that is not a power of two: multiples of it dividing s.
        assert_eq!(stream_span(1 << 20, 3, 12, f), 6);
        assert_eq!(stream_span(1 << 20, 1, 2, f), 1);
        // Every cut's positions carry it.
        let cut = Cut::new(256 << 10, 4, s, f);
        assert_eq!((cut.count(), cut.pos(7, 3).span), (8, 32));
    }

    #[test]
    fn rule_fragments_divide_the_queue_and_stay_double_buffered() {
        let f = 8192;
        assert_eq!(fragment_width(100, 8, f), 1);
        assert_eq!(fragment_width(16384, 8, f), 2);
        assert_eq!(fragment_width(24576, 8, f), 2, "3 does not divide 8");
        assert_eq!(fragment_width(1 << 30, 8, f), 4, "at most s/2");
        assert_eq!(fragment_width(1 << 30, 12, f), 6);
        assert_eq!(fragment_width(40960, 12, f), 4);
        assert_eq!(fragment_width(1 << 30, 2, f), 1);
        assert_eq!(fragment_width(1 << 30, 3, f), 1);
    }
}
