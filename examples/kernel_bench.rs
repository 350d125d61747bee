//! sharm's reduction kernels against Open MPI's (`MPI_Reduce_local`, i.e.
//! `ompi_op_reduce`, op/avx on x86-64), in one process.  Run by
//! `ci/kernel-bench.sh`; needs no mpirun (singleton MPI_Init).
//!
//! `kernel_bench check`: for every predefined datatype handle and operation,
//!   the handle -> kind mapping of `ompi-glue/kernel_ids.c`, then sharm's
//!   result against Open MPI's on random data with ties, NaNs and ±0, byte
//!   for byte (NaN payloads aside).  Exit status 1 on an unexplained mismatch.
//! `kernel_bench bench [reps]`: GB/s table, float/double/int32 × SUM/MAX ×
//!   4 KiB … 16 MiB per operand, the five variants alternated in each
//!   repetition, median over `reps` (default 31).

use std::ffi::c_void;
use std::hint::black_box;
use std::ptr::addr_of;
use std::time::Instant;

use mca_coll_sharm::kernels::{self, supported, ElemKind, OpKind};

#[allow(non_upper_case_globals)]
extern "C" {
    fn MPI_Init(argc: *mut i32, argv: *mut *mut *mut i8) -> i32;
    fn MPI_Finalize() -> i32;
    fn MPI_Reduce_local(
        inbuf: *const c_void,
        inoutbuf: *mut c_void,
        count: i32,
        dt: *const u8,
        op: *const u8,
    ) -> i32;
    fn sharm_glue_op_kind(op: *const u8) -> i32;
    fn sharm_glue_dtype_kind(dt: *const u8) -> i32;
    fn sharm_glue_kernel_op_count() -> i32;
    fn sharm_glue_kernel_elem_count() -> i32;
    fn sharm_glue_kernel_elem_extent(kind: i32) -> i64;
    fn sharm_glue_3buff_reduce(
        op: *const u8,
        source1: *const c_void,
        source2: *const c_void,
        target: *mut c_void,
        count: i32,
        dt: *const u8,
    );
}

/// Open MPI's predefined handles are global objects; only their addresses
/// are used, so each is declared as a byte.
macro_rules! handles {
    ($($name:ident),* $(,)?) => {
        #[allow(non_upper_case_globals)]
        extern "C" { $(static $name: u8;)* }
    };
}
handles!(
    ompi_mpi_op_sum,
    ompi_mpi_op_prod,
    ompi_mpi_op_min,
    ompi_mpi_op_max,
    ompi_mpi_op_land,
    ompi_mpi_op_lor,
    ompi_mpi_op_lxor,
    ompi_mpi_op_band,
    ompi_mpi_op_bor,
    ompi_mpi_op_bxor,
    ompi_mpi_op_minloc,
    ompi_mpi_op_maxloc,
    ompi_mpi_op_replace,
    ompi_mpi_signed_char,
    ompi_mpi_unsigned_char,
    ompi_mpi_short,
    ompi_mpi_unsigned_short,
    ompi_mpi_int,
    ompi_mpi_unsigned,
    ompi_mpi_long,
    ompi_mpi_unsigned_long,
    ompi_mpi_long_long_int,
    ompi_mpi_unsigned_long_long,
    ompi_mpi_int8_t,
    ompi_mpi_uint8_t,
    ompi_mpi_int16_t,
    ompi_mpi_uint16_t,
    ompi_mpi_int32_t,
    ompi_mpi_uint32_t,
    ompi_mpi_int64_t,
    ompi_mpi_uint64_t,
    ompi_mpi_aint,
    ompi_mpi_offset,
    ompi_mpi_count,
    ompi_mpi_integer,
    ompi_mpi_integer1,
    ompi_mpi_integer2,
    ompi_mpi_integer4,
    ompi_mpi_integer8,
    ompi_mpi_float,
    ompi_mpi_double,
    ompi_mpi_long_double,
    ompi_mpi_real,
    ompi_mpi_dblprec,
    ompi_mpi_real4,
    ompi_mpi_real8,
    ompi_mpi_c_float_complex,
    ompi_mpi_c_double_complex,
    ompi_mpi_c_long_double_complex,
    ompi_mpi_cplex,
    ompi_mpi_dblcplex,
    ompi_mpi_c_bool,
    ompi_mpi_cxx_bool,
    ompi_mpi_logical,
    ompi_mpi_byte,
    ompi_mpi_float_int,
    ompi_mpi_double_int,
    ompi_mpi_long_int,
    ompi_mpi_2int,
    ompi_mpi_short_int,
    ompi_mpi_longdbl_int,
    ompi_mpi_2real,
    ompi_mpi_2dblprec,
    ompi_mpi_2integer,
    ompi_mpi_char,
    ompi_mpi_real16,
);

/// (name, handle, the kind it must map to; None = left to Open MPI).
fn datatypes() -> Vec<(&'static str, *const u8, Option<ElemKind>)> {
    use ElemKind::*;
    // Taking an extern static's address is safe; nothing reads them.
    {
        vec![
            ("MPI_SIGNED_CHAR", addr_of!(ompi_mpi_signed_char), Some(I8)),
            (
                "MPI_UNSIGNED_CHAR",
                addr_of!(ompi_mpi_unsigned_char),
                Some(U8),
            ),
            ("MPI_SHORT", addr_of!(ompi_mpi_short), Some(I16)),
            (
                "MPI_UNSIGNED_SHORT",
                addr_of!(ompi_mpi_unsigned_short),
                Some(U16),
            ),
            ("MPI_INT", addr_of!(ompi_mpi_int), Some(I32)),
            ("MPI_UNSIGNED", addr_of!(ompi_mpi_unsigned), Some(U32)),
            ("MPI_LONG", addr_of!(ompi_mpi_long), Some(I64)),
            (
                "MPI_UNSIGNED_LONG",
                addr_of!(ompi_mpi_unsigned_long),
                Some(U64),
            ),
            ("MPI_LONG_LONG", addr_of!(ompi_mpi_long_long_int), Some(I64)),
            (
                "MPI_UNSIGNED_LONG_LONG",
                addr_of!(ompi_mpi_unsigned_long_long),
                Some(U64),
            ),
            ("MPI_INT8_T", addr_of!(ompi_mpi_int8_t), Some(I8)),
            ("MPI_UINT8_T", addr_of!(ompi_mpi_uint8_t), Some(U8)),
            ("MPI_INT16_T", addr_of!(ompi_mpi_int16_t), Some(I16)),
            ("MPI_UINT16_T", addr_of!(ompi_mpi_uint16_t), Some(U16)),
            ("MPI_INT32_T", addr_of!(ompi_mpi_int32_t), Some(I32)),
            ("MPI_UINT32_T", addr_of!(ompi_mpi_uint32_t), Some(U32)),
            ("MPI_INT64_T", addr_of!(ompi_mpi_int64_t), Some(I64)),
            ("MPI_UINT64_T", addr_of!(ompi_mpi_uint64_t), Some(U64)),
            ("MPI_AINT", addr_of!(ompi_mpi_aint), Some(I64)),
            ("MPI_OFFSET", addr_of!(ompi_mpi_offset), Some(I64)),
            ("MPI_COUNT", addr_of!(ompi_mpi_count), Some(I64)),
            ("MPI_INTEGER", addr_of!(ompi_mpi_integer), Some(FortranInt4)),
            (
                "MPI_INTEGER1",
                addr_of!(ompi_mpi_integer1),
                Some(FortranInt1),
            ),
            (
                "MPI_INTEGER2",
                addr_of!(ompi_mpi_integer2),
                Some(FortranInt2),
            ),
            (
                "MPI_INTEGER4",
                addr_of!(ompi_mpi_integer4),
                Some(FortranInt4),
            ),
            (
                "MPI_INTEGER8",
                addr_of!(ompi_mpi_integer8),
                Some(FortranInt8),
            ),
            ("MPI_FLOAT", addr_of!(ompi_mpi_float), Some(F32)),
            ("MPI_DOUBLE", addr_of!(ompi_mpi_double), Some(F64)),
            (
                "MPI_LONG_DOUBLE",
                addr_of!(ompi_mpi_long_double),
                Some(LongDouble),
            ),
            ("MPI_REAL", addr_of!(ompi_mpi_real), Some(F32)),
            (
                "MPI_DOUBLE_PRECISION",
                addr_of!(ompi_mpi_dblprec),
                Some(F64),
            ),
            ("MPI_REAL4", addr_of!(ompi_mpi_real4), Some(F32)),
            ("MPI_REAL8", addr_of!(ompi_mpi_real8), Some(F64)),
            (
                "MPI_C_FLOAT_COMPLEX",
                addr_of!(ompi_mpi_c_float_complex),
                Some(ComplexF32),
            ),
            (
                "MPI_C_DOUBLE_COMPLEX",
                addr_of!(ompi_mpi_c_double_complex),
                Some(ComplexF64),
            ),
            (
                "MPI_C_LONG_DOUBLE_COMPLEX",
                addr_of!(ompi_mpi_c_long_double_complex),
                Some(ComplexLongDouble),
            ),
            ("MPI_COMPLEX", addr_of!(ompi_mpi_cplex), Some(ComplexF32)),
            (
                "MPI_DOUBLE_COMPLEX",
                addr_of!(ompi_mpi_dblcplex),
                Some(ComplexF64),
            ),
            ("MPI_C_BOOL", addr_of!(ompi_mpi_c_bool), Some(Bool)),
            ("MPI_CXX_BOOL", addr_of!(ompi_mpi_cxx_bool), Some(Bool)),
            (
                "MPI_LOGICAL",
                addr_of!(ompi_mpi_logical),
                Some(FortranLogical),
            ),
            ("MPI_BYTE", addr_of!(ompi_mpi_byte), Some(Byte)),
            (
                "MPI_FLOAT_INT",
                addr_of!(ompi_mpi_float_int),
                Some(FloatInt),
            ),
            (
                "MPI_DOUBLE_INT",
                addr_of!(ompi_mpi_double_int),
                Some(DoubleInt),
            ),
            ("MPI_LONG_INT", addr_of!(ompi_mpi_long_int), Some(LongInt)),
            ("MPI_2INT", addr_of!(ompi_mpi_2int), Some(TwoInt)),
            (
                "MPI_SHORT_INT",
                addr_of!(ompi_mpi_short_int),
                Some(ShortInt),
            ),
            (
                "MPI_LONG_DOUBLE_INT",
                addr_of!(ompi_mpi_longdbl_int),
                Some(LongDoubleInt),
            ),
            ("MPI_2REAL", addr_of!(ompi_mpi_2real), Some(TwoReal)),
            (
                "MPI_2DOUBLE_PRECISION",
                addr_of!(ompi_mpi_2dblprec),
                Some(TwoDoublePrecision),
            ),
            (
                "MPI_2INTEGER",
                addr_of!(ompi_mpi_2integer),
                Some(TwoInteger),
            ),
            ("MPI_CHAR", addr_of!(ompi_mpi_char), None),
            ("MPI_REAL16", addr_of!(ompi_mpi_real16), None),
        ]
    }
}

fn ops() -> Vec<(&'static str, *const u8, Option<OpKind>)> {
    use OpKind::*;
    {
        vec![
            ("SUM", addr_of!(ompi_mpi_op_sum), Some(Sum)),
            ("PROD", addr_of!(ompi_mpi_op_prod), Some(Prod)),
            ("MIN", addr_of!(ompi_mpi_op_min), Some(Min)),
            ("MAX", addr_of!(ompi_mpi_op_max), Some(Max)),
            ("LAND", addr_of!(ompi_mpi_op_land), Some(Land)),
            ("LOR", addr_of!(ompi_mpi_op_lor), Some(Lor)),
            ("LXOR", addr_of!(ompi_mpi_op_lxor), Some(Lxor)),
            ("BAND", addr_of!(ompi_mpi_op_band), Some(Band)),
            ("BOR", addr_of!(ompi_mpi_op_bor), Some(Bor)),
            ("BXOR", addr_of!(ompi_mpi_op_bxor), Some(Bxor)),
            ("MINLOC", addr_of!(ompi_mpi_op_minloc), Some(MinLoc)),
            ("MAXLOC", addr_of!(ompi_mpi_op_maxloc), Some(MaxLoc)),
            ("REPLACE", addr_of!(ompi_mpi_op_replace), None),
        ]
    }
}

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

/// Byte offsets inside one element that hold x87 padding (never compared).
fn padding(elem: ElemKind, off: usize) -> bool {
    match elem {
        ElemKind::LongDouble | ElemKind::ComplexLongDouble => off % 16 >= 10,
        ElemKind::LongDoubleInt => (10..16).contains(&off) || off >= 20,
        _ => false,
    }
}

/// Whether the element holds a float NaN where the bytes differ (payloads
/// may legitimately differ between implementations).
fn both_nan(elem: ElemKind, x: &[u8], y: &[u8]) -> bool {
    let nan32 = |b: &[u8]| f32::from_le_bytes(b[..4].try_into().unwrap()).is_nan();
    let nan64 = |b: &[u8]| f64::from_le_bytes(b[..8].try_into().unwrap()).is_nan();
    match elem {
        ElemKind::F32 => nan32(x) && nan32(y),
        ElemKind::F64 => nan64(x) && nan64(y),
        ElemKind::ComplexF32 => (0..2).all(|i| {
            x[i * 4..i * 4 + 4] == y[i * 4..i * 4 + 4] || (nan32(&x[i * 4..]) && nan32(&y[i * 4..]))
        }),
        ElemKind::ComplexF64 => (0..2).all(|i| {
            x[i * 8..i * 8 + 8] == y[i * 8..i * 8 + 8] || (nan64(&x[i * 8..]) && nan64(&y[i * 8..]))
        }),
        ElemKind::LongDouble => {
            x[9] & 0x7f == 0x7f && x[8] == 0xff && y[9] & 0x7f == 0x7f && y[8] == 0xff
        }
        _ => false,
    }
}

fn random_operands(rng: &mut Rng, elem: ElemKind, n: usize) -> (Vec<u8>, Vec<u8>) {
    let ext = elem.extent();
    let mut a: Vec<u8> = (0..n * ext).map(|_| rng.next() as u8).collect();
    let mut b: Vec<u8> = (0..n * ext).map(|_| rng.next() as u8).collect();
    for i in 0..n {
        let e = i * ext..(i + 1) * ext;
        match rng.next() % 16 {
            0 | 1 => b[e.clone()].copy_from_slice(&a[e.clone()]), // ties
            2 => a[e.clone()].fill(0),
            3 => b[e.clone()].fill(0),
            _ => {}
        }
        if matches!(
            elem,
            ElemKind::LongDouble | ElemKind::LongDoubleInt | ElemKind::ComplexLongDouble
        ) {
            // Keep x87 values normal (explicit integer bit set) or zero:
            // unnormals are invalid encodings, not a semantic question.
            for slot in (0..ext).step_by(16) {
                if elem == ElemKind::LongDoubleInt && slot == 16 {
                    break;
                }
                for buf in [&mut a, &mut b] {
                    let s = i * ext + slot;
                    if buf[s..s + 10].iter().any(|&x| x != 0) {
                        buf[s + 7] |= 0x80;
                        // Exponent 0x3f00..0x3fff: moderate magnitudes.
                        buf[s + 9] = (buf[s + 9] & 0x80) | 0x3f;
                    }
                }
            }
        }
        if matches!(elem, ElemKind::Bool) {
            a[i] &= 1;
            b[i] &= 1;
        }
    }
    (a, b)
}

/// Where op/avx (Open MPI 4.1.4) is known to deviate from Open MPI's base
/// operations, which sharm follows; `None` for anything else.
fn avx_deviation(op: OpKind, elem: ElemKind, a: &[u8], b: &[u8]) -> Option<&'static str> {
    let int = !matches!(elem, ElemKind::F32 | ElemKind::F64);
    let special = |x: &[u8]| match elem {
        ElemKind::F32 => {
            let v = f32::from_le_bytes(x.try_into().unwrap());
            v.is_nan() || v == 0.0
        }
        _ => {
            let v = f64::from_le_bytes(x.try_into().unwrap());
            v.is_nan() || v == 0.0
        }
    };
    match op {
        OpKind::Sum if int && elem.extent() <= 2 => Some("op/avx saturates 8/16-bit integer SUM (Open MPI issue 8045); sharm wraps"),
        OpKind::Min | OpKind::Max if !int && (special(a) || special(b)) => {
            Some("op/avx keeps the target on NaN and on ±0 ties, the base operations keep the source (sharm follows the base)")
        }
        _ => None,
    }
}

fn check(strict: bool) -> bool {
    // SAFETY: plain glue calls.
    let tables = kernels::check_c_table(
        unsafe { sharm_glue_kernel_op_count() },
        unsafe { sharm_glue_kernel_elem_count() },
        |k| unsafe { sharm_glue_kernel_elem_extent(k) },
    );
    println!("kind tables C vs Rust: {tables:?}");
    let mut ok = tables.is_ok();
    for (name, op, want) in ops() {
        // SAFETY: a predefined op handle.
        let got = OpKind::from_code(unsafe { sharm_glue_op_kind(op) });
        if got != want {
            println!("MAPPING {name}: got {got:?}, want {want:?}");
            ok = false;
        }
    }
    let mut rng = Rng(0x2545_F491_4F6C_DD1D);
    let (mut pairs, mut same, mut known) = (0, 0, 0);
    for (dname, dt, want) in datatypes() {
        // SAFETY: a predefined datatype handle.
        let got = ElemKind::from_code(unsafe { sharm_glue_dtype_kind(dt) });
        if got != want {
            println!("MAPPING {dname}: got {got:?}, want {want:?}");
            ok = false;
            continue;
        }
        let Some(elem) = got else { continue };
        for (oname, op, okind) in ops() {
            let Some(okind) = okind else { continue };
            if !supported(okind, elem) {
                continue;
            }
            pairs += 1;
            let n = 1037;
            let (a, b) = random_operands(&mut rng, elem, n);
            let mut theirs = b.clone();
            // SAFETY: n elements of dt in both buffers.
            let rc = unsafe {
                MPI_Reduce_local(
                    a.as_ptr().cast(),
                    theirs.as_mut_ptr().cast(),
                    n as i32,
                    dt,
                    op,
                )
            };
            let mut ours = vec![0u8; b.len()];
            ours.copy_from_slice(&b);
            // SAFETY: as above; fused form into a copy of b (padding as b).
            unsafe {
                kernels::reduce_into(okind, elem, a.as_ptr(), b.as_ptr(), ours.as_mut_ptr(), n)
            };
            let ext = elem.extent();
            let mut bad = Vec::new();
            for i in 0..n {
                let e = i * ext..(i + 1) * ext;
                let differs =
                    (0..ext).any(|o| !padding(elem, o) && ours[e.start + o] != theirs[e.start + o]);
                if differs && !both_nan(elem, &ours[e.clone()], &theirs[e.clone()]) {
                    bad.push(i);
                }
            }
            if rc != 0 {
                println!("{oname:6} {dname:24} Open MPI returned {rc}");
                ok = false;
            } else if bad.is_empty() {
                same += 1;
            } else {
                let i = bad[0];
                let e = i * ext..(i + 1) * ext;
                // Explained only when every differing element is.
                // Open MPI 4.1.4's datatype -> function map compares
                // MPI_UNSIGNED_LONG as signed and MPI_OFFSET (a `long long`)
                // as unsigned in MIN/MAX, with or without op/avx; sharm
                // follows the C types.
                let type_map = matches!(okind, OpKind::Min | OpKind::Max)
                    && matches!(dname, "MPI_UNSIGNED_LONG" | "MPI_OFFSET");
                let why = if type_map {
                    Some("Open MPI's MIN/MAX use the wrong signedness for this type; sharm follows the C type")
                } else if strict {
                    None
                } else {
                    let whys: Vec<Option<&str>> = bad
                        .iter()
                        .map(|&j| {
                            avx_deviation(
                                okind,
                                elem,
                                &a[j * ext..(j + 1) * ext],
                                &b[j * ext..(j + 1) * ext],
                            )
                        })
                        .collect();
                    whys.iter().all(Option::is_some).then(|| whys[0].unwrap())
                };
                println!(
                    "{oname:6} {dname:24} {} of {n} elements differ, first #{i}: a={:02x?} b={:02x?} sharm={:02x?} ompi={:02x?}  <- {}",
                    bad.len(),
                    &a[e.clone()],
                    &b[e.clone()],
                    &ours[e.clone()],
                    &theirs[e],
                    why.unwrap_or("UNEXPLAINED")
                );
                if why.is_some() {
                    known += 1
                } else {
                    ok = false
                }
            }
        }
    }
    println!("check: {pairs} (op, datatype) pairs, {same} identical to Open MPI, {known} differ only by the Open MPI deviations listed, {}", if ok { "OK" } else { "FAILED" });
    ok
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}

fn bench(reps: usize) {
    let types: [(&str, *const u8, ElemKind); 3] = {
        [
            ("float", addr_of!(ompi_mpi_float), ElemKind::F32),
            ("double", addr_of!(ompi_mpi_double), ElemKind::F64),
            ("int32", addr_of!(ompi_mpi_int), ElemKind::I32),
        ]
    };
    let sum = addr_of!(ompi_mpi_op_sum);
    let max = addr_of!(ompi_mpi_op_max);
    // SHARM_KERNEL_STREAM_FROM=bytes overrides from which output size the
    // fused AVX-512 kernels store non-temporally (huge = never).
    if let Some(v) = std::env::var("SHARM_KERNEL_STREAM_FROM")
        .ok()
        .and_then(|v| v.parse().ok())
    {
        kernels::isa::set_stream_threshold(v);
    }
    println!("isa: {:?}; GB/s = 3 x bytes per operand / time (two operands read, one result written), median of {reps}; fused calls stream from {} bytes", kernels::isa::detect(), kernels::isa::stream_threshold());
    println!("in place: b = a op b, MPI_Reduce_local (op/avx) vs sharm's kernel; fused: out = a op b, Open MPI's way (copy b to out, MPI_Reduce_local(a, out)) vs sharm's one pass; fused/inpl: sharm fused vs one in-place MPI_Reduce_local (which computes less: no third buffer); 3buff: Open MPI's own three-buffer kernel (ompi_3buff_op_reduce, op/avx), which Open MPI's collectives do not use for these folds, and sharm fused against it");
    println!(
        "{:6} {:4} {:>8} | {:>9} {:>9} {:>6} | {:>10} {:>9} {:>6} | {:>9} | {:>10} {:>6}",
        "type",
        "op",
        "bytes",
        "ompi inpl",
        "sharm inpl",
        "ratio",
        "ompi cp+fold",
        "sharm fused",
        "ratio",
        "fused/inpl",
        "ompi 3buff",
        "ratio"
    );
    for (tname, dt, elem) in types {
        for (oname, op, okind) in [("SUM", sum, OpKind::Sum), ("MAX", max, OpKind::Max)] {
            let k = kernels::kernel(okind, elem).unwrap();
            for bytes in [4 << 10, 64 << 10, 1 << 20, 16 << 20] {
                let n = bytes / elem.extent();
                // Realistic operands: normal numbers of both signs with
                // magnitudes in [0.5, 1.5) (no zeros, subnormals, NaNs or
                // infinities, which could make either side slow); the
                // repeated in-place SUMs move b by at most ~1e6, still
                // normal.  Integers: small values of both signs.
                let value = |i: usize, k: usize| {
                    let m = 0.5 + ((i * 7 + k * 13) % 1000) as f64 / 1000.0;
                    if (i + k).is_multiple_of(3) {
                        -m
                    } else {
                        m
                    }
                };
                let operand = |k: usize| -> Vec<u8> {
                    (0..n)
                        .flat_map(|i| match elem {
                            ElemKind::F32 => (value(i, k) as f32).to_le_bytes().to_vec(),
                            ElemKind::F64 => value(i, k).to_le_bytes().to_vec(),
                            _ => ((value(i, k) * 1000.0) as i32).to_le_bytes().to_vec(),
                        })
                        .collect()
                };
                let a = operand(1);
                let mut b = operand(2);
                assert!(a.chunks(elem.extent()).chain(b.chunks(elem.extent())).all(
                    |x| match elem {
                        ElemKind::F32 => f32::from_le_bytes(x.try_into().unwrap()).is_normal(),
                        ElemKind::F64 => f64::from_le_bytes(x.try_into().unwrap()).is_normal(),
                        _ => true,
                    }
                ));
                let mut out = vec![0u8; bytes];
                let iters = ((64 << 20) / bytes).clamp(1, 4096);
                let mut t = [vec![], vec![], vec![], vec![], vec![]];
                let time = |f: &mut dyn FnMut()| {
                    let s = Instant::now();
                    for _ in 0..iters {
                        f();
                    }
                    s.elapsed().as_secs_f64() / iters as f64
                };
                for _ in 0..reps {
                    // SAFETY (all five): n elements in every buffer.
                    t[0].push(time(&mut || unsafe {
                        MPI_Reduce_local(
                            a.as_ptr().cast(),
                            b.as_mut_ptr().cast(),
                            n as i32,
                            dt,
                            op,
                        );
                    }));
                    t[1].push(time(&mut || unsafe {
                        k(a.as_ptr(), b.as_ptr(), b.as_mut_ptr(), n)
                    }));
                    t[2].push(time(&mut || unsafe {
                        out.copy_from_slice(black_box(&b));
                        MPI_Reduce_local(
                            a.as_ptr().cast(),
                            out.as_mut_ptr().cast(),
                            n as i32,
                            dt,
                            op,
                        );
                    }));
                    t[3].push(time(&mut || unsafe {
                        k(a.as_ptr(), b.as_ptr(), out.as_mut_ptr(), n)
                    }));
                    t[4].push(time(&mut || unsafe {
                        sharm_glue_3buff_reduce(
                            op,
                            a.as_ptr().cast(),
                            b.as_ptr().cast(),
                            out.as_mut_ptr().cast(),
                            n as i32,
                            dt,
                        )
                    }));
                    black_box(&out);
                }
                let g: Vec<f64> = t
                    .iter_mut()
                    .map(|v| 3.0 * bytes as f64 / median(v) / 1e9)
                    .collect();
                println!("{tname:6} {oname:4} {:>8} | {:>9.1} {:>10.1} {:>6.2} | {:>12.1} {:>11.1} {:>6.2} | {:>10.2} | {:>10.1} {:>6.2}", bytes, g[0], g[1], g[1] / g[0], g[2], g[3], g[3] / g[2], g[3] / g[0], g[4], g[3] / g[4]);
            }
        }
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    // SAFETY: singleton MPI initialisation without arguments.
    unsafe { MPI_Init(std::ptr::null_mut(), std::ptr::null_mut()) };
    let ok = match args.get(1).map(String::as_str) {
        Some("bench") => {
            bench(args.get(2).and_then(|r| r.parse().ok()).unwrap_or(31));
            true
        }
        Some("check") | None => check(args.get(2).is_some_and(|m| m == "strict")),
        Some(other) => {
            eprintln!("usage: kernel_bench [check [strict] | bench [reps]] (not {other})");
            false
        }
    };
    // SAFETY: matching MPI_Init above.
    unsafe { MPI_Finalize() };
    std::process::exit(if ok { 0 } else { 1 });
}
