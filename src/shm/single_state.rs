//! What a channel owns for the single-copy protocol (`single`): its
//! threshold and buffers, and a source exposed as one byte range.  Kept
//! apart from the protocol, which is written as methods of the channel, so
//! that the channel can own this state without importing the protocol.

use crate::ompi::payload::Payload;
use crate::shm::scratch::Scratch;

/// Bytes pulled at a time into the staging buffer (non-contiguous sinks,
/// reductions): small enough to stay in L2 while it is used.
pub const CHUNK: usize = 64 * 1024;

/// A channel's single-copy state; present when CMA works between all its
/// processes and is wanted.
pub struct SingleCopy {
    /// Streams of at least this many bytes go by single copy.
    pub min_size: usize,
    /// Two chunks: pulled data, and a copy of our own operand.
    stage: Scratch,
    /// A private buffer (packed sources, partial results); grows as needed.
    spare: Vec<u8>,
}

impl SingleCopy {
    pub fn new(min_size: usize) -> SingleCopy {
        SingleCopy {
            min_size: min_size.max(1),
            stage: Scratch::new(2 * CHUNK),
            spare: Vec::new(),
        }
    }

    /// The staging buffer: 2 × `CHUNK` bytes.
    pub fn stage(&self) -> *mut u8 {
        self.stage.ptr()
    }

    /// The private buffer, at least `bytes` long.
    pub fn spare(&mut self, bytes: usize) -> *mut u8 {
        if self.spare.len() < bytes {
            self.spare.resize(bytes, 0);
        }
        self.spare.as_mut_ptr()
    }
}

/// A source laid out as one byte range for readers to pull from: the
/// application's buffer when contiguous, else a packed copy held here.
pub struct Exposed {
    pub addr: *const u8,
    _packed: Vec<u8>,
}

impl Exposed {
    /// Exposes the `bytes` bytes of `src`.
    pub fn new(src: &mut Payload, bytes: usize) -> Exposed {
        match src {
            Payload::Contiguous(base) => Exposed {
                addr: *base,
                _packed: Vec::new(),
            },
            _ => {
                let mut packed = vec![0u8; bytes];
                // SAFETY: `packed` holds `bytes` bytes; the stream holds them.
                unsafe { src.read(0, packed.as_mut_ptr(), bytes) };
                Exposed {
                    addr: packed.as_ptr(),
                    _packed: packed,
                }
            }
        }
    }
}
