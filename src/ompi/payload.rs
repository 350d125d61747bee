//! User buffers seen as byte streams: contiguous ones are copied directly,
//! anything else goes through Open MPI's convertor.  Processes may use
//! different datatypes with the same type signature; the stream is the same.

use crate::kernels::copy::{self, LandingStores};
use crate::ompi::dtype::{self, Movement};
use crate::ompi::ffi::{self, Convertor, Dtype, DtypeInfo};

/// `count` elements of `dtype` at `buf` (as the application passed them),
/// with the datatype's geometry asked of Open MPI once.
#[derive(Clone, Copy, Debug)]
pub struct TypedBuf {
    pub buf: *mut u8,
    pub count: i32,
    pub dtype: Dtype,
    info: DtypeInfo,
}

impl TypedBuf {
    pub fn new(buf: *const u8, count: i32, dtype: Dtype) -> TypedBuf {
        TypedBuf::with_info(buf, count, dtype, dtype.info())
    }

    /// A buffer of `dtype` whose geometry `info` was already asked for.
    pub fn with_info(buf: *const u8, count: i32, dtype: Dtype, info: DtypeInfo) -> TypedBuf {
        TypedBuf {
            buf: buf as *mut u8,
            count,
            dtype,
            info,
        }
    }

    pub fn info(&self) -> &DtypeInfo {
        &self.info
    }

    /// The `index`-th block of `count` elements (MPI's `buf + index·count·extent`),
    /// or the block at displacement `displ` elements when given.
    pub fn block(&self, index: usize, count: i32, displ: Option<i32>) -> TypedBuf {
        let elements = match displ {
            Some(d) => d as isize,
            None => index as isize * count as isize,
        };
        let buf = self
            .buf
            .wrapping_offset(elements * self.info.extent as isize);
        TypedBuf::with_info(buf, count, self.dtype, self.info)
    }

    /// Bytes of the stream (0 for a negative count).
    pub fn bytes(&self) -> usize {
        dtype::message_bytes(&self.info, self.count).unwrap_or(0) as usize
    }

    /// How this buffer moves: as one byte range, or packed.
    pub fn movement(&self) -> Movement {
        // Debug builds check the derived answer against Open MPI's own.
        debug_assert_eq!(
            self.info.contiguous(self.count),
            self.dtype.contiguous(self.count)
        );
        dtype::movement(&self.info, self.info.contiguous(self.count))
    }

    fn payload(&self, for_send: bool) -> Payload {
        match self.movement() {
            Movement::Contiguous { offset } => {
                Payload::Contiguous(self.buf.wrapping_offset(offset))
            }
            Movement::Packed => {
                // SAFETY: the buffer is the application's, valid for the call.
                let conv = unsafe { Convertor::new(for_send, self.dtype, self.count, self.buf) };
                if for_send {
                    Payload::Pack(Box::new(Packer {
                        conv,
                        carry: [0; CARRY],
                        at: 0,
                        len: 0,
                    }))
                } else {
                    Payload::Unpack(conv)
                }
            }
        }
    }

    /// Copies this buffer into `dst` within this process (send-to-self);
    /// `landing`: which stores, when the two are one byte range each
    /// (`copy::copy_local`).
    pub fn copy_to(&self, dst: &TypedBuf, landing: LandingStores) -> bool {
        // Both sides one byte range of the same length (a process's own
        // block in Gather, Allgather, Alltoall, Scatter, almost always):
        // one copy (`copy_local`).  Open MPI's ompi_datatype_sndrcv runs its datatype
        // engine even then; ask it only for the other cases, which it
        // also checks (type signatures, truncation).
        if let Some((from, to, n)) = self.byte_ranges_to(dst) {
            // SAFETY: the application's buffers hold `n` bytes each at
            // those addresses (they may overlap: `copy_local` allows it).
            unsafe { copy::copy_local(to, from, n, landing) };
            return true;
        }
        // SAFETY: the application's buffers, valid for the call.
        unsafe {
            ffi::copy_typed(
                self.buf, self.count, self.dtype, dst.buf, dst.count, dst.dtype,
            )
        }
    }

    /// Where this buffer's bytes start and where `dst`'s do, and how many
    /// there are, when each is one byte range and both are the same length
    /// (None: a copy between them needs the datatype engine).
    fn byte_ranges_to(&self, dst: &TypedBuf) -> Option<(*const u8, *mut u8, usize)> {
        let (from, to) = (self.byte_range()?, dst.byte_range()?);
        let n = self.bytes();
        (n == dst.bytes()).then_some((from as *const u8, to, n))
    }

    /// Where this buffer's bytes start when they are one byte range (None:
    /// they move through the datatype engine).
    pub fn byte_range(&self) -> Option<*mut u8> {
        match self.movement() {
            Movement::Contiguous { offset } => Some(self.buf.wrapping_offset(offset)),
            Movement::Packed => None,
        }
    }

    /// A stream to read this buffer from.
    pub fn source(&self) -> Payload {
        self.payload(true)
    }

    /// A stream to write into this buffer.
    pub fn sink(&self) -> Payload {
        self.payload(false)
    }
}

/// A process's own block in Gather, Scatter, Allgather and Alltoall (MPI's
/// send-to-self): a copy within the process, made once, at the point the
/// collective picks.  Made after the process has published what its peers
/// wait for, it overlaps their copying instead of following the whole
/// exchange (np=2 Allgather of 32 KiB: three copies of which one is local).
pub struct SelfCopy {
    pending: Option<(TypedBuf, TypedBuf)>,
    ok: bool,
    /// Which stores the copy uses (`landing`).
    landing: LandingStores,
}

impl SelfCopy {
    /// `from` None (MPI_IN_PLACE): the block is already in place.
    pub fn new(from: Option<TypedBuf>, to: TypedBuf) -> SelfCopy {
        SelfCopy {
            pending: from.map(|f| (f, to)),
            ok: true,
            landing: LandingStores::BySize,
        }
    }

    /// Nothing to copy.
    pub fn none() -> SelfCopy {
        SelfCopy {
            pending: None,
            ok: true,
            landing: LandingStores::BySize,
        }
    }

    /// The same copy with the stores its call chose (`Shared::landing`).
    pub fn landing(self, landing: LandingStores) -> SelfCopy {
        SelfCopy { landing, ..self }
    }

    /// Hands the copy over to a sender that reads the block from `src`
    /// anyway (`Shared::send_copying`): the address to copy it to, when the
    /// block is `bytes` bytes read from `src` on both ends of one byte
    /// range each, apart, and small enough to stay cached (larger own
    /// blocks stream on their own: `copy::copy_local`).  None: the copy
    /// stays here, for `run`.
    pub fn hand_over(&mut self, src: *const u8, bytes: usize) -> Option<*mut u8> {
        let (from, to) = self.pending.as_ref()?;
        let (from_addr, to_addr, n) = from.byte_ranges_to(to)?;
        let apart = from_addr as usize + bytes <= to_addr as usize
            || to_addr as usize + bytes <= from_addr as usize;
        let fits = n == bytes && !self.landing.streams(bytes);
        if !(std::ptr::eq(from_addr, src) && apart && fits) {
            return None;
        }
        self.pending = None;
        Some(to_addr)
    }

    /// Copies now, unless done already.
    pub fn run(&mut self) {
        if let Some((from, to)) = self.pending.take() {
            self.ok = from.copy_to(&to, self.landing);
        }
    }

    /// Copies if not done yet; false when the copy failed (Open MPI's
    /// datatype engine refused it).
    pub fn finish(mut self) -> bool {
        self.run();
        self.ok
    }
}

/// Room for at least one basic element (the largest, a long double
/// complex, has 32 bytes).
const CARRY: usize = 64;

/// Packs a stream into pieces of exact sizes.  Open MPI's convertor stops
/// packing at a basic-element boundary, but fragments must hold exactly the
/// bytes the readers expect; an element straddling two fragments is packed
/// whole into `carry` and handed out in two parts.  (Unpacking a partial
/// element is supported by the convertor itself.)
pub struct Packer {
    conv: Convertor,
    carry: [u8; CARRY],
    at: usize,
    len: usize,
}

impl Packer {
    /// Fills `dst` with the next `len` bytes of the stream.
    ///
    /// # Safety
    /// `dst` must be writable for `len` bytes.
    unsafe fn next(&mut self, dst: *mut u8, len: usize) {
        let mut done = 0;
        while done < len {
            if self.at < self.len {
                let n = (self.len - self.at).min(len - done);
                std::ptr::copy_nonoverlapping(self.carry.as_ptr().add(self.at), dst.add(done), n);
                self.at += n;
                done += n;
                continue;
            }
            let n = self.conv.pack(dst.add(done), len - done);
            done += n;
            if n == 0 && done < len {
                // Not even one element fits: pack one into the carry.
                self.len = self.conv.pack(self.carry.as_mut_ptr(), CARRY);
                self.at = 0;
                if self.len == 0 {
                    // The stream is exhausted: cannot happen for a well-formed call.
                    std::ptr::write_bytes(dst.add(done), 0, len - done);
                    return;
                }
            }
        }
    }
}

/// Where a stream is read from or written to.
pub enum Payload {
    /// A contiguous byte range.
    Contiguous(*mut u8),
    /// Packed through a convertor (pieces must come in stream order).
    Pack(Box<Packer>),
    /// Unpacked through a convertor (pieces must come in stream order).
    Unpack(Convertor),
}

impl Payload {
    /// Fills `dst` with bytes `[offset, offset + len)` of the stream.
    ///
    /// # Safety
    /// `dst` must be writable for `len` bytes; the stream must hold them.
    pub unsafe fn read(&mut self, offset: usize, dst: *mut u8, len: usize) {
        match self {
            Payload::Contiguous(base) => copy::copy(dst, base.add(offset), len),
            Payload::Pack(packer) => packer.next(dst, len),
            Payload::Unpack(_) => unreachable!("a receive stream is never read"),
        }
    }

    /// Stores `len` bytes from `src` at stream offset `offset`.
    ///
    /// # Safety
    /// `src` must be readable for `len` bytes; the buffer must hold them.
    pub unsafe fn write(&mut self, offset: usize, src: *const u8, len: usize) {
        match self {
            Payload::Contiguous(base) => copy::copy(base.add(offset), src, len),
            Payload::Unpack(conv) => conv.unpack(src, len),
            Payload::Pack(_) => unreachable!("a send stream is never written"),
        }
    }
}

/// A buffer of p blocks, one per process: what a root receives from (gather)
/// or sends to (scatter) each process, or any side of an Allgather/Alltoall.
pub struct RootSide<'a> {
    /// The whole buffer and its datatype (the count is not used).
    pub whole: TypedBuf,
    /// Elements per block (Gather/Scatter) ...
    pub count: i32,
    /// ... or per process with displacements (the v-variants).
    pub counts: Option<(&'a [i32], &'a [i32])>,
}

impl RootSide<'_> {
    /// Every block holds the same number of elements (always for the
    /// non-v collectives; for a v-variant when all counts are equal).  The
    /// counts of an Allgatherv are significant everywhere and block j has
    /// the same type signature on every process, so for it this answer is
    /// the same on all processes without a message.
    pub fn equal_blocks(&self) -> bool {
        match self.counts {
            Some((counts, _)) => counts.windows(2).all(|w| w[0] == w[1]),
            None => true,
        }
    }

    pub fn block(&self, r: usize) -> TypedBuf {
        match self.counts {
            Some((counts, displs)) => self.whole.block(r, counts[r], Some(displs[r])),
            None => self.whole.block(r, self.count, None),
        }
    }
}
