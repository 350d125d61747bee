//! Point-to-point byte transfers through Open MPI's PML: nonblocking ones for the
//! network algorithms' schedule executor, which keeps every buffer alive and
//! untouched until the `wait_all_raw` that completes its requests.

use std::ffi::c_void;

use crate::ompi::ffi::{self, Comm};
use crate::ompi::stats;

extern "C" {
    fn sharm_glue_isend(
        comm: *mut c_void,
        buf: *const c_void,
        bytes: i32,
        dst: i32,
        tag: i32,
    ) -> *mut c_void;
    fn sharm_glue_irecv(
        comm: *mut c_void,
        buf: *mut c_void,
        bytes: i32,
        src: i32,
        tag: i32,
    ) -> *mut c_void;
    fn sharm_glue_wait_all(count: i32, requests: *mut *mut c_void) -> i32;
}

/// Largest transfer one request carries (the PML's count is an int).
pub const MAX_TRANSFER: usize = i32::MAX as usize;

/// A posted transfer.  The handle is opaque; null means the post failed.
pub struct RawRequest(*mut c_void);

impl RawRequest {
    pub fn is_null(&self) -> bool {
        self.0.is_null()
    }
}

/// Starts sending `len` (< 2^31) bytes at `buf` to `dst`.
///
/// # Safety
/// The bytes must stay valid and unchanged until `wait_all_raw` completes
/// the request.
pub unsafe fn isend_raw(
    comm: Comm,
    buf: *const u8,
    len: usize,
    dst: usize,
    tag: i32,
) -> RawRequest {
    assert!(len <= MAX_TRANSFER, "callers cut transfers below 2 GiB");
    stats::pml_sent(len, !comm.peer_is_local(dst));
    RawRequest(sharm_glue_isend(
        comm.0,
        buf.cast(),
        len as i32,
        dst as i32,
        tag,
    ))
}

/// Starts receiving `len` (< 2^31) bytes from `src` into `buf`.
///
/// # Safety
/// `buf` must stay valid and untouched by anyone else until `wait_all_raw`
/// completes the request.
pub unsafe fn irecv_raw(comm: Comm, buf: *mut u8, len: usize, src: usize, tag: i32) -> RawRequest {
    assert!(len <= MAX_TRANSFER, "callers cut transfers below 2 GiB");
    RawRequest(sharm_glue_irecv(
        comm.0,
        buf.cast(),
        len as i32,
        src as i32,
        tag,
    ))
}

/// Blocking send of `data` to `dst` (`Comm::send`, in pieces below 2 GiB),
/// counted in the traffic statistics like the nonblocking sends: every PML
/// send of the hierarchy goes through here or `isend_raw`.
pub fn send(comm: Comm, data: &[u8], dst: usize, tag: i32) -> bool {
    let remote = !comm.peer_is_local(dst);
    for piece in data.chunks(MAX_TRANSFER) {
        stats::pml_sent(piece.len(), remote);
    }
    comm.send(data, dst, tag)
}

/// Completes (and frees) every raw request; false if any failed.
pub fn wait_all_raw(requests: &mut Vec<RawRequest>) -> bool {
    let mut raw: Vec<*mut c_void> = requests.drain(..).map(|r| r.0).collect();
    if raw.is_empty() {
        return true;
    }
    // SAFETY: live requests from isend_raw/irecv_raw, completed once here.
    unsafe { sharm_glue_wait_all(raw.len() as i32, raw.as_mut_ptr()) == ffi::success() }
}
