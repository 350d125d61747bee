//! The flat C ABI of `ompi-glue/sharm_glue.h`, and small safe wrappers over it.
//!
//! This module is the only place in Rust that talks to Open MPI.  Handles are
//! opaque pointers owned by Open MPI; the wrappers below are `Copy` views that
//! are valid for the duration of the collective call they were created for.

use std::ffi::{c_char, c_void, CStr, CString};

/// Mirror of `struct sharm_params`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct RawParams {
    pub priority: i32,
    pub verbose: i32,
    pub fragment_size: i32,
    pub queue_slots: i32,
    pub knomial_radix: i32,
    pub algorithm: [i32; 16],
    pub max_message_size: u64,
    pub shared_memory_budget: u64,
    pub reduction_kernels: i32,
    pub single_copy_push: i32,
    pub single_copy: i32,
    pub calibrate: i32,
    pub single_copy_min_size: u64,
    pub nontemporal_min_size: u64,
    pub nontemporal: i32,
    pub nontemporal_far_latency: i32,
    pub single_copy_trials: i32,
    pub nontemporal_landing_min_size: u64,
    pub single_copy_retry_after: i32,
    pub nontemporal_landing_trials: i32,
    pub pair_buffer_size: u64,
}

/// Mirror of `struct sharm_hier_params`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct RawHierParams {
    pub mode: i32,
    pub virtual_node_size: i32,
    pub bcast_algorithm: i32,
    pub reduce_algorithm: i32,
    pub allreduce_algorithm: i32,
    pub levels: *const c_char,
    pub topology_file: *const c_char,
    pub dot_file: *const c_char,
    pub level_algorithms: *const c_char,
    pub top_allreduce_algorithm: i32,
    pub reserved: i32,
    pub lattice_dims: *const c_char,
    pub torus_dims: *const c_char,
    pub allgather_algorithm: i32,
    pub allgather_remap: i32,
    pub piece_size: u64,
}

/// Mirror of `struct sharm_dtype_info`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct DtypeInfo {
    pub size: u64,
    pub lb: i64,
    pub extent: i64,
    pub true_lb: i64,
    pub true_extent: i64,
    /// The flags are whole words (see the header: 32-bit flags written by
    /// the glue and read back in pairs stalled every call on store
    /// forwarding).
    pub predefined: i64,
    pub contiguous1: i64,
    pub contiguous_n: i64,
}

impl DtypeInfo {
    /// Whether `count` elements form one gap-free byte range: Open MPI's
    /// `ompi_datatype_is_contiguous_memory_layout`, answered from the two
    /// counts the glue asked about (its answer depends only on whether the
    /// count is 1).
    pub fn contiguous(&self, count: i32) -> bool {
        if count == 1 {
            self.contiguous1 != 0
        } else {
            self.contiguous_n != 0
        }
    }
}

/// Mirror of `struct sharm_call`: one collective call exactly as the
/// application made it (which fields matter depends on `coll`; see the header).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct Call {
    pub coll: i32,
    pub root: i32,
    pub sbuf: *const c_void,
    pub rbuf: *mut c_void,
    pub scount: i32,
    pub rcount: i32,
    pub sdtype: *mut c_void,
    pub rdtype: *mut c_void,
    pub scounts: *const i32,
    pub sdispls: *const i32,
    pub rcounts: *const i32,
    pub rdispls: *const i32,
    pub op: *mut c_void,
}

/// Mirror of `struct sharm_rs_entries`.
#[repr(C)]
pub struct Entries {
    pub comm_query: unsafe extern "C" fn(*mut c_void, *mut i32) -> *mut c_void,
    pub comm_free: unsafe extern "C" fn(*mut c_void),
    pub collective: unsafe extern "C" fn(*mut c_void, *mut c_void, *mut c_void, *const Call) -> i32,
    pub counter: unsafe extern "C" fn(i32) -> u64,
}

extern "C" {
    pub fn sharm_glue_component_init(storage: *mut c_void, size: usize, entries: *const Entries);
    fn sharm_glue_params(out: *mut RawParams);
    fn sharm_glue_hier_params(out: *mut RawHierParams);
    fn sharm_glue_rules(name: *const c_char) -> *const c_char;
    fn sharm_glue_output(level: i32, msg: *const c_char);

    fn sharm_glue_comm_rank(comm: *mut c_void) -> i32;
    fn sharm_glue_comm_size(comm: *mut c_void) -> i32;
    fn sharm_glue_comm_is_inter(comm: *mut c_void) -> i32;
    fn sharm_glue_comm_all_local(comm: *mut c_void) -> i32;
    fn sharm_glue_peer_is_local(comm: *mut c_void, rank: i32) -> i32;
    fn sharm_glue_comm_cid(comm: *mut c_void) -> u32;
    fn sharm_glue_comm_name(comm: *mut c_void) -> *const c_char;

    fn sharm_glue_peer_hostname(comm: *mut c_void, rank: i32) -> *const c_char;
    fn sharm_glue_peer_locality(comm: *mut c_void, rank: i32, buf: *mut c_char, cap: i32) -> i32;
    fn sharm_glue_send(
        comm: *mut c_void,
        buf: *const c_void,
        bytes: i32,
        dst: i32,
        tag: i32,
    ) -> i32;
    fn sharm_glue_recv(comm: *mut c_void, buf: *mut c_void, bytes: i32, src: i32, tag: i32) -> i32;
    fn sharm_glue_tag_bcast() -> i32;
    fn sharm_glue_tag_reduce() -> i32;

    fn sharm_glue_progress();
    fn sharm_glue_yield_when_idle() -> i32;
    fn sharm_glue_local_procs() -> i32;

    fn sharm_glue_dtype_info(dtype: *mut c_void, out: *mut DtypeInfo);
    fn sharm_glue_dtype_contiguous(dtype: *mut c_void, count: i32) -> i32;
    fn sharm_glue_dtype_name(dtype: *mut c_void) -> *const c_char;
    fn sharm_glue_convertor_new(
        for_send: i32,
        dtype: *mut c_void,
        count: i32,
        buf: *const c_void,
    ) -> *mut c_void;
    fn sharm_glue_convertor_pack(conv: *mut c_void, dst: *mut c_void, max: u64) -> u64;
    fn sharm_glue_convertor_unpack(conv: *mut c_void, src: *const c_void, len: u64);
    fn sharm_glue_convertor_free(conv: *mut c_void);

    fn sharm_glue_op_is_commutative(op: *mut c_void) -> i32;
    fn sharm_glue_op_is_intrinsic(op: *mut c_void) -> i32;
    fn sharm_glue_op_reduce(
        op: *mut c_void,
        source: *const c_void,
        target: *mut c_void,
        count: u64,
        dtype: *mut c_void,
    );
    fn sharm_glue_op_name(op: *mut c_void) -> *const c_char;

    fn sharm_glue_enum_entry(
        table: i32,
        index: i32,
        kind: *mut *const c_char,
        value: *mut i32,
        name: *mut *const c_char,
    ) -> i32;
    fn sharm_glue_op_kind(op: *mut c_void) -> i32;
    fn sharm_glue_dtype_kind(dtype: *mut c_void) -> i32;
    fn sharm_glue_kernel_op_count() -> i32;
    fn sharm_glue_kernel_elem_count() -> i32;
    fn sharm_glue_kernel_elem_extent(kind: i32) -> i64;
    fn sharm_glue_in_place() -> *const c_void;
    fn sharm_glue_success() -> i32;
    fn sharm_glue_error() -> i32;

    fn sharm_glue_copy_typed(
        sbuf: *const c_void,
        scount: i32,
        sdtype: *mut c_void,
        rbuf: *mut c_void,
        rcount: i32,
        rdtype: *mut c_void,
    ) -> i32;
    fn sharm_glue_prev(module: *mut c_void, comm: *mut c_void, call: *const Call) -> i32;
    fn sharm_glue_prev_bcast_bytes(
        module: *mut c_void,
        buf: *mut c_void,
        len: i32,
        root: i32,
        comm: *mut c_void,
    ) -> i32;
    fn sharm_glue_prev_allgather_bytes(
        module: *mut c_void,
        sbuf: *const c_void,
        rbuf: *mut c_void,
        len: i32,
        comm: *mut c_void,
    ) -> i32;
    fn sharm_glue_prev_allreduce_min_i32(
        module: *mut c_void,
        value: *mut i32,
        comm: *mut c_void,
    ) -> i32;
}

fn c_str(ptr: *const c_char) -> String {
    if ptr.is_null() {
        return String::new();
    }
    // SAFETY: Open MPI names are NUL-terminated strings that outlive the call.
    unsafe { CStr::from_ptr(ptr) }
        .to_string_lossy()
        .into_owned()
}

/// The component's MCA parameters as they are now.
pub fn params() -> RawParams {
    let mut raw = RawParams::default();
    // SAFETY: writes one plain struct.
    unsafe { sharm_glue_params(&mut raw) };
    raw
}

/// The text of the `coll_sharm_<name>_rules` parameter ("" when unset).
pub fn rules_text(name: &str) -> String {
    let Ok(name) = CString::new(name) else {
        return String::new();
    };
    // SAFETY: a NUL-terminated name in, a string owned by Open MPI's variable
    // system (alive while the component is open) out.
    c_str(unsafe { sharm_glue_rules(name.as_ptr()) })
}

/// The hierarchical collectives' parameters and their strings: levels,
/// topology file, DOT file, per-level algorithms, lattice and torus shapes.
pub fn hier_params() -> (RawHierParams, [String; 6]) {
    let mut raw = RawHierParams {
        mode: 0,
        virtual_node_size: 0,
        bcast_algorithm: 0,
        reduce_algorithm: 0,
        allreduce_algorithm: 0,
        levels: std::ptr::null(),
        topology_file: std::ptr::null(),
        dot_file: std::ptr::null(),
        level_algorithms: std::ptr::null(),
        top_allreduce_algorithm: 0,
        reserved: 0,
        lattice_dims: std::ptr::null(),
        torus_dims: std::ptr::null(),
        allgather_algorithm: 0,
        allgather_remap: 0,
        piece_size: 0,
    };
    // SAFETY: writes one plain struct; the strings it points to live while
    // the component is open.
    unsafe { sharm_glue_hier_params(&mut raw) };
    let strings = [
        raw.levels,
        raw.topology_file,
        raw.dot_file,
        raw.level_algorithms,
        raw.lattice_dims,
        raw.torus_dims,
    ]
    .map(c_str);
    (raw, strings)
}

/// Every entry of the glue's named-value parameter tables:
/// (table, index, kind, value, name).
pub fn enum_entries() -> Vec<(i32, i32, String, i32, String)> {
    let mut out = Vec::new();
    for table in 0.. {
        for index in 0.. {
            let (mut kind, mut value, mut name) = (std::ptr::null(), 0, std::ptr::null());
            // SAFETY: writes three plain values; the strings are static in the glue.
            let rc =
                unsafe { sharm_glue_enum_entry(table, index, &mut kind, &mut value, &mut name) };
            match rc {
                1 => out.push((table, index, c_str(kind), value, c_str(name))),
                0 => break,
                _ => return out,
            }
        }
    }
    out
}

/// The glue's copy of the kernel kind tables: (operation count, element
/// count, C `sizeof` of an element kind).
pub fn kernel_tables() -> (i32, i32, impl Fn(i32) -> i64) {
    // SAFETY: constants and a table lookup in the glue.
    unsafe {
        (
            sharm_glue_kernel_op_count(),
            sharm_glue_kernel_elem_count(),
            |k| sharm_glue_kernel_elem_extent(k),
        )
    }
}

/// Prints through the component's opal_output stream (see `log`).
pub fn output(level: i32, msg: &str) {
    let text = CString::new(msg.replace('\0', " ")).unwrap_or_default();
    // SAFETY: a valid C string for the duration of the call.
    unsafe { sharm_glue_output(level, text.as_ptr()) };
}

/// Drives Open MPI's progress engine (keeps other requests moving while we spin).
pub fn progress() {
    // SAFETY: opal_progress may be called at any time from the MPI thread.
    unsafe { sharm_glue_progress() };
}

/// How crowded this node looks to this process.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Crowding {
    /// A core per process.
    None = 0,
    /// Waits should yield the CPU early: Open MPI asked for it
    /// (`mpi_yield_when_idle`), though the node has a CPU online per
    /// process of this job.
    Yielding = 1,
    /// This job has more processes on this node than the node has CPUs
    /// online (waits yield too: mpirun does not always set the flag then,
    /// seen with 3 processes on 2 cores).  Counted against CPUs online, not
    /// this process's affinity mask: a job bound one process per core is
    /// not oversubscribed.
    Oversubscribed = 2,
}

impl Crowding {
    /// Crowded: waits yield and a process may be waiting for a core
    /// (`Yielding` or `Oversubscribed`).
    pub fn crowded(self) -> bool {
        self >= Crowding::Yielding
    }

    pub fn from_level(level: i32) -> Crowding {
        match level {
            i32::MIN..=0 => Crowding::None,
            1 => Crowding::Yielding,
            _ => Crowding::Oversubscribed,
        }
    }
}

/// This process's view of how crowded the node is.
pub fn crowding() -> Crowding {
    // SAFETY: reads global values.
    let (asked, local) = unsafe { (sharm_glue_yield_when_idle() != 0, sharm_glue_local_procs()) };
    // SAFETY: sysconf has no preconditions.
    let cpus = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) };
    let local = i64::from(local);
    if cpus > 0 && local > cpus as i64 {
        Crowding::Oversubscribed
    } else if asked {
        Crowding::Yielding
    } else {
        Crowding::None
    }
}

/// MPI_IN_PLACE.  A constant of the process, asked of the glue once: every
/// decoded call compares its buffers with it.
pub fn in_place() -> *const c_void {
    static IN_PLACE: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    // SAFETY: returns a constant.
    *IN_PLACE.get_or_init(|| unsafe { sharm_glue_in_place() } as usize) as *const c_void
}

/// Tags Open MPI reserves for collective operations.
pub fn tag_bcast() -> i32 {
    // SAFETY: returns a constant.
    unsafe { sharm_glue_tag_bcast() }
}

pub fn tag_reduce() -> i32 {
    // SAFETY: returns a constant.
    unsafe { sharm_glue_tag_reduce() }
}

pub fn success() -> i32 {
    // SAFETY: returns a constant.
    unsafe { sharm_glue_success() }
}

pub fn error() -> i32 {
    // SAFETY: returns a constant.
    unsafe { sharm_glue_error() }
}

/// A communicator handle.
#[derive(Clone, Copy, Debug)]
pub struct Comm(pub *mut c_void);

impl Comm {
    pub fn rank(self) -> usize {
        // SAFETY: `self` is a live communicator for the duration of the call.
        unsafe { sharm_glue_comm_rank(self.0) as usize }
    }
    pub fn size(self) -> usize {
        // SAFETY: as above.
        unsafe { sharm_glue_comm_size(self.0) as usize }
    }
    pub fn is_inter(self) -> bool {
        // SAFETY: as above.
        unsafe { sharm_glue_comm_is_inter(self.0) != 0 }
    }
    pub fn all_local(self) -> bool {
        // SAFETY: as above.
        unsafe { sharm_glue_comm_all_local(self.0) != 0 }
    }
    /// Whether process `rank` runs on this node, as Open MPI sees nodes.
    pub fn peer_is_local(self, rank: usize) -> bool {
        // SAFETY: as above; `rank` is a rank of the communicator.
        unsafe { sharm_glue_peer_is_local(self.0, rank as i32) != 0 }
    }
    /// Node name of process `rank` (None when Open MPI does not know it).
    pub fn hostname(self, rank: usize) -> Option<String> {
        // SAFETY: `self` is live; the name is a NUL-terminated string it owns.
        let ptr = unsafe { sharm_glue_peer_hostname(self.0, rank as i32) };
        (!ptr.is_null()).then(|| c_str(ptr))
    }

    /// PMIx locality string of process `rank` (None when processes are not bound).
    pub fn locality(self, rank: usize) -> Option<String> {
        let mut buf = [0 as c_char; 256];
        // SAFETY: `buf` has the capacity passed.
        let len = unsafe {
            sharm_glue_peer_locality(self.0, rank as i32, buf.as_mut_ptr(), buf.len() as i32)
        };
        (len > 0).then(|| c_str(buf.as_ptr()))
    }

    /// Blocking point-to-point send of a byte range with a collective tag.
    pub fn send(self, data: &[u8], dst: usize, tag: i32) -> bool {
        data.chunks(i32::MAX as usize).all(|chunk| {
            // SAFETY: a valid byte range.
            unsafe {
                sharm_glue_send(
                    self.0,
                    chunk.as_ptr().cast(),
                    chunk.len() as i32,
                    dst as i32,
                    tag,
                ) == success()
            }
        })
    }

    /// Blocking point-to-point receive of a byte range with a collective tag.
    pub fn recv(self, data: &mut [u8], src: usize, tag: i32) -> bool {
        data.chunks_mut(i32::MAX as usize).all(|chunk| {
            // SAFETY: a valid byte range.
            unsafe {
                sharm_glue_recv(
                    self.0,
                    chunk.as_mut_ptr().cast(),
                    chunk.len() as i32,
                    src as i32,
                    tag,
                ) == success()
            }
        })
    }

    /// "name (cid N)", for messages.
    pub fn label(self) -> String {
        // SAFETY: as above; the name is a NUL-terminated array inside the communicator.
        let (name, cid) = unsafe {
            (
                c_str(sharm_glue_comm_name(self.0)),
                sharm_glue_comm_cid(self.0),
            )
        };
        if name.is_empty() {
            format!("cid {cid}")
        } else {
            format!("{name} (cid {cid})")
        }
    }
}

/// Copies typed data within this process (MPI send-to-self semantics).
///
/// # Safety
/// Both buffers must be valid for their counts and datatypes.
pub unsafe fn copy_typed(
    sbuf: *const u8,
    scount: i32,
    sdtype: Dtype,
    rbuf: *mut u8,
    rcount: i32,
    rdtype: Dtype,
) -> bool {
    sharm_glue_copy_typed(sbuf.cast(), scount, sdtype.0, rbuf.cast(), rcount, rdtype.0) == success()
}

/// A datatype handle.
#[derive(Clone, Copy, Debug)]
pub struct Dtype(pub *mut c_void);

impl Dtype {
    pub fn info(self) -> DtypeInfo {
        let mut info = DtypeInfo::default();
        // SAFETY: `self` is a live datatype; writes one plain struct.
        unsafe { sharm_glue_dtype_info(self.0, &mut info) };
        info
    }
    /// Whether `count` elements form one gap-free byte range at `buf + true_lb`.
    pub fn contiguous(self, count: i32) -> bool {
        // SAFETY: as above.
        unsafe { sharm_glue_dtype_contiguous(self.0, count) != 0 }
    }
    pub fn name(self) -> String {
        // SAFETY: as above.
        c_str(unsafe { sharm_glue_dtype_name(self.0) })
    }
    /// The kernel code of a predefined datatype (`kernels::ElemKind`), or -1.
    pub fn kernel_code(self) -> i32 {
        // SAFETY: compares the handle with Open MPI's predefined ones.
        unsafe { sharm_glue_dtype_kind(self.0) }
    }
}

/// A reduction operation handle.
#[derive(Clone, Copy, Debug)]
pub struct Op(pub *mut c_void);

impl Op {
    pub fn commutative(self) -> bool {
        // SAFETY: `self` is a live operation.
        unsafe { sharm_glue_op_is_commutative(self.0) != 0 }
    }
    pub fn intrinsic(self) -> bool {
        // SAFETY: as above.
        unsafe { sharm_glue_op_is_intrinsic(self.0) != 0 }
    }
    pub fn name(self) -> String {
        // SAFETY: as above.
        c_str(unsafe { sharm_glue_op_name(self.0) })
    }
    /// The kernel code of a predefined operation (`kernels::OpKind`), or -1.
    pub fn kernel_code(self) -> i32 {
        // SAFETY: compares the handle with Open MPI's predefined ones.
        unsafe { sharm_glue_op_kind(self.0) }
    }
    /// `target[i] = source[i] op target[i]` for `count` elements.
    ///
    /// # Safety
    /// Both pointers must address `count` elements of `dtype` laid out with its
    /// extent; `source` is only read.
    pub unsafe fn reduce(self, source: *const u8, target: *mut u8, count: usize, dtype: Dtype) {
        sharm_glue_op_reduce(self.0, source.cast(), target.cast(), count as u64, dtype.0)
    }
}

/// Packs a user buffer into, or unpacks it from, a byte stream, one piece at
/// a time (pieces must be processed in stream order).
pub struct Convertor(*mut c_void);

impl Convertor {
    /// A convertor for `count` elements of `dtype` at `buf`.
    ///
    /// Open MPI returns no convertor only when its allocation fails.  The
    /// process then stops, as it does when any of Rust's allocations fails
    /// (the `Packer` boxed next to this convertor, say): a collective cannot
    /// be left half-way by one process without its partners waiting for
    /// blocks that never come, so going on with an error would trade an
    /// out-of-memory report for a hang.
    ///
    /// # Safety
    /// `buf` must be a valid buffer for `count` elements of `dtype` for the
    /// lifetime of the convertor.
    pub unsafe fn new(for_send: bool, dtype: Dtype, count: i32, buf: *const u8) -> Self {
        let handle = sharm_glue_convertor_new(for_send as i32, dtype.0, count, buf.cast());
        if handle.is_null() {
            tracing::error!("out of memory: Open MPI could not allocate a datatype convertor");
            std::process::abort();
        }
        Self(handle)
    }
    /// Packs up to `max` bytes into `dst`; returns how many were packed.
    ///
    /// # Safety
    /// `dst` must be writable for `max` bytes.
    pub unsafe fn pack(&mut self, dst: *mut u8, max: usize) -> usize {
        sharm_glue_convertor_pack(self.0, dst.cast(), max as u64) as usize
    }
    /// Unpacks the next `len` bytes of the stream from `src`.
    ///
    /// # Safety
    /// `src` must be readable for `len` bytes.
    pub unsafe fn unpack(&mut self, src: *const u8, len: usize) {
        sharm_glue_convertor_unpack(self.0, src.cast(), len as u64)
    }
}

impl Drop for Convertor {
    fn drop(&mut self) {
        // SAFETY: the handle came from sharm_glue_convertor_new and is freed once.
        unsafe { sharm_glue_convertor_free(self.0) }
    }
}

/// The sharm module of one communicator: gives access to the component that
/// was installed below sharm, for fallback and for bootstrap exchanges.
#[derive(Clone, Copy, Debug)]
pub struct Module(pub *mut c_void);

impl Module {
    /// Runs `call` with the component installed below sharm.
    pub fn prev(self, comm: Comm, call: &Call) -> i32 {
        // SAFETY: forwards the application's own arguments unchanged.
        unsafe { sharm_glue_prev(self.0, comm.0, call) }
    }
    /// Broadcasts raw bytes from `root` through the previous component.
    pub fn bcast_bytes(self, buf: &mut [u8], root: usize, comm: Comm) -> bool {
        // SAFETY: `buf` is a valid byte buffer of the given length.
        unsafe {
            sharm_glue_prev_bcast_bytes(
                self.0,
                buf.as_mut_ptr().cast(),
                buf.len() as i32,
                root as i32,
                comm.0,
            ) == success()
        }
    }
    /// Gathers every process's `mine` (same length everywhere) into `all`,
    /// in rank order, through the previous component.  `all` must hold
    /// `mine.len()` bytes per process of `comm`.
    pub fn allgather_bytes(self, mine: &[u8], all: &mut [u8], comm: Comm) -> bool {
        let Ok(len) = i32::try_from(mine.len()) else {
            return false;
        };
        assert_eq!(
            all.len(),
            mine.len() * comm.size(),
            "allgather_bytes: receive size"
        );
        // SAFETY: `mine` holds `len` bytes and `all` holds `len` per process.
        unsafe {
            sharm_glue_prev_allgather_bytes(
                self.0,
                mine.as_ptr().cast(),
                all.as_mut_ptr().cast(),
                len,
                comm.0,
            ) == success()
        }
    }
    /// Every process learns the minimum of `value` (a collective agreement).
    pub fn agree_min(self, value: i32, comm: Comm) -> Option<i32> {
        let mut v = value;
        // SAFETY: one i32 in place.
        let rc = unsafe { sharm_glue_prev_allreduce_min_i32(self.0, &mut v, comm.0) };
        (rc == success()).then_some(v)
    }
}
