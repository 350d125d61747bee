//! Delivery and inter-node traffic of the four variants, run as schedules
//! through the schedule simulator.

use super::allgather::RemappedAllgather;
use super::mapping::{Mapping, Placement, Variant};
use super::partition;
use super::pattern::{self, Algorithm};
use super::{compare, first_exchange_blocks, inter_node_elements, Remap};
use crate::hier::schedule::plan::{Action, BlockOrder, Collective, Shape, Span};
use crate::hier::schedule::sim::{simulate, Costs, Report, SimError};

/// xorshift64* for random layouts and permutations (deterministic).
struct Rng(u64);
impl Rng {
    fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) % n
    }
}

fn random_mapping(n: u32, rng: &mut Rng) -> Mapping {
    let mut pi: Vec<u32> = (0..n).collect();
    for i in (1..n as usize).rev() {
        pi.swap(i, rng.below(i as u64 + 1) as usize);
    }
    let mut pi_inv = vec![0; n as usize];
    for (r, &v) in pi.iter().enumerate() {
        pi_inv[v as usize] = r as u32;
    }
    Mapping { pi, pi_inv }
}

fn random_placement(rng: &mut Rng) -> Placement {
    let nodes = 1 + rng.below(7) as u32;
    let n = 1 + rng.below(60) as u32;
    // Ranks scattered over nodes, every node non-empty when n allows.
    Placement::new(
        (0..n)
            .map(|r| {
                if r < nodes {
                    r
                } else {
                    rng.below(nodes as u64) as u32
                }
            })
            .collect(),
    )
}

/// Round robin over nodes of the given slots: rank r goes to the next node
/// (cyclically) that still has a free slot, as `--map-by node` fills them.
fn round_robin(sizes: &[u32]) -> Placement {
    let mut left = sizes.to_vec();
    let n: u32 = sizes.iter().sum();
    let mut node_of = Vec::with_capacity(n as usize);
    let mut u = 0;
    while node_of.len() < n as usize {
        if left[u] > 0 {
            left[u] -= 1;
            node_of.push(u as u32);
        }
        u = (u + 1) % sizes.len();
    }
    Placement::new(node_of)
}

fn run(variant: Variant, m: &Mapping, block: usize) -> Result<Report, SimError> {
    let coll = RemappedAllgather {
        variant,
        mapping: m,
        block,
    };
    simulate(&coll, &Costs::hops(), true)
}

/// The node partition of logical vertices a mapping induces.
fn vertex_nodes(m: &Mapping, placement: &Placement) -> Vec<u32> {
    m.pi_inv
        .iter()
        .map(|&r| placement.node_of[r as usize])
        .collect()
}

#[test]
fn all_variants_deliver_for_every_small_n_and_random_mappings() {
    let mut rng = Rng::new(5);
    for n in 1..=70u32 {
        for round in 0..3 {
            let m = if round == 0 {
                Mapping::identity(n)
            } else {
                random_mapping(n, &mut rng)
            };
            for v in Variant::ALL {
                // Blocks of several elements: a transfer off by part of a
                // block would show.
                for block in [1, 3] {
                    let r = run(v, &m, block)
                        .unwrap_or_else(|e| panic!("{v:?} n={n} round {round}: {e:?}"));
                    let steps = pattern::steps(v.algorithm(), n) as usize;
                    assert_eq!(r.max_steps, steps + usize::from(v.exch()));
                }
            }
        }
    }
}

#[test]
fn all_variants_deliver_with_metis_mappings_on_uneven_layouts() {
    let mut rng = Rng::new(77);
    for case in 0..40 {
        let placement = random_placement(&mut rng);
        for v in Variant::ALL {
            let remap = Remap::new(v, &placement, &[]).unwrap();
            run(v, &remap.mapping, 2).unwrap_or_else(|e| panic!("case {case} {v:?}: {e:?}"));
            // The schedules count the same inter-node blocks as the graph:
            // the cut of the mapping (+ the first exchange for exch).
            let g = pattern::graph(v.algorithm(), placement.n());
            let cut = g.cut(&vertex_nodes(&remap.mapping, &placement));
            let extra = if v.exch() {
                first_exchange_blocks(&remap.mapping, &placement)
            } else {
                0
            };
            let (plain, with) = compare(v, &placement, &remap.mapping);
            assert_eq!(with, cut + extra, "case {case} {v:?}");
            assert_eq!(with, remap.blocks(), "case {case} {v:?}");
            assert_eq!(plain, remap.identity_blocks, "case {case} {v:?}");
            assert!(with <= plain, "case {case} {v:?}: {with} > {plain}");
            if !remap.identity {
                assert_eq!(remap.stats.cut_repaired, cut, "case {case} {v:?}");
            }
        }
    }
}

/// Issue 14's small uneven layouts (node sizes 3+1, 2+3+1, 5+2+1, 3+3+2 and
/// a few more up to p = 16), by slot and round robin: the repaired
/// partition has exactly the node sizes, the swaps never raise the cut, and
/// the mapping in use never moves more blocks between nodes than the
/// identity — for every variant, counted on the schedules; the repaired
/// cut equals the optimum found by exhaustive search.  Prints the
/// table of docs/remap.md (`--nocapture`).
#[test]
fn uneven_small_layouts_never_lose_to_identity() {
    let layouts: [&[u32]; 9] = [
        &[3, 1],
        &[2, 3, 1],
        &[5, 2, 1],
        &[3, 3, 2],
        &[1, 3, 1, 2],
        &[2, 1, 2],
        &[6, 5, 3],
        &[4, 4, 4, 3],
        &[7, 5, 4],
    ];
    println!("| layout | placement | algorithm | identity | METIS (sizes not exact) | + moves | + swaps | optimum | rd/Bruck-reorder | rd/Bruck-exch |");
    println!("|---|---|---|---|---|---|---|---|---|---|");
    for sizes in layouts {
        for (how, placement) in [
            ("slot", Placement::blocks(sizes)),
            ("round robin", round_robin(sizes)),
        ] {
            assert_eq!(placement.sizes(), sizes);
            for alg in [Algorithm::RecursiveDoubling, Algorithm::Bruck] {
                let g = pattern::graph(alg, placement.n());
                let (part, st) = partition::partition_exact(&g, sizes).unwrap();
                let mut got = vec![0u32; sizes.len()];
                for &u in &part {
                    got[u as usize] += 1;
                }
                assert_eq!(got, sizes, "{sizes:?} {how} {alg:?}");
                assert!(st.cut_repaired <= st.cut_moved, "{sizes:?} {how} {alg:?}");
                assert_eq!(st.cut_repaired, g.cut(&part));
                let mut row = Vec::new();
                for v in Variant::ALL.into_iter().filter(|v| v.algorithm() == alg) {
                    let remap = Remap::new(v, &placement, &[]).unwrap();
                    run(v, &remap.mapping, 1).unwrap();
                    let (plain, with) = compare(v, &placement, &remap.mapping);
                    assert!(with <= plain, "{sizes:?} {how} {v:?}: {with} > {plain}");
                    row.push(format!(
                        "{with}{}",
                        if remap.identity { " (id)" } else { "" }
                    ));
                }
                // On all of these the repair reaches the optimum.
                let best = optimum_cut(&g, sizes);
                assert_eq!(st.cut_repaired, best, "{sizes:?} {how} {alg:?}");
                println!(
                    "| {} | {how} | {alg:?} | {} | {} | {} | {} | {best} | {} | {} |",
                    sizes
                        .iter()
                        .map(u32::to_string)
                        .collect::<Vec<_>>()
                        .join("+"),
                    g.cut(&placement.node_of),
                    st.cut_metis,
                    st.cut_moved,
                    st.cut_repaired,
                    row[1],
                    row[0],
                );
            }
        }
    }
}

/// The schedules through the executor (threads over the loopback
/// transport, pieces of at most 3 bytes so every block is cut) with the
/// local moves of `schedule::gather`: every process ends with every block
/// in rank order — what the plugin runs, minus the PML.
#[test]
fn executor_runs_the_variants_over_threads() {
    use crate::hier::schedule::exec::{Executor, Layout};
    use crate::hier::schedule::{gather, loopback};
    let block = 5;
    let byte = |r: usize, i: usize| (r * 7 + i * 3 + 1) as u8;
    let mut rng = Rng::new(3);
    for n in [1u32, 2, 3, 5, 8, 12] {
        let m = random_mapping(n, &mut rng);
        for v in Variant::ALL {
            let coll = RemappedAllgather {
                variant: v,
                mapping: &m,
                block,
            };
            let coll = &coll;
            let nets = loopback::network(n as usize);
            let out: Vec<Vec<u8>> = std::thread::scope(|s| {
                let handles: Vec<_> = nets
                    .into_iter()
                    .enumerate()
                    .map(|(r, mut net)| {
                        s.spawn(move || {
                            let mut all = vec![0xeeu8; n as usize * block];
                            for i in 0..block {
                                all[r * block + i] = byte(r, i);
                            }
                            gather::place_own(coll, r, &mut all, block);
                            let mut ex = Executor::new(Layout { size: 1, extent: 1 }, 3);
                            ex.max_chunk = 3;
                            ex.run(&coll.schedule_of(r), &mut all, &mut net, |_, _, _| {
                                panic!("an Allgather combines nothing")
                            })
                            .unwrap();
                            gather::arrange(coll, r, &mut all, block);
                            all
                        })
                    })
                    .collect();
                handles.into_iter().map(|h| h.join().unwrap()).collect()
            });
            let want: Vec<u8> = (0..n as usize)
                .flat_map(|r| (0..block).map(move |i| byte(r, i)))
                .collect();
            for (r, all) in out.iter().enumerate() {
                assert_eq!(*all, want, "{v:?} n={n} rank {r}");
            }
        }
    }
}

/// The lowest cut over all partitions of exact sizes (exhaustive: small
/// graphs only), to judge the repair by.
fn optimum_cut(g: &super::graph::Graph, sizes: &[u32]) -> u64 {
    fn go(
        g: &super::graph::Graph,
        v: usize,
        part: &mut Vec<u32>,
        left: &mut [u32],
        cut: u64,
        best: &mut u64,
    ) {
        if cut >= *best {
            return;
        }
        if v == g.n() {
            *best = cut;
            return;
        }
        for u in 0..left.len() {
            if left[u] == 0 {
                continue;
            }
            let add: u64 = g
                .neighbours(v as u32)
                .filter(|&(x, _)| (x as usize) < v && part[x as usize] != u as u32)
                .map(|(_, w)| w)
                .sum();
            left[u] -= 1;
            part.push(u as u32);
            go(g, v + 1, part, left, cut + add, best);
            part.pop();
            left[u] += 1;
        }
    }
    let mut best = u64::MAX;
    go(g, 0, &mut Vec::new(), &mut sizes.to_vec(), 0, &mut best);
    best
}

/// A schedule with one action of one rank altered, to show the simulator
/// is not vacuous on these schedules.
struct Broken<'a> {
    inner: &'a dyn Collective,
    rank: usize,
    step: usize,
    edit: fn(&mut Action),
}

impl Collective for Broken<'_> {
    fn shape(&self) -> Shape {
        self.inner.shape()
    }
    fn steps(&self, rank: usize) -> usize {
        self.inner.steps(rank)
    }
    fn step(&self, rank: usize, s: usize, out: &mut Vec<Action>) {
        let at = out.len();
        self.inner.step(rank, s, out);
        if (rank, s) == (self.rank, self.step) {
            (self.edit)(&mut out[at]);
        }
    }
    fn own_block(&self, rank: usize) -> usize {
        self.inner.own_block(rank)
    }
    fn block_order(&self, rank: usize) -> BlockOrder<'_> {
        self.inner.block_order(rank)
    }
}

/// A wrong peer, a receive shifted by one element, or a wrong final order
/// is caught.
#[test]
fn simulation_catches_broken_schedules() {
    let n = 12;
    let m = random_mapping(n, &mut Rng::new(9));
    for v in Variant::ALL {
        let good = RemappedAllgather {
            variant: v,
            mapping: &m,
            block: 2,
        };
        simulate(&good, &Costs::hops(), true).unwrap();
        let edits: [fn(&mut Action); 2] = [
            |a| match a {
                Action::Send { to: peer, .. } | Action::Recv { from: peer, .. } => {
                    *peer = (*peer + 1) % 12
                }
            },
            |a| match a {
                Action::Send { span, .. } | Action::Recv { span, .. } => {
                    *span = Span::new(span.start + 1, span.len)
                }
            },
        ];
        for rank in [3, 4] {
            // The last step in which the rank moves anything.
            let sched = good.schedule_of(rank);
            let step = (0..sched.steps())
                .rev()
                .find(|&s| !sched.step(s).is_empty())
                .expect("a rank that moves something");
            for edit in edits {
                let bad = Broken {
                    inner: &good,
                    rank,
                    step,
                    edit,
                };
                assert!(
                    simulate(&bad, &Costs::hops(), true).is_err(),
                    "{v:?}: rank {rank} step {step}"
                );
            }
        }
        // The wrong final order: position t read as block t + 1.
        struct Shifted<'a>(&'a RemappedAllgather<'a>);
        impl Collective for Shifted<'_> {
            fn shape(&self) -> Shape {
                self.0.shape()
            }
            fn steps(&self, rank: usize) -> usize {
                self.0.steps(rank)
            }
            fn step(&self, rank: usize, s: usize, out: &mut Vec<Action>) {
                self.0.step(rank, s, out)
            }
            fn own_block(&self, rank: usize) -> usize {
                self.0.own_block(rank)
            }
            fn block_order(&self, rank: usize) -> BlockOrder<'_> {
                let mut o = self.0.block_order(rank);
                if rank == 7 {
                    o.shift += 1;
                }
                o
            }
        }
        assert!(
            simulate(&Shifted(&good), &Costs::hops(), true).is_err(),
            "{v:?}: wrong final order"
        );
    }
}

/// The paper's cluster: 8 nodes × 8 cores, processes placed by blocks
/// (ranks 8u..8u + 7 on node u).  Without remapping recursive doubling
/// sends its last three steps between nodes: 64 × (8 + 16 + 32) = 3584
/// blocks; Bruck's steps k send min(2^k, n − 2^k) blocks and cross nodes
/// for the ranks whose distance-2^k partner is on another node:
/// 8·1 + 16·2 + 32·4 + 64·(8 + 16 + 32) = 3752.  With remapping the optimum
/// keeps the distances 8, 16, 32 inside nodes: 64 × (1 + 2 + 4) = 448 for
/// both (recursive doubling: the partition into subcubes of dimensions
/// 3..5 is optimal; Bruck: residue classes mod 8 reach 448, METIS must do
/// at least as well).  Exch variants add their first exchange.
#[test]
fn paper_cluster_8x8_inter_node_blocks() {
    let placement = Placement::blocks(&[8; 8]);
    for v in Variant::ALL {
        let re = Remap::new(v, &placement, &[]).unwrap();
        assert!(!re.identity, "{v:?}");
        let extra = if v.exch() {
            first_exchange_blocks(&re.mapping, &placement)
        } else {
            0
        };
        let (plain, with) = compare(v, &placement, &re.mapping);
        match v.algorithm() {
            Algorithm::RecursiveDoubling => {
                assert_eq!(re.stats.cut_repaired, 448);
                assert_eq!((plain, with), (3584, 448 + extra), "{v:?}");
            }
            Algorithm::Bruck => {
                assert!(re.stats.cut_repaired <= 448, "{}", re.stats.cut_repaired);
                assert_eq!((plain, with), (3752, re.stats.cut_repaired + extra));
            }
        }
        run(v, &re.mapping, 1).unwrap();
    }
    // Round-robin placement (rank r on node r mod 8) is already ideal for
    // both algorithms; remapping must not make it worse: π = identity is
    // kept and the exch variants' first exchange stays local.
    let rr = Placement::new((0..64).map(|r| r % 8).collect());
    for v in Variant::ALL {
        let re = Remap::new(v, &rr, &[]).unwrap();
        assert!(re.identity, "{v:?}");
        assert_eq!(compare(v, &rr, &re.mapping), (448, 448), "{v:?}");
    }
}

/// p = 65,536 on 4096 nodes of 16 under 64 switches of 64 nodes:
/// hierarchical METIS partition (switches, then nodes), then the four
/// variants' schedules through the schedule simulator (the same schedules
/// the plugin runs): every rank ends with all blocks in rank order, and the
/// inter-node blocks are the paper's counts.
#[test]
fn remapped_variants_deliver_at_65536() {
    let ppn = 16u32;
    let nodes = 4096u32;
    let n = (ppn * nodes) as u64;
    let placement = Placement::blocks(&vec![ppn; nodes as usize]);
    let switches: Vec<Vec<u32>> = (0..64).map(|s| (s * 64..s * 64 + 64).collect()).collect();
    for alg in [Algorithm::RecursiveDoubling, Algorithm::Bruck] {
        let t = std::time::Instant::now();
        // One partition per algorithm: the reorder variant's (the exch one
        // uses the same π; at this size the identity loses by far).
        let reorder = Variant::ALL
            .into_iter()
            .find(|v| v.algorithm() == alg && !v.exch())
            .expect("a reorder variant");
        let remap = Remap::new(reorder, &placement, &switches).unwrap();
        assert!(!remap.identity);
        assert_eq!(
            vertex_nodes(&remap.mapping, &placement).iter().fold(
                vec![0u32; nodes as usize],
                |mut c, &u| {
                    c[u as usize] += 1;
                    c
                }
            ),
            vec![ppn; nodes as usize]
        );
        eprintln!(
            "{alg:?} n=65536: partition {:?} {:?}",
            t.elapsed(),
            remap.stats
        );
        for v in Variant::ALL.into_iter().filter(|v| v.algorithm() == alg) {
            let t = std::time::Instant::now();
            let coll = RemappedAllgather {
                variant: v,
                mapping: &remap.mapping,
                block: 1,
            };
            let r =
                simulate(&coll, &Costs::hops(), true).unwrap_or_else(|e| panic!("{v:?}: {e:?}"));
            let steps = pattern::steps(alg, n as u32) as usize + usize::from(v.exch());
            assert_eq!(r.max_steps, steps);
            let remapped = inter_node_elements(&coll, &placement);
            let plain = inter_node_elements(
                &RemappedAllgather {
                    variant: v,
                    mapping: &Mapping::identity(n as u32),
                    block: 1,
                },
                &placement,
            );
            eprintln!(
                "{v:?}: simulated in {:?} ({} messages); inter-node blocks {plain} -> {remapped}",
                t.elapsed(),
                r.messages
            );
            // Block placement, 16 per node: recursive doubling's steps
            // 4..15 leave the node for every rank, n·(16 + … + 32768) =
            // n·(n − 16).  Residue classes mod 4096 as nodes keep steps
            // 12..15 (distances 4096·j) inside and cut the rest:
            // n·(1 + … + 2048) = n·4095 for both algorithms; the METIS
            // mapping must do at least as well (exch: + first exchange).
            if alg == Algorithm::RecursiveDoubling {
                assert_eq!(plain, n * (n - 16), "{v:?}");
            }
            let extra = if v.exch() {
                first_exchange_blocks(&remap.mapping, &placement)
            } else {
                0
            };
            assert_eq!(remapped, remap.stats.cut_repaired + extra, "{v:?}");
            assert!(remapped <= n * 4095 + extra, "{v:?}: {remapped}");
        }
    }
}

/// The configurations of docs/remap.md's main table (block placement):
/// every variant's inter-node blocks without and with remapping, and the
/// cut through the repair; the guard holds on each (`--nocapture` prints).
#[test]
fn docs_configurations() {
    let uneven = [8, 8, 6, 8, 4, 8, 8, 6];
    // (name, node sizes, nodes per switch)
    type Config = (&'static str, Vec<u32>, Vec<Vec<u32>>);
    let configs: [Config; 4] = [
        ("8 x 8", vec![8; 8], vec![]),
        ("8 nodes of 8,8,6,8,4,8,8,6", uneven.to_vec(), vec![]),
        ("6 x 8", vec![8; 6], vec![]),
        (
            "16 x 8 under 2 switches",
            vec![8; 16],
            vec![(0..8).collect(), (8..16).collect()],
        ),
    ];
    for (name, sizes, switches) in configs {
        let placement = Placement::blocks(&sizes);
        let mut cells = Vec::new();
        for v in Variant::ALL {
            let re = Remap::new(v, &placement, &switches).unwrap();
            run(v, &re.mapping, 1).unwrap();
            let (plain, with) = compare(v, &placement, &re.mapping);
            assert!(with <= plain, "{name} {v:?}");
            let st = re.stats;
            cells.push(format!(
                "{v:?} {plain} -> {with} (cut {} -> {} moves {} -> {} swaps {}{})",
                st.cut_metis,
                st.cut_moved,
                st.moved,
                st.cut_repaired,
                st.swaps,
                if re.identity { ", identity" } else { "" }
            ));
        }
        println!("{name}: {}", cells.join("; "));
    }
}
