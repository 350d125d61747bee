//! Per-communicator state: whether sharm serves the communicator, its shared
//! segment (created lazily, at the first collective sharm serves), and the
//! per-call decision between serving a call and handing it to the component
//! below.  Every decision that changes what processes do together is taken on
//! values all processes share (message bytes, datatype, operation, agreed
//! parameters), so all processes always decide alike.

use std::sync::atomic::{AtomicU64, Ordering};

use tracing::{debug, info, warn};

use crate::hier::plan::{self as hier_plan, HierPlan};
use crate::ompi::ffi::{self, Comm, Module, RawParams};
use crate::ompi::params::{Algorithm, HierParams, HierarchyMode, Params};
use crate::ompi::payload::Payload;
use crate::ompi::stats::{self, Coll};
use crate::shm::layout::{Layout, CACHE_LINE};
use crate::shm::queue::{Pos, Queues, Readers, Writer};
use crate::shm::segment::{self, Segment, NAME_BYTES};
use crate::shm::tree;
use crate::shm::wait::Waiter;

/// Bytes of shared segments this process is attached to (for the budget).
static ATTACHED_BYTES: AtomicU64 = AtomicU64::new(0);

/// The collective exchanges a segment's creation needs, among the processes
/// that will share it: the component below sharm for a whole communicator,
/// point-to-point messages for a hierarchy's group.
pub trait Bootstrap {
    /// Every process gets index 0's bytes.
    fn bcast_bytes(&self, buf: &mut [u8]) -> bool;
    /// Every process learns the minimum of `value`.
    fn agree_min(&self, value: i32) -> Option<i32>;
}

/// Bootstrap of a whole communicator through the component below sharm.
pub struct PrevComponent {
    pub module: Module,
    pub comm: Comm,
}

impl Bootstrap for PrevComponent {
    fn bcast_bytes(&self, buf: &mut [u8]) -> bool {
        self.module.bcast_bytes(buf, 0, self.comm)
    }
    fn agree_min(&self, value: i32) -> Option<i32> {
        self.module.agree_min(value, self.comm)
    }
}

/// A cache-line aligned scratch buffer of the largest fragment (s·f bytes).
pub struct Scratch {
    ptr: *mut u8,
    layout: std::alloc::Layout,
}

impl Scratch {
    fn new(bytes: usize) -> Scratch {
        let layout = std::alloc::Layout::from_size_align(bytes.max(CACHE_LINE), CACHE_LINE)
            .expect("valid layout");
        // SAFETY: non-zero size.
        let ptr = unsafe { std::alloc::alloc(layout) };
        if ptr.is_null() {
            std::alloc::handle_alloc_error(layout);
        }
        Scratch { ptr, layout }
    }
    pub fn ptr(&self) -> *mut u8 {
        self.ptr
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        // SAFETY: allocated in `new` with this layout.
        unsafe { std::alloc::dealloc(self.ptr, self.layout) }
    }
}

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
    last_op: u64,
    last_barrier: u64,
    pub scratch: Scratch,
    /// Reusable list of tree children (actual ranks): those of `last_tree`
    /// unless an algorithm rewrote it (which must then clear `last_tree`).
    pub kids: Vec<usize>,
    /// The tree `kids` holds: (algorithm, root, parent).
    pub last_tree: Option<(Algorithm, usize, Option<usize>)>,
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
        let layout = Layout::new(p, params.queue_slots, params.fragment_size);

        // 2. Everybody checks the layout and its budget.
        let local = match &layout {
            Ok(l) => {
                let attached = ATTACHED_BYTES.load(Ordering::Relaxed);
                if attached + l.total as u64 > params.shared_memory_budget {
                    info!("{}: segment of {} bytes would exceed coll_sharm_shared_memory_budget={} ({attached} in use)", label, l.total, params.shared_memory_budget);
                    0
                } else {
                    1
                }
            }
            Err(_) => 0,
        };
        if boot.agree_min(local) != Some(1) {
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
        ATTACHED_BYTES.fetch_add(layout.total as u64, Ordering::Relaxed);
        let waiter = Waiter {
            progress: ffi::progress,
            yield_early: ffi::oversubscribed(),
        };
        debug!(
            "{}: segment of {} bytes ready (p={} s={} f={}, yielding waits: {})",
            label, layout.total, layout.p, layout.s, layout.f, waiter.yield_early
        );
        // SAFETY: the mapping is page aligned, zero-filled by the kernel, and
        // lives as long as `segment`, which `Shared` owns alongside `queues`.
        let queues = unsafe { Queues::new(segment.base(), layout) };
        Ok(Shared {
            segment,
            queues,
            writer: Writer::new(me, layout.s, p),
            waiter,
            me,
            p,
            params,
            last_op: 0,
            last_barrier: 0,
            scratch: Scratch::new(layout.f * layout.s),
            kids: Vec::with_capacity(p),
            last_tree: None,
        })
    }

    /// Number of the next collective phase; identical on every process.
    pub fn next_op(&mut self) -> u64 {
        self.last_op += 1;
        self.last_op
    }

    /// Numbers of `n` consecutive phases (one per round of a multi-round
    /// operation); returns the first.
    pub fn next_ops(&mut self, n: usize) -> u64 {
        let first = self.last_op + 1;
        self.last_op += n as u64;
        first
    }

    /// The tree algorithm for `coll`: the configured one, or for `auto` the
    /// flat one up to `linear_up_to` processes and the k-nomial tree beyond.
    /// Oversubscribed processes always get the flat one under `auto`: every
    /// tree level would add a wait for a process that may not be running.
    pub fn tree_algorithm(&self, coll: Coll, linear_up_to: usize) -> Algorithm {
        match self.params.algorithm(coll) {
            Algorithm::Auto if self.p <= linear_up_to || self.waiter.yield_early => {
                Algorithm::Linear
            }
            Algorithm::Auto => Algorithm::Knomial,
            other => other,
        }
    }

    /// Places this process in the tree of `alg` (linear: the flat tree of
    /// radix p) rooted at `root`: returns its parent (None at the root) and
    /// leaves its children, as communicator ranks, in `self.kids`.
    pub fn tree_links(&mut self, alg: Algorithm, root: usize) -> Option<usize> {
        // Consecutive calls mostly use the same tree: keep the last one.
        if let Some((a, r, parent)) = self.last_tree {
            if a == alg && r == root {
                return parent;
            }
        }
        let radix = if alg == Algorithm::Linear {
            self.p
        } else {
            self.params.radix
        };
        let (me, p) = (self.me, self.p);
        let rel = (me + p - root) % p;
        tree::children(rel, radix, p, &mut self.kids);
        for k in self.kids.iter_mut() {
            *k = (*k + root) % p;
        }
        let parent = tree::parent(rel, radix).map(|v| (v + root) % p);
        self.last_tree = Some((alg, root, parent));
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
    /// the stream knows its size, so all cut it alike).  A stream that fills
    /// the whole queue moves in fragments of s/2 slots: a quarter as many
    /// handshakes per byte, still double-buffered.
    pub fn cut(&self, bytes: usize) -> Cut {
        let (s, f) = (self.queues.layout().s, self.fragment());
        let width = if bytes >= s * f && s.is_multiple_of(2) && (s / 2) * f <= u32::MAX as usize {
            s / 2
        } else {
            1
        };
        Cut {
            bytes,
            size: width * f,
            width,
        }
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
        unsafe { payload.read(i * cut.size, dst, len) };
        self.writer.publish(&self.queues, pos, len, readers);
    }

    /// Receives position (`op`, `i`) of `from`'s queue into fragment `i` of
    /// the stream `payload`.
    pub fn recv(&mut self, from: usize, payload: &mut Payload, cut: Cut, op: u64, i: usize) {
        let frag = self.queues.receive(&self.waiter, from, cut.pos(op, i));
        // SAFETY: the fragment stays valid until released.
        unsafe { payload.write(i * cut.size, frag.data, frag.len) };
        self.queues.release(self.me, from, frag);
    }
}

/// How a stream is cut into fragments: `size` bytes each (the last one
/// shorter), each spanning `width` queue slots.
#[derive(Clone, Copy, Debug)]
pub struct Cut {
    pub bytes: usize,
    pub size: usize,
    pub width: usize,
}

impl Cut {
    pub fn count(&self) -> usize {
        self.bytes.div_ceil(self.size)
    }
    pub fn len(&self, i: usize) -> usize {
        self.size.min(self.bytes - i * self.size)
    }
    pub fn pos(&self, op: u64, i: usize) -> Pos {
        Pos::wide(op, i, self.width)
    }
    /// How many positions a reader may trail a writer of the same queue
    /// without a cycle of waits: one less than the fragments the queue holds.
    pub fn lag_limit(&self, slots: usize) -> usize {
        slots / self.width - 1
    }
}

impl Drop for Shared {
    fn drop(&mut self) {
        ATTACHED_BYTES.fetch_sub(self.segment.layout().total as u64, Ordering::Relaxed);
    }
}

enum Status {
    NotYet,
    Ready(Box<Shared>),
    Unavailable,
}

/// sharm's state for one communicator.
pub struct CommState {
    pub rank: usize,
    pub size: usize,
    /// All processes run on this node (the flat shared-memory path needs it).
    all_local: bool,
    label: String,
    status: Status,
    hier: HierStatus,
}

/// The hierarchical collectives' state of a communicator.
enum HierStatus {
    /// Not wanted (see `coll_sharm_hierarchy`).
    Off,
    /// Wanted; groups not built yet.
    NotYet(HierParams),
    Ready(Box<HierPlan>),
    Unavailable,
}

/// Why a call is handed to the next component.
pub type Refusal = String;

/// Result of deciding about one call.
pub enum Decision<'a> {
    /// Nothing to move (count 0 or empty datatype): done.
    Nothing,
    Serve(&'a mut Shared),
    Fallback(Refusal),
}

impl CommState {
    /// comm_query: serve intra-communicators of 2+ processes, all on this
    /// node (flat shared memory) or, with the hierarchy on, anywhere.
    pub fn query(comm: Comm) -> Option<(CommState, i32)> {
        let raw = ffi::params();
        let params = Params::from_raw(raw);
        crate::ompi::log::init(params.verbose);
        let label = comm.label();
        let hier_params = HierParams::current();
        let all_local = comm.all_local();
        let why = if params.priority < 0 {
            Some("priority is negative".to_owned())
        } else if comm.is_inter() {
            Some("it is an intercommunicator".to_owned())
        } else if comm.size() < 2 {
            Some(format!("it has {} process", comm.size()))
        } else if !all_local && hier_params.mode == HierarchyMode::Off {
            Some(
                "its processes are not all on this node (and coll_sharm_hierarchy is off)"
                    .to_owned(),
            )
        } else {
            None
        };
        if let Some(why) = why {
            debug!("not serving communicator {label}: {why}");
            return None;
        }
        if raw.fragment_size < 64 || raw.queue_slots < 2 || raw.knomial_radix < 2 {
            warn!(
                "fragment_size={} queue_slots={} knomial_radix={} out of range; using {} / {} / {}",
                raw.fragment_size,
                raw.queue_slots,
                raw.knomial_radix,
                params.fragment_size,
                params.queue_slots,
                params.radix
            );
        }
        debug!("serving communicator {label} ({} processes)", comm.size());
        let spans_nodes = !all_local
            || hier_params
                .virtual_node_size
                .is_some_and(|k| comm.size() > k);
        let hier = match hier_params.mode {
            HierarchyMode::On => HierStatus::NotYet(hier_params),
            HierarchyMode::Auto if spans_nodes => HierStatus::NotYet(hier_params),
            _ => HierStatus::Off,
        };
        Some((
            CommState {
                rank: comm.rank(),
                size: comm.size(),
                all_local,
                label,
                status: Status::NotYet,
                hier,
            },
            params.priority,
        ))
    }

    pub fn label(&self) -> &str {
        &self.label
    }

    /// The hierarchy of this communicator when its Bcast/Reduce/Allreduce
    /// go hierarchical (built at the first call; collective).
    pub fn hierarchy(&mut self, module: Module, comm: Comm) -> Option<&mut HierPlan> {
        if let HierStatus::NotYet(params) = &self.hier {
            self.hier = match hier_plan::build(
                comm,
                module,
                self.rank,
                self.size,
                params.clone(),
                &self.label,
            ) {
                Ok(plan) => HierStatus::Ready(Box::new(plan)),
                Err(why) => {
                    warn!(
                        "communicator {}: no hierarchical collectives ({why})",
                        self.label
                    );
                    HierStatus::Unavailable
                }
            };
        }
        match &mut self.hier {
            HierStatus::Ready(plan) => Some(plan),
            _ => None,
        }
    }

    /// Whether the flat shared-memory algorithms can serve this communicator.
    pub fn all_local(&self) -> bool {
        self.all_local
    }

    /// Decides whether to serve a call moving `bytes` bytes in all (`None`:
    /// no size every process knows, as in Gatherv: then the call is always
    /// served); `refusal` gives an operation-specific reason to refuse.
    pub fn decide(
        &mut self,
        module: Module,
        comm: Comm,
        coll: Coll,
        bytes: Option<u64>,
        refusal: impl FnOnce(&Params, usize) -> Option<Refusal>,
    ) -> Decision<'_> {
        if bytes == Some(0) {
            stats::served(coll);
            return Decision::Nothing;
        }
        if !self.all_local {
            return self.refuse(coll, "its processes are not all on this node".to_owned());
        }
        if matches!(self.status, Status::NotYet) {
            self.status = match Shared::establish(
                &PrevComponent { module, comm },
                self.rank,
                self.size,
                &self.label,
            ) {
                Ok(shared) => Status::Ready(Box::new(shared)),
                Err(why) => {
                    warn!("communicator {}: no shared-memory segment ({why}); its collectives go to the next component", self.label);
                    Status::Unavailable
                }
            };
        }
        let params = match &self.status {
            Status::Ready(shared) => shared.params,
            _ => {
                return self.refuse(
                    coll,
                    "the communicator has no shared-memory segment".to_owned(),
                )
            }
        };
        if let (Some(max), Some(bytes)) = (params.max_message_size, bytes) {
            if bytes > max {
                return self.refuse(
                    coll,
                    format!("{bytes} bytes exceed coll_sharm_max_message_size={max}"),
                );
            }
        }
        let f = match &self.status {
            Status::Ready(shared) => shared.fragment(),
            _ => unreachable!("checked above"),
        };
        if let Some(why) = refusal(&params, f) {
            return self.refuse(coll, why);
        }
        stats::served(coll);
        match &mut self.status {
            Status::Ready(shared) => Decision::Serve(shared),
            _ => unreachable!("checked above"),
        }
    }

    fn refuse(&self, coll: Coll, why: Refusal) -> Decision<'static> {
        info!(
            "{}: {} handed to the next component: {why}",
            self.label,
            coll.name()
        );
        stats::fallback(coll);
        Decision::Fallback(why)
    }
}
