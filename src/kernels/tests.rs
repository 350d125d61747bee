//! Every supported (operation, element) pair at every instruction-set level
//! this CPU runs, against a scalar reference written independently of the
//! kernels (integers through i128, f32 through f64, explicit NaN rules),
//! over lengths 0..=67 and two long ones, unaligned buffers, and the three
//! aliasings `out` distinct, `out == a`, `out == b`.

use super::*;

/// `r.is_multiple_of(d)`, which needs Rust 1.87: ci/cross-check.sh builds
/// these tests with Debian 13's rustc 1.85 to run them on aarch64.
#[allow(clippy::manual_is_multiple_of)] // the lint's suggestion is that method
fn divisible(r: u64, d: u64) -> bool {
    r % d == 0
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

/// Storage of an element-wise kind: (bytes, signed, float).
fn storage(elem: ElemKind) -> Option<(usize, bool, bool)> {
    use ElemKind::*;
    Some(match elem {
        I8 | FortranInt1 => (1, true, false),
        U8 | Bool | Byte => (1, false, false),
        I16 | FortranInt2 => (2, true, false),
        U16 => (2, false, false),
        I32 | FortranInt4 | FortranLogical => (4, true, false),
        U32 => (4, false, false),
        I64 | FortranInt8 => (8, true, false),
        U64 => (8, false, false),
        F32 => (4, true, true),
        F64 => (8, true, true),
        _ => return None,
    })
}

fn int_of(bytes: &[u8], signed: bool) -> i128 {
    let mut v = [0u8; 16];
    v[..bytes.len()].copy_from_slice(bytes);
    let u = u128::from_le_bytes(v);
    let bits = bytes.len() * 8;
    if signed && (u >> (bits - 1)) & 1 == 1 {
        (u as i128) - (1i128 << bits)
    } else {
        u as i128
    }
}

fn int_ref(op: OpKind, a: i128, b: i128) -> i128 {
    let t = |x: bool| x as i128;
    match op {
        OpKind::Sum => a + b,
        OpKind::Prod => a.wrapping_mul(b),
        OpKind::Min => a.min(b),
        OpKind::Max => a.max(b),
        OpKind::Land => t(a != 0 && b != 0),
        OpKind::Lor => t(a != 0 || b != 0),
        OpKind::Lxor => t((a != 0) != (b != 0)),
        OpKind::Band => a & b,
        OpKind::Bor => a | b,
        OpKind::Bxor => a ^ b,
        _ => unreachable!(),
    }
}

/// MIN/MAX as Open MPI defines them: the target `b` only when strictly
/// better, so NaN anywhere or equality gives the source `a`.
fn minmax_ref(op: OpKind, a: f64, b: f64) -> f64 {
    if a.is_nan() || b.is_nan() || a == b {
        return a;
    }
    match op {
        OpKind::Min => a.min(b),
        _ => a.max(b),
    }
}

fn float_ref(op: OpKind, width: usize, a: &[u8], b: &[u8]) -> Vec<u8> {
    if width == 4 {
        let (x, y) = (
            f32::from_le_bytes(a.try_into().unwrap()) as f64,
            f32::from_le_bytes(b.try_into().unwrap()) as f64,
        );
        // f64 holds f32 sums and products exactly: one rounding, to f32.
        let r = match op {
            OpKind::Sum => x + y,
            OpKind::Prod => x * y,
            _ => minmax_ref(op, x, y),
        };
        // Keep the exact winner's bits for MIN/MAX (NaN payload, -0).
        let pick = |v: f64| if v.to_bits() == x.to_bits() { a } else { b };
        match op {
            OpKind::Min | OpKind::Max => pick(r).to_vec(),
            _ => (r as f32).to_le_bytes().to_vec(),
        }
    } else {
        let (x, y) = (
            f64::from_le_bytes(a.try_into().unwrap()),
            f64::from_le_bytes(b.try_into().unwrap()),
        );
        match op {
            OpKind::Sum => (x + y).to_le_bytes().to_vec(),
            OpKind::Prod => (x * y).to_le_bytes().to_vec(),
            _ => {
                let r = minmax_ref(op, x, y);
                if r.to_bits() == x.to_bits() { a } else { b }.to_vec()
            }
        }
    }
}

/// Element bytes of one reference result (element-wise kinds).
fn elem_ref(op: OpKind, elem: ElemKind, a: &[u8], b: &[u8]) -> Vec<u8> {
    let (w, signed, float) = storage(elem).unwrap();
    if float {
        return float_ref(op, w, a, b);
    }
    let r = int_ref(op, int_of(a, signed), int_of(b, signed));
    r.to_le_bytes()[..w].to_vec()
}

/// Random element bytes; floats draw from a pool rich in NaN, ±0, ±inf and
/// repeated values so that MIN/MAX meet every special case.
fn fill(rng: &mut Rng, elem: ElemKind, buf: &mut [u8]) {
    match elem {
        ElemKind::F32 => {
            let pool = [
                0.0f32,
                -0.0,
                1.5,
                -2.25,
                f32::NAN,
                -f32::NAN,
                f32::INFINITY,
                f32::NEG_INFINITY,
                3.0e38,
                1.0e-45,
            ];
            for c in buf.chunks_exact_mut(4) {
                let r = rng.next();
                let v = if divisible(r, 3) {
                    f32::from_bits(r as u32 >> 1)
                } else {
                    pool[(r >> 8) as usize % pool.len()]
                };
                c.copy_from_slice(&v.to_le_bytes());
            }
        }
        ElemKind::F64 => {
            let pool = [
                0.0f64,
                -0.0,
                1.5,
                -2.25,
                f64::NAN,
                -f64::NAN,
                f64::INFINITY,
                f64::NEG_INFINITY,
                1.0e308,
                5e-324,
            ];
            for c in buf.chunks_exact_mut(8) {
                let r = rng.next();
                let v = if divisible(r, 3) {
                    f64::from_bits(r >> 2)
                } else {
                    pool[(r >> 8) as usize % pool.len()]
                };
                c.copy_from_slice(&v.to_le_bytes());
            }
        }
        _ => {
            // Integers: mostly the limits and 0/1 so wrapping and truthiness
            // are exercised, some random.
            let w = elem.extent();
            for c in buf.chunks_exact_mut(w) {
                let r = rng.next();
                let v: u64 = match r % 6 {
                    0 => 0,
                    1 => 1,
                    2 => u64::MAX,                              // -1 / max unsigned
                    3 => 1u64 << (w * 8 - 1),                   // signed min
                    4 => (1u64 << (w * 8 - 1)).wrapping_sub(1), // signed max
                    _ => r >> 3,
                };
                c.copy_from_slice(&v.to_le_bytes()[..w]);
            }
        }
    }
}

fn same_elem(elem: ElemKind, got: &[u8], want: &[u8]) -> bool {
    // Two NaNs match whatever their payloads: the payload that survives
    // when both operands are NaN is the hardware's choice.
    match elem {
        ElemKind::F32 => {
            let (g, w) = (
                f32::from_le_bytes(got.try_into().unwrap()),
                f32::from_le_bytes(want.try_into().unwrap()),
            );
            g.to_bits() == w.to_bits() || (g.is_nan() && w.is_nan())
        }
        ElemKind::F64 => {
            let (g, w) = (
                f64::from_le_bytes(got.try_into().unwrap()),
                f64::from_le_bytes(want.try_into().unwrap()),
            );
            g.to_bits() == w.to_bits() || (g.is_nan() && w.is_nan())
        }
        _ => got == want,
    }
}

/// Expected element bytes from (a, b, out before the call).
type Want<'a> = &'a dyn Fn(&[u8], &[u8], &[u8]) -> Vec<u8>;

/// Runs `k` on a, b with `out` distinct, equal to a, equal to b, all at
/// byte offset `shift` from an allocation, and checks every element.
#[allow(clippy::too_many_arguments)] // one test helper, all inputs of a case
fn check_forms(
    k: Kernel,
    elem: ElemKind,
    n: usize,
    shift: usize,
    a: &[u8],
    b: &[u8],
    want: Want,
    what: &str,
) {
    let w = elem.extent();
    let bytes = n * w;
    let mut abuf = vec![0u8; bytes + shift];
    let mut bbuf = vec![0u8; bytes + shift];
    let mut obuf = vec![0xA5u8; bytes + shift];
    for form in 0..3 {
        abuf[shift..].copy_from_slice(a);
        bbuf[shift..].copy_from_slice(b);
        obuf[shift..].fill(0xA5);
        let before_out: Vec<u8> = match form {
            0 => obuf[shift..].to_vec(),
            1 => a.to_vec(),
            _ => b.to_vec(),
        };
        // SAFETY: buffers hold n elements after `shift`; the out pointer is
        // either its own buffer or exactly one of the inputs.
        unsafe {
            let pa = abuf.as_ptr().add(shift);
            let pb = bbuf.as_ptr().add(shift);
            let po = match form {
                0 => obuf.as_mut_ptr().add(shift),
                1 => abuf.as_mut_ptr().add(shift),
                _ => bbuf.as_mut_ptr().add(shift),
            };
            k(pa, pb, po, n);
        }
        let got = match form {
            0 => &obuf[shift..],
            1 => &abuf[shift..],
            _ => &bbuf[shift..],
        };
        for i in 0..n {
            let r = i * w..(i + 1) * w;
            let exp = want(&a[r.clone()], &b[r.clone()], &before_out[r.clone()]);
            assert!(
                same_elem(elem, &got[r.clone()], &exp),
                "{what} n={n} shift={shift} form={form} i={i}: a={:?} b={:?} got {:?} want {:?}",
                &a[r.clone()],
                &b[r.clone()],
                &got[r],
                exp
            );
        }
    }
}

const LENGTHS: &[usize] = &[1000, 4099];

fn lengths() -> impl Iterator<Item = usize> {
    (0..=67).chain(LENGTHS.iter().copied())
}

#[test]
fn elementwise_kinds_match_reference_at_every_isa() {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let mut checked = 0;
    for elem in ElemKind::ALL {
        if storage(elem).is_none() {
            continue;
        }
        for op in OpKind::ALL {
            for isa in isa::available() {
                let Some(k) = kernel_at(op, elem, isa) else {
                    assert!(
                        !supported(op, elem),
                        "{op:?} {elem:?} supported but no kernel"
                    );
                    continue;
                };
                for n in lengths() {
                    let mut a = vec![0u8; n * elem.extent()];
                    let mut b = vec![0u8; n * elem.extent()];
                    fill(&mut rng, elem, &mut a);
                    fill(&mut rng, elem, &mut b);
                    let shift = n % 7 + usize::from(n % 2 == 0);
                    let want = |x: &[u8], y: &[u8], _: &[u8]| elem_ref(op, elem, x, y);
                    check_forms(
                        k,
                        elem,
                        n,
                        shift,
                        &a,
                        &b,
                        &want,
                        &format!("{op:?} {elem:?} {isa:?}"),
                    );
                    checked += 1;
                }
            }
        }
    }
    assert!(checked > 1000, "only {checked} cases ran");
    println!(
        "{checked} (operation, type, level, length) cases, 3 aliasings each, match the reference"
    );
}

/// On aarch64 the baseline is the only level (`isa::probe`), and it is NEON
/// code: Advanced SIMD is part of the aarch64 baseline, so `run_base` is
/// compiled with it and the compiler vectorises its loop into NEON
/// instructions (ci/cross-check.sh counts them in this test binary's
/// `run_base` functions, then runs these tests under qemu-aarch64).  Fails
/// when the kernels were compiled without NEON, when the CPU (or emulator)
/// does not report it, or when the selection offers another level.
#[cfg(target_arch = "aarch64")]
#[test]
fn aarch64_kernels_are_neon() {
    assert!(
        cfg!(target_feature = "neon"),
        "kernels compiled without NEON: run_base would be scalar code"
    );
    assert!(
        std::arch::is_aarch64_feature_detected!("neon"),
        "this CPU does not report NEON (asimd)"
    );
    assert_eq!(isa::detect(), Isa::Base);
    assert_eq!(isa::available(), [Isa::Base]);
    println!(
        "aarch64 kernel level: {:?} = NEON (compiled with target_feature neon, CPU reports asimd)",
        isa::detect()
    );
}

#[test]
fn wrapping_and_special_values() {
    // Explicit expectations, independent of the reference above.
    let run = |op: OpKind, elem: ElemKind, a: &[u8], b: &[u8]| -> Vec<u8> {
        let mut out = vec![0u8; b.len()];
        // SAFETY: equal lengths of whole elements.
        assert!(unsafe {
            reduce_into(
                op,
                elem,
                a.as_ptr(),
                b.as_ptr(),
                out.as_mut_ptr(),
                b.len() / elem.extent(),
            )
        });
        out
    };
    // 8-bit SUM wraps over 64 elements (op/avx saturates: issue 8045).
    let a = vec![100u8; 64];
    assert_eq!(run(OpKind::Sum, ElemKind::I8, &a, &a), vec![200u8; 64]); // -56 as i8
    assert_eq!(
        run(OpKind::Sum, ElemKind::U8, &[255; 64], &[2; 64]),
        vec![1u8; 64]
    );
    let m = i64::MAX.to_le_bytes().repeat(20);
    assert_eq!(
        run(
            OpKind::Sum,
            ElemKind::I64,
            &m,
            &1i64.to_le_bytes().repeat(20)
        ),
        i64::MIN.to_le_bytes().repeat(20)
    );
    // MAX/MIN: NaN in either operand and ±0 ties give the source (a).
    let f = |v: &[f32]| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
    let src = f(&[f32::NAN, 1.0, 0.0, -0.0, 2.0].repeat(20));
    let dst = f(&[1.0, f32::NAN, -0.0, 0.0, 3.0].repeat(20));
    let got = run(OpKind::Max, ElemKind::F32, &src, &dst);
    for (i, c) in got.chunks_exact(4).enumerate() {
        let v = f32::from_le_bytes(c.try_into().unwrap());
        match i % 5 {
            0 => assert!(v.is_nan()),
            1 => assert_eq!(v, 1.0),
            2 => assert!(v == 0.0 && v.is_sign_positive()),
            3 => assert!(v == 0.0 && v.is_sign_negative()),
            _ => assert_eq!(v, 3.0),
        }
    }
    let got = run(OpKind::Min, ElemKind::F32, &src, &dst);
    assert_eq!(f32::from_le_bytes(got[16..20].try_into().unwrap()), 2.0);
    assert!(f32::from_le_bytes(got[8..12].try_into().unwrap()).is_sign_positive());
    // LAND/LXOR on ints and bools give 0/1.
    assert_eq!(
        run(
            OpKind::Land,
            ElemKind::I32,
            &7i32.to_le_bytes(),
            &(-3i32).to_le_bytes()
        ),
        1i32.to_le_bytes()
    );
    assert_eq!(
        run(OpKind::Lxor, ElemKind::Bool, &[2, 0, 1], &[1, 0, 0]),
        vec![0, 0, 1]
    );
}

#[test]
fn supported_follows_the_standard() {
    use ElemKind::*;
    assert!(!supported(OpKind::Band, F32));
    assert!(!supported(OpKind::Min, ComplexF64));
    assert!(!supported(OpKind::Land, FortranInt4));
    assert!(
        supported(OpKind::Land, I32)
            && supported(OpKind::Land, Bool)
            && supported(OpKind::Lor, FortranLogical)
    );
    assert!(
        !supported(OpKind::Sum, Bool)
            && !supported(OpKind::Sum, Byte)
            && supported(OpKind::Bxor, Byte)
    );
    assert!(
        !supported(OpKind::MaxLoc, F64)
            && supported(OpKind::MaxLoc, DoubleInt)
            && !supported(OpKind::Sum, TwoInt)
    );
    for op in OpKind::ALL {
        assert_eq!(OpKind::from_code(op as i32), Some(op));
        for elem in ElemKind::ALL {
            assert_eq!(ElemKind::from_code(elem as i32), Some(elem));
            assert_eq!(
                kernel(op, elem).is_some(),
                supported(op, elem),
                "{op:?} {elem:?}"
            );
        }
    }
    assert_eq!(OpKind::from_code(OP_KIND_COUNT), None);
    assert_eq!(ElemKind::from_code(-1), None);
}

#[test]
fn c_table_check_catches_mismatches() {
    let ok = |code: i32| ElemKind::from_code(code).unwrap().extent() as i64;
    assert!(check_c_table(OP_KIND_COUNT, ELEM_KIND_COUNT, ok).is_ok());
    assert!(check_c_table(OP_KIND_COUNT + 1, ELEM_KIND_COUNT, ok).is_err());
    assert!(check_c_table(OP_KIND_COUNT, ELEM_KIND_COUNT, |c| {
        if c == ElemKind::LongDoubleInt as i32 {
            24
        } else {
            ok(c)
        }
    })
    .is_err());
}

/// Pair layout helpers: (value bytes, index offset, index bytes).
fn pair_layout(elem: ElemKind) -> (usize, usize, usize) {
    use ElemKind::*;
    match elem {
        FloatInt | TwoReal | TwoInt | TwoInteger => (4, 4, 4),
        ShortInt => (2, 4, 4),
        DoubleInt | LongInt => (8, 8, 4),
        TwoDoublePrecision => (8, 8, 8),
        _ => unreachable!(),
    }
}

/// A comparable value from pair field bytes.
fn field_value(elem: ElemKind, bytes: &[u8], index: bool) -> f64 {
    use ElemKind::*;
    let float = matches!(
        (elem, index),
        (FloatInt | DoubleInt | TwoReal | TwoDoublePrecision, false)
            | (TwoReal | TwoDoublePrecision, true)
    );
    match (float, bytes.len()) {
        (true, 4) => f32::from_le_bytes(bytes.try_into().unwrap()) as f64,
        (true, 8) => f64::from_le_bytes(bytes.try_into().unwrap()),
        // i64 values in the tests stay within f64's exact range.
        _ => int_of(bytes, true) as f64,
    }
}

#[test]
fn minloc_maxloc_ties_take_the_lowest_index() {
    use ElemKind::*;
    let mut rng = Rng(12345);
    for elem in [
        FloatInt,
        DoubleInt,
        LongInt,
        TwoInt,
        ShortInt,
        TwoReal,
        TwoDoublePrecision,
        TwoInteger,
    ] {
        let (vw, ko, kw) = pair_layout(elem);
        let ext = elem.extent();
        for op in [OpKind::MinLoc, OpKind::MaxLoc] {
            let k = kernel(op, elem).unwrap();
            for n in lengths() {
                // Values from a tiny set (many ties), NaN for float values.
                let mut a = vec![0x5Au8; n * ext];
                let mut b = vec![0x5Au8; n * ext];
                for buf in [&mut a, &mut b] {
                    for e in buf.chunks_exact_mut(ext) {
                        let r = rng.next();
                        let v = (r % 3) as i64 - 1;
                        let idx = ((r >> 8) % 5) as i64;
                        let put = |dst: &mut [u8], x: f64, w: usize, float: bool| match (float, w) {
                            (true, 4) => dst.copy_from_slice(&(x as f32).to_le_bytes()),
                            (true, _) => dst.copy_from_slice(&x.to_le_bytes()),
                            (false, _) => dst.copy_from_slice(&(x as i64).to_le_bytes()[..w]),
                        };
                        let vf =
                            matches!(elem, FloatInt | DoubleInt | TwoReal | TwoDoublePrecision);
                        let kf = matches!(elem, TwoReal | TwoDoublePrecision);
                        let x = if vf && divisible(r, 11) {
                            f64::NAN
                        } else if vf && divisible(r, 13) {
                            -0.0
                        } else {
                            v as f64
                        };
                        put(&mut e[..vw], x, vw, vf);
                        put(&mut e[ko..ko + kw], idx as f64, kw, kf);
                    }
                }
                let want = |x: &[u8], y: &[u8], before: &[u8]| {
                    let (av, bv) = (
                        field_value(elem, &x[..vw], false),
                        field_value(elem, &y[..vw], false),
                    );
                    let (ak, bk) = (
                        field_value(elem, &x[ko..ko + kw], true),
                        field_value(elem, &y[ko..ko + kw], true),
                    );
                    let wins = if op == OpKind::MinLoc {
                        av < bv
                    } else {
                        av > bv
                    };
                    let mut r = before.to_vec();
                    if wins {
                        r[..vw].copy_from_slice(&x[..vw]);
                        r[ko..ko + kw].copy_from_slice(&x[ko..ko + kw]);
                    } else {
                        r[..vw].copy_from_slice(&y[..vw]);
                        let kk = if av == bv && ak < bk { x } else { y };
                        r[ko..ko + kw].copy_from_slice(&kk[ko..ko + kw]);
                    }
                    r
                };
                check_forms(
                    k,
                    elem,
                    n,
                    n % 5,
                    &a,
                    &b,
                    &want,
                    &format!("{op:?} {elem:?}"),
                );
            }
        }
    }
}

#[test]
fn complex_products_follow_c() {
    use complex::C64;
    let k = kernel(OpKind::Prod, ElemKind::ComplexF64).unwrap();
    let z = |re: f64, im: f64| [re.to_le_bytes(), im.to_le_bytes()].concat();
    let a = [z(1.0, 2.0), z(f64::INFINITY, f64::NAN), z(0.5, -0.25)].concat();
    let b = [z(3.0, -4.0), z(1.0, 0.0), z(f64::NAN, f64::NAN)].concat();
    let mut out = vec![0u8; a.len()];
    // SAFETY: three complex doubles each.
    unsafe { k(a.as_ptr(), b.as_ptr(), out.as_mut_ptr(), 3) };
    let get = |i: usize| {
        C64::new(
            f64::from_le_bytes(out[i * 16..i * 16 + 8].try_into().unwrap()),
            f64::from_le_bytes(out[i * 16 + 8..i * 16 + 16].try_into().unwrap()),
        )
    };
    assert_eq!(get(0), C64::new(3.0 + 8.0, -4.0 + 6.0));
    // Annex G: an infinite factor keeps the real part infinite.
    assert_eq!(get(1).re, f64::INFINITY);
    assert!(get(2).re.is_nan() && get(2).im.is_nan());
}

#[cfg(target_arch = "x86_64")]
#[test]
fn long_double_kernels() {
    // f64 -> x87 extended (exact), enough to build test operands.
    fn f80(x: f64) -> [u8; 16] {
        let bits = x.to_bits();
        let sign = (bits >> 63) as u16;
        let exp = ((bits >> 52) & 0x7ff) as u16;
        let frac = bits & ((1 << 52) - 1);
        let (e, m) = match exp {
            0 if frac == 0 => (0, 0),
            0x7ff => (0x7fff, (1u64 << 63) | (frac << 11)),
            0 => unreachable!("no subnormals in these tests"),
            _ => (exp - 1023 + 16383, (1u64 << 63) | (frac << 11)),
        };
        let mut r = [0u8; 16];
        r[..8].copy_from_slice(&m.to_le_bytes());
        r[8..10].copy_from_slice(&((sign << 15) | e).to_le_bytes());
        r[10..].fill(0xEE); // padding that must survive
        r
    }
    let vals = [1.5, -2.0, 0.0, -0.0, f64::NAN, 3.0, f64::INFINITY];
    let (mut a, mut b) = (Vec::new(), Vec::new());
    for (i, x) in vals.iter().enumerate() {
        a.extend(f80(*x));
        b.extend(f80(vals[(i + 2) % vals.len()]));
    }
    let n = vals.len();
    let run = |op| {
        let mut out = vec![0x77u8; a.len()];
        // SAFETY: n long doubles in each buffer.
        unsafe {
            kernel(op, ElemKind::LongDouble).unwrap()(a.as_ptr(), b.as_ptr(), out.as_mut_ptr(), n)
        };
        out
    };
    for op in [OpKind::Sum, OpKind::Prod, OpKind::Min, OpKind::Max] {
        let out = run(op);
        for i in 0..n {
            let (x, y) = (vals[i], vals[(i + 2) % n]);
            let want = match op {
                OpKind::Sum => f80(y + x),
                OpKind::Prod => f80(y * x),
                _ => f80(minmax_ref(op, x, y)),
            };
            let got = &out[i * 16..i * 16 + 10];
            let w = &want[..10];
            let nan = |v: &[u8]| {
                v[9] & 0x7f == 0x7f && v[8] == 0xff && v[..8] != [0, 0, 0, 0, 0, 0, 0, 0x80]
            };
            assert!(
                got == w || (nan(got) && nan(w)),
                "{op:?} {x} {y}: {got:?} vs {w:?}"
            );
            assert_eq!(
                &out[i * 16 + 10..i * 16 + 16],
                &[0x77; 6],
                "padding written"
            );
        }
    }
    // MAXLOC on long double int: tie at value 3 takes index 1.
    let pair = |v: f64, k: i32| {
        let mut e = f80(v).to_vec();
        e.extend(k.to_le_bytes());
        e.extend([0u8; 12]);
        e
    };
    let a = [pair(3.0, 4), pair(1.0, 9)].concat();
    let mut b = [pair(3.0, 1), pair(2.0, 0)].concat();
    let bp = b.as_mut_ptr();
    // SAFETY: two pairs of 32 bytes each; in place (out == b).
    unsafe { kernel(OpKind::MaxLoc, ElemKind::LongDoubleInt).unwrap()(a.as_ptr(), bp, bp, 2) };
    assert_eq!(b, [pair(3.0, 1), pair(2.0, 0)].concat());
    let mut b2 = [pair(2.0, 1), pair(2.0, 0)].concat();
    let bp = b2.as_mut_ptr();
    // SAFETY: as above.
    unsafe { kernel(OpKind::MaxLoc, ElemKind::LongDoubleInt).unwrap()(a.as_ptr(), bp, bp, 2) };
    assert_eq!(b2, [pair(3.0, 4), pair(2.0, 0)].concat());
}

/// The AVX2 and AVX-512 loops' streaming paths (non-temporal stores for
/// large fused calls) give the same bytes as the ordinary one: forced on for every
/// output size, with the three buffers at the same offset within a cache
/// line (what streams: 0, 1 = not element-aligned, which falls back, one
/// element, a line less one element) and at different offsets (falls back),
/// every length.  In place never streams (the other tests cover it).
/// Other tests running meanwhile are unaffected: results do not depend on
/// the threshold.
#[test]
fn streaming_stores_match_reference() {
    let isas: Vec<Isa> = isa::available()
        .into_iter()
        .filter(|&i| i != Isa::Base)
        .collect();
    if isas.is_empty() {
        return;
    }
    let detected = isa::stream_threshold();
    isa::set_stream_threshold(1);
    let mut rng = Rng(0x2545_F491_4F6C_DD1D);
    let mut streamed = 0;
    for elem in ElemKind::ALL {
        if storage(elem).is_none() {
            continue;
        }
        let w = elem.extent();
        for (op, isa) in OpKind::ALL
            .into_iter()
            .flat_map(|op| isas.iter().map(move |&i| (op, i)))
        {
            let Some(k) = kernel_at(op, elem, isa) else {
                continue;
            };
            for n in (0..=67).chain([1000, 4099]) {
                for (shift, skew) in [(0, 0), (1, 0), (w, 0), (64 - w, 0), (0, w)] {
                    let bytes = n * w;
                    let stride = (bytes + 64).next_multiple_of(64);
                    let mut buf = vec![0u8; 3 * stride + 192];
                    let base = (64 - buf.as_ptr() as usize % 64) % 64 + shift;
                    let (ra, rb) = (base..base + bytes, base + stride..base + stride + bytes);
                    let ro = base + 2 * stride + skew..base + 2 * stride + skew + bytes;
                    fill(&mut rng, elem, &mut buf[ra.clone()]);
                    fill(&mut rng, elem, &mut buf[rb.clone()]);
                    let p = buf.as_mut_ptr();
                    // SAFETY: three disjoint ranges of `buf`, n elements each.
                    unsafe { k(p.add(ra.start), p.add(rb.start), p.add(ro.start), n) };
                    streamed += usize::from(skew == 0 && shift % w == 0 && n >= 64);
                    for i in 0..n {
                        let e = |r: &std::ops::Range<usize>| {
                            &buf[r.start + i * w..r.start + (i + 1) * w]
                        };
                        let want = elem_ref(op, elem, e(&ra), e(&rb));
                        assert!(
                            same_elem(elem, e(&ro), &want),
                            "{op:?} {elem:?} {isa:?} streaming n={n} shift={shift} skew={skew} i={i}: got {:?} want {want:?}",
                            e(&ro)
                        );
                    }
                }
            }
        }
    }
    isa::set_stream_threshold(detected);
    assert!(streamed > 100, "only {streamed} streaming cases");
}
