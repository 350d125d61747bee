//! sharm's state for one communicator: whether it is served, its flat
//! shared-memory channel (created lazily, at the first call sharm serves),
//! its hierarchy (built lazily, at the first hierarchical call), and the one
//! decision, taken for every call, between serving it and handing it to the
//! component below.

use tracing::{debug, info, warn};

use crate::hier::plan::{self as hier_plan, HierPlan};
use crate::kernels::isa::{self, CacheCounted};
use crate::ompi::call::{Args, Coll};
use crate::ompi::ffi::{self, Comm, Module};
use crate::ompi::params::{HierAllgather, HierParams, HierarchyMode, Params};
use crate::ompi::stats;
use crate::shm::bootstrap::PrevComponent;
use crate::shm::calibrate;
use crate::shm::channel::Shared;

use super::express::Express;

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
    /// This process's parameters when the communicator was created (the
    /// flat channel adopts rank 0's; the hierarchy checks all agree).
    params: Params,
    status: Status,
    hier: HierStatus,
    /// Which calls skip the route (`express`), decided with the channel.
    express: Express,
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

/// Where one call goes: the single decision every call passes through.
pub enum Route<'a> {
    /// Nothing to move (count 0 or empty datatype): done.
    Done,
    /// The flat shared-memory collectives over the communicator's channel.
    Flat(&'a mut Shared),
    /// Up and down the communicator's hierarchy of groups.
    Hierarchical(&'a mut HierPlan),
    /// The component below sharm, unchanged.
    Fallback,
}

/// Why a call cannot be served with fragments of `f` bytes (Ok: it can).
/// Depends only on values every process shares.
///
/// Inlined, and the route carries no value of it: a result returned through
/// memory was written field by field and read back in 16-byte words, which
/// the store buffer cannot forward (about 20 cycles on every call, seen with
/// `perf annotate`).
#[inline(always)]
fn admit(args: &Args, f: usize) -> Result<(), Refusal> {
    let Args::Reduction(r) = args else {
        return Ok(());
    };
    r.layout
        .map_err(|why| why.to_string())
        .and_then(|layout| layout.fits(f))
        .map_err(|why| format!("{why} ({} with {})", r.dtype.name(), r.op.name()))
}

/// Which calls the hierarchy serves.
#[derive(Clone, Copy, PartialEq, Eq)]
enum HierKind {
    /// Barrier, Bcast, Allgather, commutative Reduce/Allreduce.
    Always,
    /// Non-commutative Reduce/Allreduce: when every group carries a
    /// contiguous range of ranks (`HierPlan::rank_ordered`), so groups can be
    /// combined in MPI's canonical order.
    IfRankOrdered,
    /// Everything else: the flat path on one node, the next component across.
    Never,
}

/// `spans_nodes`: the processes are not all on this node.  Barrier and
/// Allgather (and Allgatherv with equal counts) take the hierarchy only then (or, for Allgather, when an
/// algorithm is asked for by name): on one node (virtual nodes, hierarchy
/// `on`) the flat shared-memory path does the same job in fewer hops.
fn hierarchical_kind(args: &Args, spans_nodes: bool, allgather_named: bool) -> HierKind {
    match args {
        Args::Bcast { .. } => HierKind::Always,
        Args::Barrier if spans_nodes => HierKind::Always,
        // Allgatherv only with equal counts (an O(p) look at the counts,
        // decided alike everywhere: see RootSide::equal_blocks); other
        // counts are handed over across nodes.
        Args::Movement(m)
            if (m.coll == Coll::Allgather
                || (m.coll == Coll::Allgatherv && m.recv_side.equal_blocks()))
                && (spans_nodes || allgather_named) =>
        {
            HierKind::Always
        }
        Args::Reduction(r) if matches!(r.coll, Coll::Reduce | Coll::Allreduce) => {
            if r.commutative {
                HierKind::Always
            } else {
                HierKind::IfRankOrdered
            }
        }
        _ => HierKind::Never,
    }
}

/// From which size copies into receive buffers use non-temporal stores
/// (`kernels::isa::stream_threshold`): the parameter's, or the one the
/// last-level cache gives, which every process says once at verbose 10.
/// Set at every query (a store), in case the parameter was written
/// through MPI_T since; the cache is read once (CPUID traps to the
/// hypervisor in a guest).
fn set_landing_threshold(params: &Params) {
    static CACHE: std::sync::OnceLock<CacheCounted> = std::sync::OnceLock::new();
    let cache = CACHE.get_or_init(CacheCounted::detect);
    let from = params
        .nontemporal_landing_min_size
        .unwrap_or_else(|| cache.stream_threshold());
    isa::set_stream_threshold(from);
    static SAID: std::sync::Once = std::sync::Once::new();
    SAID.call_once(|| {
        let mib = |b: usize| b as f64 / (1 << 20) as f64;
        let why = match (params.nontemporal_landing_min_size, cache.reported) {
            (Some(_), _) => "coll_sharm_nontemporal_landing_min_size".to_owned(),
            (None, None) => "auto: CPUID describes no last-level cache".to_owned(),
            (None, Some(reported)) if cache.guest && cache.bytes() != Some(reported) => format!(
                "auto: a third of the last-level cache, CPUID's {:.0} MiB counted as {:.0} MiB under a hypervisor",
                mib(reported),
                mib(cache.bytes().unwrap_or(reported))
            ),
            (None, Some(reported)) => {
                format!("auto: a third of the {:.0} MiB last-level cache", mib(reported))
            }
        };
        if from == usize::MAX {
            debug!("copies into receive buffers never use non-temporal stores ({why})");
        } else {
            debug!(
                "copies into receive buffers use non-temporal stores from {from} bytes, and every copy of a call that lands {} bytes in all ({why})",
                crate::kernels::copy::call_streams_from()
            );
        }
        if isa::string_fills() {
            debug!("two-process streams fill the pair buffer's ring with rep movsb (an Intel CPU with ERMS)");
        } else {
            debug!("two-process streams fill the pair buffer's ring with vector copies (not an Intel CPU with ERMS)");
        }
    });
}

impl CommState {
    /// comm_query: serve intra-communicators of 2+ processes, all on this
    /// node (flat shared memory) or, with the hierarchy on, anywhere.
    pub fn query(comm: Comm) -> Option<(CommState, i32)> {
        let raw = ffi::params();
        // The log first: decoding the parameters may warn (once per process).
        crate::ompi::log::init(raw.verbose);
        let params = Params::from_raw(raw);
        let label = comm.label();
        let hier_params = HierParams::current();
        let all_local = comm.all_local();
        // The glue's parameter tables against Rust's decoding, once per process.
        static TABLES: std::sync::OnceLock<Result<(), String>> = std::sync::OnceLock::new();
        let tables = TABLES.get_or_init(|| {
            let checked = crate::ompi::params::check_tables();
            if let Err(e) = &checked {
                tracing::error!("sharm disabled: its parameter tables disagree with the glue: {e}");
            }
            checked
        });
        let why = if params.priority < 0 {
            Some("priority is negative".to_owned())
        } else if tables.is_err() {
            Some("the parameter tables disagree (see the error above)".to_owned())
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
        // The hierarchy's parameters are checked even where no communicator
        // spans nodes (`hier_plan::check_parameters`, once per process).
        if hier_params.mode != HierarchyMode::Off {
            hier_plan::check_parameters(comm.rank(), &hier_params);
        }
        if raw.fragment_size < 64
            || matches!(raw.queue_slots, i32::MIN..=-1 | 1)
            || raw.knomial_radix < 2
        {
            // The same for every communicator: said once per process (a job
            // of 2,000 communicators said it 2,000 times).
            static GEOMETRY_SAID: std::sync::Once = std::sync::Once::new();
            GEOMETRY_SAID.call_once(|| {
                let (f, s, k) = (raw.fragment_size, raw.queue_slots, raw.knomial_radix);
                let (using_f, using_k) = (params.fragment_size, params.radix);
                let using_s = match params.queue_slots {
                    0 => "auto".to_owned(),
                    s => s.to_string(),
                };
                warn!("fragment_size={f} queue_slots={s} knomial_radix={k} out of range; using {using_f} / {using_s} / {using_k}")
            });
        }
        set_landing_threshold(&params);
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
                params,
                status: Status::NotYet,
                hier,
                express: Express::default(),
            },
            params.priority,
        ))
    }

    /// The hierarchy of this communicator when its Bcast/Reduce/Allreduce
    /// go hierarchical (built at the first call; collective).
    fn hierarchy(&mut self, module: Module, comm: Comm) -> Option<&mut HierPlan> {
        if let HierStatus::NotYet(params) = &self.hier {
            self.hier = match hier_plan::build(
                comm,
                module,
                self.rank,
                self.size,
                params.clone(),
                &self.params,
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

    /// Decides where `args` goes.  Every input is a value all processes
    /// share (sizes, datatype, operation, agreed parameters), so all processes
    /// take the same route; the size limit, the element-size rule and the
    /// verbose reasons apply alike to the flat and the hierarchical path.
    pub fn route(&mut self, module: Module, comm: Comm, args: &Args) -> Route<'_> {
        let coll = args.coll();
        let bytes = args.shared_bytes(self.rank, self.size);
        if bytes == Some(0) {
            stats::served(coll);
            return Route::Done;
        }
        // Asked only when a hierarchy is wanted: the flat path's small calls
        // should not pay for it.
        let kind = if self.hier_wanted() {
            hierarchical_kind(args, !self.all_local, self.allgather_named())
        } else {
            HierKind::Never
        };
        if kind != HierKind::Never {
            // Every process's parameters are in the hierarchy's digest, so
            // its own limits are everybody's.
            let admitted = self
                .limits(&self.params, bytes)
                .and_then(|_| admit(args, self.params.fragment_size));
            if let Err(why) = admitted {
                return self.refuse(coll, why);
            }
            let usable = match self.hierarchy(module, comm) {
                Some(plan) => kind == HierKind::Always || plan.rank_ordered,
                None => false,
            };
            if usable {
                stats::served(coll);
                stats::hierarchical(coll);
                let HierStatus::Ready(plan) = &mut self.hier else {
                    unreachable!("checked above")
                };
                return Route::Hierarchical(plan);
            }
        }
        if !self.all_local {
            return self.refuse(
                coll,
                "its processes are not all on this node and the hierarchy does not serve it"
                    .to_owned(),
            );
        }
        if matches!(self.status, Status::NotYet) {
            self.status = match calibrate::establish(
                &PrevComponent { module, comm },
                self.rank,
                self.size,
                &self.label,
            ) {
                Ok(shared) => {
                    self.express = Express::decide(&shared, self.hier_wanted(), &self.label);
                    Status::Ready(Box::new(shared))
                }
                Err(why) => {
                    warn!("communicator {}: no shared-memory segment ({why}); its collectives go to the next component", self.label);
                    Status::Unavailable
                }
            };
        }
        let (params, f) = match &self.status {
            Status::Ready(shared) => (shared.params, shared.fragment()),
            _ => {
                return self.refuse(
                    coll,
                    "the communicator has no shared-memory segment".to_owned(),
                )
            }
        };
        // The channel's parameters are rank 0's, adopted by all.
        if let Err(why) = self.limits(&params, bytes).and_then(|_| admit(args, f)) {
            return self.refuse(coll, why);
        }
        stats::served(coll);
        match &mut self.status {
            Status::Ready(shared) => Route::Flat(shared),
            _ => unreachable!("checked above"),
        }
    }

    /// The size limit (`coll_sharm_max_message_size`).
    fn limits(&self, params: &Params, bytes: Option<u64>) -> Result<(), Refusal> {
        match (params.max_message_size, bytes) {
            (Some(max), Some(bytes)) if bytes > max => Err(format!(
                "{bytes} bytes exceed coll_sharm_max_message_size={max}"
            )),
            _ => Ok(()),
        }
    }

    /// Whether `coll_sharm_hierarchy_allgather_algorithm` names an algorithm.
    fn allgather_named(&self) -> bool {
        let params = match &self.hier {
            HierStatus::NotYet(p) => p,
            HierStatus::Ready(plan) => &plan.params,
            _ => return false,
        };
        params.allgather != HierAllgather::Auto
    }

    /// The channel and its express lane, when the lane is open.
    #[inline]
    pub fn express(&mut self) -> Option<(&mut Shared, &mut Express)> {
        match &mut self.status {
            Status::Ready(shared) if self.express.open() => Some((shared, &mut self.express)),
            _ => None,
        }
    }

    fn hier_wanted(&self) -> bool {
        matches!(self.hier, HierStatus::NotYet(_) | HierStatus::Ready(_))
    }

    fn refuse(&self, coll: Coll, why: Refusal) -> Route<'static> {
        info!(
            "{}: {} handed to the next component: {why}",
            self.label,
            coll.name()
        );
        stats::fallback(coll);
        Route::Fallback
    }
}
