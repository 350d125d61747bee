//! Nonblocking point-to-point byte transfers through Open MPI's PML, for the
//! network algorithms' schedule executor.  A `Request` borrows its buffer for
//! as long as the transfer may touch it; dropping an unfinished request waits
//! for it, so a buffer can never be freed under a pending transfer.

use std::ffi::c_void;
use std::marker::PhantomData;

use crate::ompi::ffi::{self, Comm};

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
    fn sharm_glue_test_any(count: i32, requests: *mut *mut c_void) -> i32;
}

/// Largest transfer one request carries (the PML's count is an int).
pub const MAX_TRANSFER: usize = i32::MAX as usize;

/// One pending transfer on a buffer borrowed for `'a`.
pub struct Request<'a> {
    raw: *mut c_void,
    _buf: PhantomData<&'a mut [u8]>,
}

impl Comm {
    /// Starts sending `data` (< 2^31 bytes) to `dst` with `tag`.
    pub fn isend<'a>(self, data: &'a [u8], dst: usize, tag: i32) -> Option<Request<'a>> {
        assert!(
            data.len() <= MAX_TRANSFER,
            "callers cut transfers below 2 GiB"
        );
        // SAFETY: `data` stays borrowed until the request completes.
        let raw = unsafe {
            sharm_glue_isend(
                self.0,
                data.as_ptr().cast(),
                data.len() as i32,
                dst as i32,
                tag,
            )
        };
        (!raw.is_null()).then_some(Request {
            raw,
            _buf: PhantomData,
        })
    }

    /// Starts receiving `data.len()` (< 2^31) bytes from `src` with `tag`.
    pub fn irecv<'a>(self, data: &'a mut [u8], src: usize, tag: i32) -> Option<Request<'a>> {
        assert!(
            data.len() <= MAX_TRANSFER,
            "callers cut transfers below 2 GiB"
        );
        // SAFETY: `data` stays mutably borrowed until the request completes.
        let raw = unsafe {
            sharm_glue_irecv(
                self.0,
                data.as_mut_ptr().cast(),
                data.len() as i32,
                src as i32,
                tag,
            )
        };
        (!raw.is_null()).then_some(Request {
            raw,
            _buf: PhantomData,
        })
    }
}

/// Raw, borrow-free forms for executors that track buffer lifetimes
/// themselves (the schedule executor keeps every buffer alive and untouched
/// until its `wait_all`).  The handle is opaque; null means the post failed.
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

/// Completes (and frees) every raw request; false if any failed.
pub fn wait_all_raw(requests: &mut Vec<RawRequest>) -> bool {
    let mut raw: Vec<*mut c_void> = requests.drain(..).map(|r| r.0).collect();
    if raw.is_empty() {
        return true;
    }
    // SAFETY: live requests from isend_raw/irecv_raw, completed once here.
    unsafe { sharm_glue_wait_all(raw.len() as i32, raw.as_mut_ptr()) == ffi::success() }
}

/// Completes every request; false if any failed.
pub fn wait_all(requests: Vec<Request<'_>>) -> bool {
    let mut raw: Vec<*mut c_void> = requests.iter().map(|r| r.raw).collect();
    // The requests are completed (and freed) below: their Drop must not wait.
    std::mem::forget(requests);
    if raw.is_empty() {
        return true;
    }
    // SAFETY: live requests from isend/irecv, completed and freed once here.
    unsafe { sharm_glue_wait_all(raw.len() as i32, raw.as_mut_ptr()) == ffi::success() }
}

/// A point-to-point transfer failed in the PML.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TransferFailed;

/// Completes one finished request of `requests`, removing it, and returns its
/// index in the slice as it was; None when none has finished yet (progress
/// was driven once).  Err on a failed transfer.
pub fn test_any(requests: &mut Vec<Request<'_>>) -> Result<Option<usize>, TransferFailed> {
    if requests.is_empty() {
        return Ok(None);
    }
    let mut raw: Vec<*mut c_void> = requests.iter().map(|r| r.raw).collect();
    // SAFETY: live requests; a finished one is freed by the call and its slot
    // replaced by the null request, which we then drop from the list.
    let index = unsafe { sharm_glue_test_any(raw.len() as i32, raw.as_mut_ptr()) };
    match index {
        -2 => Err(TransferFailed),
        i if i >= 0 => {
            let i = i as usize;
            std::mem::forget(requests.remove(i));
            Ok(Some(i))
        }
        _ => Ok(None),
    }
}

impl Drop for Request<'_> {
    fn drop(&mut self) {
        // An abandoned transfer must still finish before its buffer goes.
        let mut raw = [self.raw];
        // SAFETY: a live request, completed and freed once here.
        unsafe { sharm_glue_wait_all(1, raw.as_mut_ptr()) };
    }
}
