//! How sharm moves the elements of a datatype: pure decisions on the numbers
//! Open MPI reports (no Open MPI calls here).

use crate::kernels::copy;
use crate::ompi::ffi::DtypeInfo;

/// How a data-movement operation (Bcast, Gather, ...) reads or writes a
/// user buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Movement {
    /// The elements are one byte range starting `offset` bytes from the buffer.
    Contiguous { offset: isize },
    /// Pack / unpack through Open MPI's convertor.
    Packed,
}

/// Bytes of `count` elements of `info` (None on overflow).
pub fn message_bytes(info: &DtypeInfo, count: i32) -> Option<u64> {
    u64::try_from(count).ok()?.checked_mul(info.size)
}

pub fn movement(info: &DtypeInfo, contiguous: bool) -> Movement {
    if contiguous {
        Movement::Contiguous {
            offset: info.true_lb as isize,
        }
    } else {
        Movement::Packed
    }
}

/// Layout of a reduction buffer: `count` elements of `size` data bytes each,
/// `extent` bytes apart, starting at the buffer address.  Elements may carry
/// trailing padding (MPI_DOUBLE_INT: 12 data bytes, extent 16); the padding
/// is carried along inside a fragment but never written into a user buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReduceLayout {
    pub count: usize,
    pub size: usize,
    pub extent: usize,
}

/// Why sharm cannot reduce a call's elements (it goes to the next component).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unreducible {
    /// A predefined operation on a derived datatype (Open MPI's own
    /// kernels expect predefined types).
    DerivedWithPredefinedOp,
    NonContiguous,
    ExtentBelowSize,
    /// More elements in all than sharm's 32-bit counts hold.
    TooMany(usize),
}

impl std::fmt::Display for Unreducible {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Unreducible::DerivedWithPredefinedOp => {
                write!(f, "a predefined operation on a derived datatype")
            }
            Unreducible::NonContiguous => write!(f, "a reduction on a non-contiguous datatype"),
            Unreducible::ExtentBelowSize => {
                write!(f, "a datatype whose extent is smaller than its size")
            }
            Unreducible::TooMany(n) => {
                write!(
                    f,
                    "{n} elements in all exceed the 32-bit count sharm handles"
                )
            }
        }
    }
}

impl ReduceLayout {
    /// The layout of `count` elements of `info` reduced with a predefined
    /// (`op_intrinsic`) or user operation, or why sharm cannot reduce them.
    /// A property of the call alone; whether an element fits a fragment is
    /// the channel's question ([`ReduceLayout::fits`]).
    pub fn of(info: &DtypeInfo, count: usize, op_intrinsic: bool) -> Result<Self, Unreducible> {
        if op_intrinsic && info.predefined == 0 {
            return Err(Unreducible::DerivedWithPredefinedOp);
        }
        if info.contiguous1 == 0
            || info.lb != 0
            || info.true_lb != 0
            || info.true_extent as u64 != info.size
        {
            return Err(Unreducible::NonContiguous);
        }
        if info.extent < info.size as i64 {
            return Err(Unreducible::ExtentBelowSize);
        }
        if i32::try_from(count).is_err() {
            return Err(Unreducible::TooMany(count));
        }
        Ok(ReduceLayout {
            count,
            size: info.size as usize,
            extent: info.extent as usize,
        })
    }

    /// Whether whole elements fit fragments of `f` bytes; `Err` says why not.
    pub fn fits(&self, f: usize) -> Result<(), String> {
        if self.extent > f {
            return Err(format!(
                "an element of {} bytes is larger than a fragment ({f} bytes)",
                self.extent
            ));
        }
        Ok(())
    }

    /// Whole elements per fragment of `f` bytes.
    pub fn per_fragment(&self, f: usize) -> usize {
        // The last element of a fragment needs only `size` bytes.
        ((f - self.size) / self.extent + 1).max(1)
    }

    /// Bytes spanned by `n` consecutive elements (no trailing padding).
    pub fn span(&self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (n - 1) * self.extent + self.size
        }
    }

    pub fn dense(&self) -> bool {
        self.extent == self.size
    }

    /// Fragment `i`: (first element, element count, byte offset, byte length).
    pub fn fragment(&self, i: usize, f: usize) -> (usize, usize, usize, usize) {
        // A reduction that fits one fragment (every small one) is fragment
        // 0 whole, without the divisions of `per_fragment`.
        let whole = self.span(self.count);
        if i == 0 && whole <= f {
            return (0, self.count, 0, whole);
        }
        let g = self.per_fragment(f);
        let first = i * g;
        let n = g.min(self.count - first);
        (first, n, first * self.extent, self.span(n))
    }

    pub fn fragments(&self, f: usize) -> usize {
        if self.span(self.count) <= f {
            return usize::from(self.count > 0);
        }
        self.count.div_ceil(self.per_fragment(f))
    }

    /// Copies `n` elements from `src` to a user buffer `dst`, leaving the
    /// padding bytes of `dst` untouched.
    ///
    /// # Safety
    /// `src` and `dst` must hold `span(n)` bytes and not overlap.
    pub unsafe fn copy_to_user(&self, dst: *mut u8, src: *const u8, n: usize) {
        if self.dense() {
            copy::copy(dst, src, self.span(n));
        } else {
            for e in 0..n {
                std::ptr::copy_nonoverlapping(
                    src.add(e * self.extent),
                    dst.add(e * self.extent),
                    self.size,
                );
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(size: u64, extent: i64) -> DtypeInfo {
        DtypeInfo {
            size,
            lb: 0,
            extent,
            true_lb: 0,
            true_extent: size as i64,
            predefined: 1,
            contiguous1: 1,
            contiguous_n: (extent == size as i64) as i64,
        }
    }

    #[test]
    fn fragments_hold_whole_elements() {
        let l = ReduceLayout::of(&info(4, 4), 5000, true).unwrap();
        assert_eq!(l.per_fragment(8192), 2048);
        assert_eq!(l.fragments(8192), 3);
        assert_eq!(l.fragment(2, 8192), (4096, 904, 16384, 3616));
        // An element size that does not divide f.
        let l = ReduceLayout::of(&info(12, 12), 1000, true).unwrap();
        let g = l.per_fragment(8192);
        assert!(g * 12 <= 8192 && (g + 1) * 12 > 8192);
        let total: usize = (0..l.fragments(8192)).map(|i| l.fragment(i, 8192).1).sum();
        assert_eq!(total, 1000);
    }

    #[test]
    fn padded_elements() {
        // MPI_DOUBLE_INT: 12 data bytes, extent 16.
        let l = ReduceLayout::of(&info(12, 16), 3, true).unwrap();
        assert_eq!(l.per_fragment(64), 4);
        assert_eq!(l.span(3), 44);
        let src: Vec<u8> = (0..48).collect();
        let mut dst = vec![0xffu8; 48];
        unsafe { l.copy_to_user(dst.as_mut_ptr(), src.as_ptr(), 3) };
        assert_eq!(&dst[0..12], &src[0..12]);
        assert_eq!(&dst[12..16], &[0xff; 4]);
        assert_eq!(&dst[32..44], &src[32..44]);
    }

    #[test]
    fn refusals() {
        let mut gap = info(8, 8);
        gap.contiguous1 = 0;
        assert_eq!(
            ReduceLayout::of(&gap, 1, true),
            Err(Unreducible::NonContiguous)
        );
        let mut derived = info(8, 8);
        derived.predefined = 0;
        assert_eq!(
            ReduceLayout::of(&derived, 1, true),
            Err(Unreducible::DerivedWithPredefinedOp)
        );
        assert!(ReduceLayout::of(&derived, 1, false).is_ok());
        let big = ReduceLayout::of(&info(16384, 16384), 1, false).unwrap();
        assert!(big.fits(8192).is_err() && big.fits(16384).is_ok());
        assert_eq!(
            ReduceLayout::of(&info(4, 4), 1 << 31, true),
            Err(Unreducible::TooMany(1 << 31))
        );
        let mut shifted = info(8, 8);
        shifted.true_lb = 4;
        assert!(ReduceLayout::of(&shifted, 1, true).is_err());
    }

    #[test]
    fn message_sizes() {
        assert_eq!(message_bytes(&info(8, 8), 0), Some(0));
        assert_eq!(message_bytes(&info(0, 0), 5), Some(0));
        assert_eq!(
            message_bytes(&info(1 << 30, 1 << 30), i32::MAX),
            Some((1u64 << 30) * i32::MAX as u64)
        );
        assert_eq!(message_bytes(&info(1 << 40, 1 << 40), i32::MAX), None);
        assert_eq!(message_bytes(&info(8, 8), -1), None);
    }
}
