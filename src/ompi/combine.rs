//! Who combines two operands of a reduction: sharm's own kernels
//! (`crate::kernels`) for a predefined operation on a predefined datatype,
//! or Open MPI's `ompi_op_reduce` for everything else (user operations,
//! derived datatypes, the pairs the kernels leave out) and when
//! `coll_sharm_reduction_kernels` is `ompi`.
//!
//! Both paths use Open MPI's operand order: `fold(src, acc)` computes
//! `acc = src op acc`.  The choice depends only on the operation, the
//! datatype and the parameter all processes agreed on, so every process
//! combines alike and results stay bit-identical across processes.

use std::sync::OnceLock;

use crate::kernels::{self, copy, ElemKind, Kernel, OpKind};
use crate::ompi::ffi::{self, Dtype, Op};
use crate::ompi::params::KernelSource;

/// Whether the glue's kernel kind codes agree with the kernels' own
/// (checked once per process; on a mismatch only Open MPI's path is used).
fn tables_agree() -> bool {
    static AGREE: OnceLock<bool> = OnceLock::new();
    *AGREE.get_or_init(|| {
        let (ops, elems, extent) = ffi::kernel_tables();
        match kernels::check_c_table(ops, elems, extent) {
            Ok(()) => true,
            Err(e) => {
                tracing::warn!("reduction kernels off: {e}");
                false
            }
        }
    })
}

/// How one call's operands are combined.
#[derive(Clone, Copy, Debug)]
pub struct Combiner {
    pub op: Op,
    pub dtype: Dtype,
    /// sharm's kernel, when it serves this operation and datatype.
    kernel: Option<Kernel>,
}

/// The combiner of the last reduction whose operation and datatype were
/// both predefined, kept by the one channel that owns it: the next call
/// with the same pair skips the lookups (two questions to Open MPI, one of
/// them a table search, and the kernel table), a tenth of an 8-byte
/// reduction's time.
///
/// Keyed by the handles' addresses.  That is sound only because predefined
/// operations and datatypes live as long as MPI: no operation or datatype
/// the application creates and frees can later sit at their addresses.
/// So a pair with a user operation or a derived datatype is never
/// remembered, and never matches.
#[derive(Default)]
pub struct CombinerMemo {
    last: Option<(KernelSource, Combiner)>,
}

impl CombinerMemo {
    /// The combiner of `op` on `dtype`; `predefined`: both are predefined.
    pub fn get(
        &mut self,
        op: Op,
        dtype: Dtype,
        source: KernelSource,
        predefined: bool,
    ) -> Combiner {
        match self.last {
            Some((s, c)) if s == source && c.op.0 == op.0 && c.dtype.0 == dtype.0 => c,
            _ => {
                let c = Combiner::new(op, dtype, source);
                if predefined {
                    self.last = Some((source, c));
                }
                c
            }
        }
    }
}

impl Combiner {
    pub fn new(op: Op, dtype: Dtype, source: KernelSource) -> Combiner {
        let kernel = match source {
            KernelSource::Sharm if tables_agree() => {
                match (
                    OpKind::from_code(op.kernel_code()),
                    ElemKind::from_code(dtype.kernel_code()),
                ) {
                    (Some(o), Some(e)) => kernels::kernel(o, e),
                    _ => None,
                }
            }
            _ => None,
        };
        tracing::trace!(
            "{} on {}: {}",
            op.name(),
            dtype.name(),
            if kernel.is_some() {
                "sharm's reduction kernel"
            } else {
                "Open MPI's ompi_op_reduce"
            }
        );
        Combiner { op, dtype, kernel }
    }

    /// Whether sharm's own kernel combines (for tests and messages).
    pub fn own_kernel(&self) -> bool {
        self.kernel.is_some()
    }

    /// `acc[i] = src[i] op acc[i]` for `n` elements.
    ///
    /// # Safety
    /// `src` readable and `acc` readable and writable for `n` elements of the
    /// datatype, not partially overlapping.
    pub unsafe fn fold(&self, src: *const u8, acc: *mut u8, n: usize) {
        match self.kernel {
            Some(k) => k(src, acc, acc, n),
            None => self.op.reduce(src, acc, n, self.dtype),
        }
    }

    /// `out[i] = a[i] op b[i]` for `n` elements of `bytes` bytes in all: one
    /// pass with sharm's kernel; with Open MPI's, a copy of `b` and a fold.
    ///
    /// # Safety
    /// `a`, `b` readable and `out` writable for `n` elements (`bytes` bytes);
    /// `out` may equal `a` or `b` exactly but must not partially overlap them.
    pub unsafe fn fused(&self, a: *const u8, b: *const u8, out: *mut u8, n: usize, bytes: usize) {
        match self.kernel {
            Some(k) => k(a, b, out, n),
            None => {
                if out.cast_const() == a {
                    // out = a op b with Open MPI's target = source op target:
                    // stage b, fold a into it, move it back.
                    let mut staged = std::slice::from_raw_parts(b, bytes).to_vec();
                    self.op.reduce(a, staged.as_mut_ptr(), n, self.dtype);
                    copy::copy(out, staged.as_ptr(), bytes);
                } else {
                    if out.cast_const() != b {
                        copy::copy(out, b, bytes);
                    }
                    self.op.reduce(a, out, n, self.dtype);
                }
            }
        }
    }
}
