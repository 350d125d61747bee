//! Undirected weighted graphs in CSR form (the layout METIS reads): the
//! neighbours of vertex v are `adjncy[xadj[v]..xadj[v + 1]]` with weights
//! `adjwgt[..]`; every edge is stored in both directions, never as a loop.

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Graph {
    pub xadj: Vec<u32>,
    pub adjncy: Vec<u32>,
    /// Bytes carried by the edge (both directions together) at m = 1.
    pub adjwgt: Vec<u64>,
}

impl Graph {
    /// Builds the graph on vertices `0..n` from weighted edges given in any
    /// order and direction: parallel edges are merged (weights add up) and
    /// loops dropped (a transfer to oneself crosses no link).
    pub fn from_edges(n: usize, edges: impl IntoIterator<Item = (u32, u32, u64)>) -> Graph {
        let mut arcs: Vec<(u32, u32, u64)> = Vec::new();
        for (a, b, w) in edges {
            assert!(
                (a as usize) < n && (b as usize) < n,
                "edge ({a}, {b}) outside 0..{n}"
            );
            if a != b {
                arcs.push((a, b, w));
                arcs.push((b, a, w));
            }
        }
        arcs.sort_unstable_by_key(|&(a, b, _)| (a, b));
        let mut xadj = vec![0u32; n + 1];
        let mut adjncy = Vec::with_capacity(arcs.len());
        let mut adjwgt: Vec<u64> = Vec::with_capacity(arcs.len());
        let mut last: Option<(u32, u32)> = None;
        for (a, b, w) in arcs {
            if last == Some((a, b)) {
                *adjwgt.last_mut().expect("merged arc has a predecessor") += w;
                continue;
            }
            last = Some((a, b));
            xadj[a as usize + 1] += 1;
            adjncy.push(b);
            adjwgt.push(w);
        }
        for v in 0..n {
            xadj[v + 1] += xadj[v];
        }
        Graph {
            xadj,
            adjncy,
            adjwgt,
        }
    }

    pub fn n(&self) -> usize {
        self.xadj.len() - 1
    }

    /// Neighbours of `v` with the edge weights.
    pub fn neighbours(&self, v: u32) -> impl Iterator<Item = (u32, u64)> + '_ {
        let r = self.xadj[v as usize] as usize..self.xadj[v as usize + 1] as usize;
        self.adjncy[r.clone()]
            .iter()
            .copied()
            .zip(self.adjwgt[r].iter().copied())
    }

    /// Sum of all edge weights (each edge once).
    pub fn total_weight(&self) -> u64 {
        self.adjwgt.iter().sum::<u64>() / 2
    }

    /// Weight of the edges whose ends lie in different parts (each edge once).
    pub fn cut(&self, part: &[u32]) -> u64 {
        assert_eq!(part.len(), self.n());
        let mut cut = 0;
        for v in 0..self.n() as u32 {
            for (u, w) in self.neighbours(v) {
                if u > v && part[u as usize] != part[v as usize] {
                    cut += w;
                }
            }
        }
        cut
    }

    /// The subgraph induced by `vertices` (renumbered 0.. in the given
    /// order); edges leaving the set are dropped.
    pub fn induced(&self, vertices: &[u32]) -> Graph {
        let mut local = vec![u32::MAX; self.n()];
        for (i, &v) in vertices.iter().enumerate() {
            local[v as usize] = i as u32;
        }
        let mut edges = Vec::new();
        for (i, &v) in vertices.iter().enumerate() {
            for (u, w) in self.neighbours(v) {
                let j = local[u as usize];
                if j != u32::MAX && j > i as u32 {
                    edges.push((i as u32, j, w));
                }
            }
        }
        Graph::from_edges(vertices.len(), edges)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merges_parallel_edges_and_drops_loops() {
        let g = Graph::from_edges(3, vec![(0, 1, 2), (1, 0, 3), (2, 2, 7), (1, 2, 1)]);
        assert_eq!(g.xadj, vec![0, 1, 3, 4]);
        assert_eq!(g.adjncy, vec![1, 0, 2, 1]);
        assert_eq!(g.adjwgt, vec![5, 5, 1, 1]);
        assert_eq!(g.total_weight(), 6);
        assert_eq!(g.cut(&[0, 0, 1]), 1);
        assert_eq!(g.cut(&[0, 1, 1]), 5);
    }

    #[test]
    fn induced_subgraph_keeps_inner_edges_only() {
        let g = Graph::from_edges(4, vec![(0, 1, 1), (1, 2, 2), (2, 3, 3), (3, 0, 4)]);
        let s = g.induced(&[3, 2, 1]);
        assert_eq!(s.n(), 3);
        assert_eq!(s.total_weight(), 5);
        assert_eq!(s.neighbours(0).collect::<Vec<_>>(), vec![(1, 3)]);
    }
}
