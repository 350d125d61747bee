//! Prints the α-β-γ model table of docs/schedules.md:
//! `cargo run --release --example cost_table`.

use mca_coll_sharm::hier::schedule::cost::{self, Net, TopAllreduce};

fn main() {
    let ports = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(1);
    let net = Net {
        ports,
        ..Net::PAPERS
    };
    println!(
        "α = {} µs, β = {:.3} ns/B, γ = {:.3} ns/B, ports = {}; times in µs (8-byte elements)\n",
        net.alpha * 1e6,
        net.beta * 1e9,
        net.gamma * 1e9,
        net.ports
    );
    println!("| p | size | recursive doubling | ring | lattice ring (dims) | Trinaryx3 (shape, S) | auto |");
    println!("|---|---|---|---|---|---|---|");
    let sizes = [8usize, 1 << 10, 64 << 10, 1 << 20, 16 << 20, 64 << 20];
    for p in [64usize, 512, 4096, 9216, 65536] {
        for &m in &sizes {
            let mf = m as f64;
            let t = |a| cost::model(a, p, mf, 8, &net);
            let dims = cost::lattice_dims(&[(p, net)], mf, cost::PACKET_BYTES as f64);
            let shape = cost::torus_shape(p);
            let tx = match &shape {
                Some(s) => {
                    let seg = cost::trinaryx3_segments(s, mf, (m / 8).max(1), &net);
                    format!(
                        "{:.1} ({}, {seg})",
                        t(TopAllreduce::Trinaryx3).unwrap() * 1e6,
                        join(s)
                    )
                }
                None => "—".into(),
            };
            println!(
                "| {p} | {} | {:.1} | {:.1} | {:.1} ({}) | {tx} | {:?} |",
                human(m),
                t(TopAllreduce::RecursiveDoubling).unwrap() * 1e6,
                t(TopAllreduce::Ring).unwrap() * 1e6,
                t(TopAllreduce::LatticeRing).unwrap() * 1e6,
                join(&dims),
                cost::auto(p, mf, 8, &net),
            );
        }
    }
}

fn join(d: &[usize]) -> String {
    d.iter()
        .map(|x| x.to_string())
        .collect::<Vec<_>>()
        .join("x")
}

fn human(m: usize) -> String {
    match m {
        _ if m >= 1 << 20 => format!("{} MiB", m >> 20),
        _ if m >= 1 << 10 => format!("{} KiB", m >> 10),
        _ => format!("{m} B"),
    }
}
