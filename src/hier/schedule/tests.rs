//! Cross-builder tests: every builder for p = 1..=40 through the simulator,
//! the executor over threads, and the p = 65,536 checks of papers 001/002.

use super::basic::{Binomial, Flat, RecursiveDoubling, RingAllreduce, RingRooted};
use super::cost::{self, Net, TopAllreduce};
use super::exec::{Executor, Layout};
use super::lattice::Lattice;
use super::plan::{Collective, Order};
use super::sim::{simulate, Costs, Report};
use super::trinaryx3::Trinaryx3;

fn sim(c: &dyn Collective) -> Report {
    simulate(c, &Costs::hops(), true).unwrap_or_else(|e| panic!("p={}: {e:?}", c.size()))
}

fn builders(p: usize, count: usize) -> Vec<(String, Box<dyn Collective>)> {
    let mut v: Vec<(String, Box<dyn Collective>)> = Vec::new();
    for reduce in [false, true] {
        v.push((
            format!("flat {reduce}"),
            Box::new(Flat { p, count, reduce }),
        ));
        v.push((
            format!("binomial {reduce}"),
            Box::new(Binomial { p, count, reduce }),
        ));
        v.push((
            format!("ring {reduce}"),
            Box::new(RingRooted { p, count, reduce }),
        ));
    }
    v.push(("rd".into(), Box::new(RecursiveDoubling { p, count })));
    v.push((
        "ring allreduce".into(),
        Box::new(RingAllreduce { p, count }),
    ));
    let n = Net::PAPERS;
    let dims = cost::lattice_dims(&[(p, n)], 1e6, 1e9);
    v.push((
        format!("lattice {dims:?}"),
        Box::new(Lattice::new(dims, count, 3)),
    ));
    v.push((
        "lattice 1-D".into(),
        Box::new(Lattice::new(vec![p], count, 2)),
    ));
    if let Some(dims) = cost::torus_shape(p) {
        let t = Trinaryx3::new(dims.clone(), count, 2).unwrap();
        v.push((format!("trinaryx3 {dims:?}"), Box::new(t)));
    }
    v.push((
        "fallback".into(),
        cost::allreduce_for(TopAllreduce::Trinaryx3, p, count, 8, &n),
    ));
    v
}

#[test]
fn every_builder_p_1_to_40() {
    for p in 1..=40 {
        for count in [0, 1, 5, 3 * p + 1] {
            for (name, c) in builders(p, count) {
                let r = simulate(c.as_ref(), &Costs::hops(), true)
                    .unwrap_or_else(|e| panic!("{name} p={p} count={count}: {e:?}"));
                // Flat, binomial and recursive doubling reduce in rank order.
                if name.starts_with("flat") || name.starts_with("binomial") || name == "rd" {
                    assert!(r.canonical, "{name} p={p}");
                }
            }
        }
    }
}

#[test]
fn counts_of_the_basic_algorithms() {
    for p in [2, 5, 8, 13, 32] {
        let rd = sim(&RecursiveDoubling { p, count: 4 });
        let q = 1 << (usize::BITS - 1 - p.leading_zeros());
        let extra = p - q;
        let rounds = q.trailing_zeros() as u64;
        assert_eq!(rd.messages, q as u64 * rounds + 2 * extra as u64);
        assert_eq!(rd.depth, rounds + if extra > 0 { 2 } else { 0 });
        let ring = sim(&RingAllreduce { p, count: 4 * p });
        assert_eq!(ring.messages, 2 * (p as u64) * (p as u64 - 1));
        assert_eq!(ring.depth, 2 * (p as u64 - 1));
        let bin = sim(&Binomial {
            p,
            count: 3,
            reduce: false,
        });
        assert_eq!(bin.messages, p as u64 - 1);
        assert_eq!(bin.depth, (p - 1).ilog2() as u64 + 1);
    }
}

/// The simulator's α-β-γ estimate equals the closed forms of `cost`.
#[test]
fn simulated_costs_match_the_formulas() {
    let n = Net {
        alpha: 3e-6,
        beta: 1e-9,
        gamma: 5e-10,
        ports: 0,
    };
    let c = Costs {
        alpha: n.alpha,
        beta: n.beta,
        gamma: n.gamma,
        elem_bytes: 8,
        ports: 0,
    };
    for p in [4, 6, 16, 24] {
        let count = 240 * p;
        let m = (count * 8) as f64;
        let close = |a: f64, b: f64| (a - b).abs() <= 1e-9 * b.max(1e-12);
        let rd = simulate(&RecursiveDoubling { p, count }, &c, false).unwrap();
        assert!(close(rd.time, cost::recursive_doubling(p, m, &n)), "rd {p}");
        let ring = simulate(&RingAllreduce { p, count }, &c, false).unwrap();
        assert!(close(ring.time, cost::ring(p, m, &n)), "ring {p}");
        let dims = cost::lattice_dims(&[(p, n)], m, 512.0);
        let lat = simulate(&Lattice::new(dims.clone(), count, 64), &c, false).unwrap();
        assert!(
            close(lat.time, cost::lattice(&dims, m, 512.0, &n)),
            "lattice {p} {dims:?}"
        );
    }
}

/// Paper 002 §6.2: on 9216 processes recursive doubling crosses
/// 1 + log 8192 + 1 = 15 hops and Trinaryx3 on 48×6×32 crosses 2·84 = 168.
#[test]
fn hop_counts_of_paper_002() {
    let rd = simulate(
        &RecursiveDoubling { p: 9216, count: 1 },
        &Costs::hops(),
        false,
    )
    .unwrap();
    assert_eq!(rd.depth, 15);
    let tx = Trinaryx3::new(vec![48, 6, 32], 3, 1).unwrap();
    let r = simulate(&tx, &Costs::hops(), true).unwrap();
    assert_eq!(r.depth, 168);
    assert_eq!(r.messages, 2 * 3 * (9216 - 1));
}

type Mat = [u32; 4];

fn mat_input(r: usize, e: usize) -> Mat {
    let x = (r * 131 + e * 7 + 1) as u32;
    [1, x, x.wrapping_mul(3) | 1, 2]
}

fn mat_mul(a: Mat, b: Mat) -> Mat {
    [
        a[0].wrapping_mul(b[0])
            .wrapping_add(a[1].wrapping_mul(b[2])),
        a[0].wrapping_mul(b[1])
            .wrapping_add(a[1].wrapping_mul(b[3])),
        a[2].wrapping_mul(b[0])
            .wrapping_add(a[3].wrapping_mul(b[2])),
        a[2].wrapping_mul(b[1])
            .wrapping_add(a[3].wrapping_mul(b[3])),
    ]
}

/// Runs `coll` on threads with the loopback transport; elements are 2×2
/// matrices of u32 (16 bytes, extent 24 to leave holes), combined by
/// matrix product: associative, not commutative, so the result shows the
/// order.  Returns every process's buffer.
fn run_threads(coll: &dyn Collective, max_chunk: usize) -> Vec<Vec<Mat>> {
    let p = coll.size();
    let count = coll.count();
    let layout = Layout {
        size: 16,
        extent: 24,
    };
    let get = |b: &[u8]| -> [u32; 4] {
        std::array::from_fn(|i| u32::from_le_bytes(b[4 * i..4 * i + 4].try_into().unwrap()))
    };
    let put = |b: &mut [u8], v: [u32; 4]| {
        for i in 0..4 {
            b[4 * i..4 * i + 4].copy_from_slice(&v[i].to_le_bytes());
        }
    };
    let nets = super::loopback::network(p);
    std::thread::scope(|s| {
        let handles: Vec<_> = nets
            .into_iter()
            .enumerate()
            .map(|(r, mut net)| {
                s.spawn(move || {
                    let mut buf = vec![0xeeu8; count * layout.extent];
                    for e in 0..count {
                        put(&mut buf[e * 24..], mat_input(r, e));
                    }
                    let mut ex = Executor::new(layout, 7);
                    ex.max_chunk = max_chunk;
                    let sched = coll.schedule_of(r);
                    ex.run(&sched, &mut buf, &mut net, |inc, mine, order| {
                        let n = inc.len().div_ceil(24);
                        for e in 0..n {
                            let (a, b) = (get(&inc[e * 24..]), get(&mine[e * 24..]));
                            let v = match order {
                                Order::IncomingFirst => mat_mul(a, b),
                                Order::MineFirst => mat_mul(b, a),
                            };
                            put(&mut mine[e * 24..], v);
                        }
                    })
                    .unwrap();
                    (0..count).map(|e| get(&buf[e * 24..])).collect::<Vec<_>>()
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    })
}

#[test]
fn executor_over_threads() {
    for p in [1, 2, 3, 5, 8, 12] {
        for (name, c) in builders(p, 2 * p + 3) {
            let out = run_threads(c.as_ref(), 40);
            let count = c.count();
            let want: Vec<Mat> = (0..count)
                .map(|e| (0..p).fold([1, 0, 0, 1], |acc, r| mat_mul(acc, mat_input(r, e))))
                .collect();
            let canonical =
                name.starts_with("flat") || name.starts_with("binomial") || name == "rd";
            match c.kind() {
                super::plan::Kind::Bcast { root } => {
                    assert!(out.iter().all(|b| *b == out[root]), "{name} p={p}")
                }
                super::plan::Kind::Reduce { root } => {
                    if canonical {
                        assert_eq!(out[root], want, "{name} p={p}");
                    }
                }
                super::plan::Kind::Allreduce => {
                    assert!(out.iter().all(|b| *b == out[0]), "{name} p={p}");
                    if canonical {
                        assert_eq!(out[0], want, "{name} p={p}");
                    }
                }
                super::plan::Kind::Allgather { .. } => unreachable!("no Allgather builder here"),
            }
        }
    }
}

/// Paper 001 at p = 65,536: every process ends with the full sum in one
/// bracketing per element; 2·Σ(r_i − 1) steps, each one message per
/// process; a chain of 2·Σ(r_i − 1) hops.  Few elements keep the symbolic
/// buffers small (blocks beyond the count are empty messages).
fn lattice_65536(dims: Vec<usize>, count: usize) {
    let ring_steps: usize = dims.iter().map(|r| r - 1).sum();
    let l = Lattice::new(dims, count, 1 << 20);
    let r = sim(&l);
    assert_eq!(r.max_steps, 2 * ring_steps);
    assert_eq!(r.total_steps, 65536 * 2 * ring_steps as u64);
    assert_eq!(r.messages, 65536 * 2 * ring_steps as u64);
    assert_eq!(r.depth, 2 * ring_steps as u64);
}

#[test]
fn lattice_2d_65536() {
    lattice_65536(vec![256, 256], 32);
}

#[test]
fn lattice_3d_65536() {
    lattice_65536(vec![16, 64, 64], 64);
}

/// Paper 002 at p = 65,536: trees spanning and pairwise edge-disjoint on
/// torus links, full reduction everywhere, 2·d·(p−1)·S messages and 2·h
/// hops unsegmented.
fn trinaryx3_65536(dims: Vec<usize>) {
    let p: usize = dims.iter().product();
    let d = dims.len();
    let tx = Trinaryx3::new(dims.clone(), 6 * d, 1).unwrap();
    let mut links = std::collections::HashSet::new();
    let coords = |mut r: usize| {
        let mut c = vec![0; d];
        for i in (0..d).rev() {
            c[i] = r % dims[i];
            r /= dims[i];
        }
        c
    };
    for t in 0..d {
        // depth[r]: hops to the root (0 unknown); also proves no cycle.
        let mut depth = vec![0usize; p];
        for start in 1..p {
            let mut path = vec![start];
            let mut r = start;
            while r != 0 && depth[r] == 0 {
                let q = tx.parent(t, r).expect("every non-root has a parent");
                let (a, b) = (coords(r), coords(q));
                let moved: Vec<usize> = (0..d).filter(|&i| a[i] != b[i]).collect();
                assert_eq!(moved.len(), 1, "tree {t}: {r}-{q} not a torus link");
                let i = moved[0];
                assert!((a[i] + 1) % dims[i] == b[i] || (b[i] + 1) % dims[i] == a[i]);
                assert!(links.insert((r.min(q), r.max(q))), "link {r}-{q} shared");
                assert!(path.len() <= p, "cycle");
                r = q;
                path.push(r);
            }
            let base = if r == 0 { 0 } else { depth[r] };
            for (k, &x) in path.iter().rev().enumerate().skip(1) {
                depth[x] = base + k;
            }
        }
        assert_eq!(depth.iter().max().copied(), Some(tx.height()));
    }
    assert_eq!(links.len(), d * (p - 1));
    let r = sim(&tx);
    assert_eq!(r.messages, 2 * d as u64 * (p as u64 - 1));
    assert_eq!(r.depth, 2 * tx.height() as u64);
    // Segmented: S times the messages.
    let tx = Trinaryx3::new(dims, 6 * d, 3).unwrap();
    let r = sim(&tx);
    assert_eq!(r.messages, 2 * 3 * d as u64 * (p as u64 - 1));
}

#[test]
fn trinaryx3_2d_65536() {
    trinaryx3_65536(vec![256, 256]);
}

#[test]
fn trinaryx3_3d_65536() {
    trinaryx3_65536(vec![64, 32, 32]);
}
