//! Delivery simulation (pure Rust, no MPI): runs the [`Plan`]s of all ranks
//! step by step and checks that every message is received by the peer that
//! expects it with the expected length, that no receive overwrites a block
//! with a different one, that nothing is read from an empty position, and
//! that after the final permutation every rank holds a_0, …, a_{n−1} in rank
//! order.
//!
//! Buffers are kept as runs: a run says "positions pos..pos + len hold the
//! blocks labelled id, id + 1, … (mod n)", so a simulation costs O(runs) per
//! transfer instead of O(blocks) and p = 65,536 (4·10⁹ block positions) fits.
//! Labels are a bijection of ranks chosen so that runs stay long: a_j is
//! labelled g⁻¹(j) where the variant's final placement is
//! t ↦ g((t + c) mod n) (g = identity for the exch variants, π⁻¹ for the
//! reorder ones).  With that labelling, the block at position t ends at its
//! rank-ordered place iff its label is (t + c) mod n — checked per run for
//! every rank.  Independently, for a sample of ranks (every rank when
//! n ≤ 4096), each position is decoded to its rank through the mapping tables
//! and moved by the `Finish` rule, and the result compared with 0..n.

use super::mapping::{Finish, Mapping, Plan, Source};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Run {
    pos: u32,
    len: u32,
    id: u32,
}

/// A rank's result buffer as sorted, disjoint, maximally merged runs.
#[derive(Clone, Debug, Default)]
struct Buffer {
    runs: Vec<Run>,
}

impl Buffer {
    fn read(&self, first: u32, count: u32, n: u32) -> Result<Vec<Run>, String> {
        let end = first + count;
        if end > n {
            return Err(format!("read of {first}..{end} outside the buffer"));
        }
        let mut out = Vec::new();
        let mut at = first;
        for r in &self.runs {
            if r.pos + r.len <= at || r.pos >= end {
                continue;
            }
            if r.pos > at {
                return Err(format!("position {at} read before it was written"));
            }
            let s = at;
            let e = (r.pos + r.len).min(end);
            out.push(Run {
                pos: s - first,
                len: e - s,
                id: (r.id + (s - r.pos)) % n,
            });
            at = e;
            if at == end {
                break;
            }
        }
        if at != end {
            return Err(format!("position {at} read before it was written"));
        }
        Ok(out)
    }

    fn write(&mut self, first: u32, data: &[Run], n: u32) -> Result<(), String> {
        for d in data {
            if first + d.pos + d.len > n {
                return Err(format!("write beyond position {n}"));
            }
            let new = Run {
                pos: d.pos + first,
                ..*d
            };
            let (ns, ne) = (new.pos, new.pos + new.len);
            let mut kept = Vec::with_capacity(self.runs.len() + 2);
            for r in self.runs.drain(..) {
                let (rs, re) = (r.pos, r.pos + r.len);
                if re <= ns || rs >= ne {
                    kept.push(r);
                    continue;
                }
                // Overlap: allowed only with identical blocks (both runs
                // advance label and position together).
                if (r.id + n - r.pos % n) % n != (new.id + n - new.pos % n) % n {
                    return Err(format!(
                        "positions {}..{} overwritten with different blocks",
                        rs.max(ns),
                        re.min(ne)
                    ));
                }
                if rs < ns {
                    kept.push(Run {
                        pos: rs,
                        len: ns - rs,
                        id: r.id,
                    });
                }
                if re > ne {
                    kept.push(Run {
                        pos: ne,
                        len: re - ne,
                        id: (r.id + (ne - rs)) % n,
                    });
                }
            }
            kept.push(new);
            kept.sort_unstable_by_key(|r| r.pos);
            let mut merged: Vec<Run> = Vec::with_capacity(kept.len());
            for r in kept {
                match merged.last_mut() {
                    Some(l) if l.pos + l.len == r.pos && (l.id + l.len) % n == r.id => {
                        l.len += r.len
                    }
                    _ => merged.push(r),
                }
            }
            self.runs = merged;
        }
        Ok(())
    }
}

/// What the simulation saw.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Delivery {
    pub messages: u64,
    pub blocks: u64,
    /// Ranks whose final buffer was also checked position by position.
    pub ranks_checked_per_position: u32,
}

/// Runs all plans (one per rank, `plans[r].rank == r`) of one variant under
/// `mapping` and checks complete, correctly ordered delivery (see the module
/// documentation).  `per_position_sample`: check every k-th rank position by
/// position (1 = all).
pub fn simulate(
    plans: &[Plan],
    mapping: &Mapping,
    per_position_sample: u32,
) -> Result<Delivery, String> {
    let n = mapping.n();
    assert_eq!(plans.len() as u32, n);
    let reorder = |p: &Plan| matches!(p.finish, Finish::Reorder { .. });
    let labels_by_pi = plans.first().is_some_and(reorder);
    if plans.iter().any(|p| reorder(p) != labels_by_pi) {
        return Err("plans of different variants".into());
    }
    let label = |rank: u32| {
        if labels_by_pi {
            mapping.pi[rank as usize]
        } else {
            rank
        }
    };
    let unlabel = |id: u32| {
        if labels_by_pi {
            mapping.pi_inv[id as usize]
        } else {
            id
        }
    };

    let mut bufs: Vec<Buffer> = vec![Buffer::default(); n as usize];
    for p in plans {
        if let Some(pos) = p.place_own {
            bufs[p.rank as usize].write(
                pos,
                &[Run {
                    pos: 0,
                    len: 1,
                    id: label(p.rank),
                }],
                n,
            )?;
        }
    }
    let nsteps = plans.iter().map(|p| p.steps.len()).max().unwrap_or(0);
    if plans.iter().any(|p| p.steps.len() != nsteps) {
        return Err("plans of different lengths".into());
    }
    let mut out = Delivery::default();
    let mut inbox: Vec<Option<(u32, u32, Vec<Run>)>> = vec![None; n as usize];
    for k in 0..nsteps {
        for p in plans {
            if let Some(s) = p.steps[k].send {
                let (count, data) = match s.from {
                    Source::Own => (
                        1,
                        vec![Run {
                            pos: 0,
                            len: 1,
                            id: label(p.rank),
                        }],
                    ),
                    Source::Buf { first, count } => (
                        count,
                        bufs[p.rank as usize]
                            .read(first, count, n)
                            .map_err(|e| format!("step {k} rank {}: {e}", p.rank))?,
                    ),
                };
                out.messages += 1;
                out.blocks += count as u64;
                inbox[p.rank as usize] = Some((s.peer, count, data));
            }
        }
        for p in plans {
            if let Some(r) = p.steps[k].recv {
                let msg = inbox[r.peer as usize].take();
                match msg {
                    Some((to, count, data)) if to == p.rank && count == r.count => {
                        bufs[p.rank as usize]
                            .write(r.first, &data, n)
                            .map_err(|e| format!("step {k} rank {}: {e}", p.rank))?;
                    }
                    other => {
                        return Err(format!(
                            "step {k}: rank {} expects {} blocks from {}, finds {:?}",
                            p.rank,
                            r.count,
                            r.peer,
                            other.map(|(to, c, _)| (to, c))
                        ))
                    }
                }
            }
        }
        if let Some(from) = inbox.iter().position(Option::is_some) {
            return Err(format!("step {k}: message of rank {from} never received"));
        }
    }

    for p in plans {
        let runs = &bufs[p.rank as usize].runs;
        let covered: u64 = runs.iter().map(|r| r.len as u64).sum();
        if covered != n as u64 || runs.first().map(|r| r.pos) != Some(0) {
            return Err(format!(
                "rank {}: {covered} of {n} positions filled",
                p.rank
            ));
        }
        let c = match p.finish {
            Finish::Done => 0,
            Finish::Rotate(s) | Finish::Reorder { offset: s } => s,
        };
        for r in runs {
            if r.id != (r.pos + c) % n {
                return Err(format!(
                    "rank {}: positions {}.. hold the wrong blocks",
                    p.rank, r.pos
                ));
            }
        }
        if p.rank % per_position_sample.max(1) == 0 {
            let mut result = vec![u32::MAX; n as usize];
            for r in runs {
                for t in r.pos..r.pos + r.len {
                    let block = unlabel((r.id + (t - r.pos)) % n);
                    let dest = match p.finish {
                        Finish::Done => t,
                        Finish::Rotate(s) => (t + s) % n,
                        Finish::Reorder { offset } => mapping.pi_inv[((t + offset) % n) as usize],
                    };
                    if result[dest as usize] != u32::MAX {
                        return Err(format!("rank {}: position {dest} filled twice", p.rank));
                    }
                    result[dest as usize] = block;
                }
            }
            if let Some(j) = (0..n).find(|&j| result[j as usize] != j) {
                return Err(format!(
                    "rank {}: position {j} holds a_{}",
                    p.rank, result[j as usize]
                ));
            }
            out.ranks_checked_per_position += 1;
        }
    }
    Ok(out)
}
