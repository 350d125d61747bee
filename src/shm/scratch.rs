//! A per-segment scratch buffer: one cache-line aligned fragment of the
//! largest width (s·f bytes), owned by the channel and used by algorithms
//! that must not accumulate in the user's buffer.

use crate::shm::layout::CACHE_LINE;

/// A cache-line aligned scratch buffer of the largest fragment (s·f bytes).
pub struct Scratch {
    ptr: *mut u8,
    layout: std::alloc::Layout,
}

impl Scratch {
    pub fn new(bytes: usize) -> Scratch {
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
