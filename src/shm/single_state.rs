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
    /// Scatter(v) blocks of at least this many bytes go by single copy (and
    /// Alltoall(v) blocks on a crowded node): `min_size`, or less on a
    /// crowded node (`SingleCopy::crowded`) or where the calibration's
    /// Gather timing found single copy faster (`with_scatter`).
    pub scatter_min_size: usize,
    /// Allgather(v) and Alltoall(v) blocks of at least this many bytes go by
    /// single copy (`with_exchanges`; else `min_size`).
    pub exchange_min_size: usize,
    /// Gather(v) blocks of at least this many bytes are written by their
    /// senders into the root's buffer (`process_vm_writev`, when permitted
    /// between all processes and wanted: `coll_sharm_single_copy_push`);
    /// `usize::MAX`: never (`with_push`).
    pub push_min_size: usize,
    /// Whether Gather(v) senders may write (CMA writes permitted between
    /// all processes, and `coll_sharm_single_copy_push`), whatever
    /// `push_min_size` is: a call that goes by single copy
    /// (`Shared::call_path`) writes then.
    pub push_permitted: bool,
    /// Two chunks: pulled data, and a copy of our own operand.
    stage: Scratch,
    /// A private buffer (packed sources, partial results); grows as needed.
    spare: Vec<u8>,
}

impl SingleCopy {
    pub fn new(min_size: usize) -> SingleCopy {
        SingleCopy {
            min_size: min_size.max(1),
            scatter_min_size: min_size.max(1),
            exchange_min_size: min_size.max(1),
            push_min_size: usize::MAX,
            push_permitted: false,
            stage: Scratch::new(2 * CHUNK),
            spare: Vec::new(),
        }
    }

    /// The same, on a node with more processes than cores: Scatter(v)
    /// blocks from `floor` bytes go by single copy whatever `min_size` is
    /// (and Alltoall(v) blocks from the larger of `floor` and 1 MiB,
    /// `coll::alltoall`).
    /// Through the queues the root copies every block in, one after the
    /// other, and each hand-off waits for a reader that may not be running;
    /// by single copy the root only offers its buffer and the readers pull
    /// their blocks whenever they run, both cores at once.  The pairwise
    /// calibration cannot see this (one writer, one reader, each on its
    /// core): at np=4 on 2 cores it chose the queues while single copy
    /// made Scatter 1.5–2.4× faster from 64 KiB (docs/benchmark,
    /// `sharm:single_copy=cma` beside `sharm`).
    pub fn crowded(min_size: usize, floor: usize) -> SingleCopy {
        SingleCopy {
            scatter_min_size: floor.clamp(1, min_size.max(1)),
            ..SingleCopy::new(min_size)
        }
    }

    /// The same, with Gather(v) senders writing their blocks from `floor`
    /// bytes (None: never), whatever `min_size` is.
    ///
    /// Why apart from `min_size`: the one-way calibration times one
    /// reader's two paths, queues against a pull, where the reader copies
    /// either way.  A Gather root that the senders write for copies only
    /// its own block, in parallel with theirs, which that timing cannot
    /// see; `calibrate::time_gathers` times it.  np=2, 3 alternated
    /// launches, in a state where the one-way timing chose the queues
    /// (memcpy 4 MiB 15 GB/s, CMA 12-22 GB/s, 2026-11-24): Gather 256 KiB /
    /// 1 / 4 / 16 MiB 19.4 / 107 / 564 / 2304 us through the queues, 17.9 /
    /// 57.9 / 342 / 1471 written by the senders, 25.4 / 127 / 649 / 2565
    /// read by the root; in another (memcpy 4 MiB 48 GB/s, 2026-11-25) the
    /// writes lost up to 4 MiB.
    pub fn with_push(self, floor: Option<usize>) -> SingleCopy {
        SingleCopy {
            push_min_size: floor.map_or(usize::MAX, |f| f.max(1)),
            ..self
        }
    }

    /// The same, with Scatter(v) blocks by single copy from `floor` bytes
    /// too (None: from `min_size` only), whichever is lower.
    ///
    /// Why: a Scatter root at np=2 copies its own block while the other
    /// block moves, the Gather timing's shape mirrored (there the root
    /// copies its own block while the sender's moves), which the one-way
    /// timing does not have: by the queues the root copies both blocks, by
    /// single copy only its own, beside the reader's pull.  np=2, 8 to 10
    /// alternated launches with the cores near (memcpy 64 MiB 6.8 GB/s, CMA
    /// 1/4 MiB 12.4/8.2 GB/s, two copies 12.8/11.4, 2026-11-30), one-way
    /// verdict "never", Gather's "from 256 KiB": Scatter 1 / 4 / 16 MiB
    /// 146 / 721 / 4894 us by the queues, 132 / 486 / 2879 forced by single
    /// copy (coll/tuned 197 / 815 / 4390).
    pub fn with_scatter(self, floor: Option<usize>) -> SingleCopy {
        SingleCopy {
            scatter_min_size: floor.map_or(self.scatter_min_size, |f| {
                f.max(1).min(self.scatter_min_size)
            }),
            ..self
        }
    }

    /// The same, with exchanged blocks by single copy from `from` bytes
    /// (the calibration's exchange verdict, `calibrate::time_exchanges`).
    pub fn with_exchanges(self, from: usize) -> SingleCopy {
        SingleCopy {
            exchange_min_size: from.max(1),
            ..self
        }
    }

    /// Whether this state moves anything by single copy at all.
    pub fn used(&self) -> bool {
        self.min_size != usize::MAX
            || self.scatter_min_size != usize::MAX
            || self.exchange_min_size != usize::MAX
            || self.push_min_size != usize::MAX
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

/// Where a writer's single-copy push lands: the application's buffer when
/// contiguous, else a private buffer unpacked into the sink afterwards (the
/// writer sees one byte range either way, so both ends need not agree on
/// their datatypes' layout).
pub struct Landing {
    pub addr: *mut u8,
    packed: Vec<u8>,
}

impl Landing {
    /// A landing for the `bytes` bytes of `sink`.
    pub fn new(sink: &Payload, bytes: usize) -> Landing {
        match sink {
            Payload::Contiguous(base) => Landing {
                addr: *base,
                packed: Vec::new(),
            },
            _ => {
                let mut packed = vec![0u8; bytes];
                Landing {
                    addr: packed.as_mut_ptr(),
                    packed,
                }
            }
        }
    }

    /// Moves what landed into `sink` when it went to a private buffer.
    pub fn finish(&self, sink: &mut Payload) {
        if !self.packed.is_empty() {
            // SAFETY: the stream holds `packed.len()` bytes, all written by
            // the writer before its acknowledgement was seen.
            unsafe { sink.write(0, self.packed.as_ptr(), self.packed.len()) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A contiguous sink is written in place (nothing to finish); a
    /// non-contiguous one gets a private buffer of the stream's size.
    #[test]
    fn landing_is_the_buffer_itself_when_contiguous() {
        let mut buf = vec![0u8; 64];
        let sink = Payload::Contiguous(buf.as_mut_ptr());
        let landing = Landing::new(&sink, buf.len());
        assert_eq!(landing.addr, buf.as_mut_ptr());
        assert!(landing.packed.is_empty());
    }
}
