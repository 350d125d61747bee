//! k-nomial trees over relative ranks 0..n (0 is the tree's root).
//!
//! Node v's parent is v with its lowest non-zero base-k digit cleared.  The
//! children of v are v + j·k^i for j in 1..k and every i below the position of
//! v's lowest non-zero digit (all positions for the root).  Each subtree is a
//! contiguous range of ranks, `[v, v + k^low(v))`, and the children come in
//! increasing order, so a node that combines its own value with its
//! children's results in child order reproduces MPI's canonical rank order:
//! non-commutative reductions stay correct.

/// The radix actually used (k < 2 would not be a tree).
fn radix(k: usize) -> usize {
    k.max(2)
}

/// k^i for the position i of v's lowest non-zero base-k digit (v > 0).
fn lowest_digit_weight(v: usize, k: usize) -> usize {
    let mut weight = 1;
    while v.is_multiple_of(weight * k) {
        weight *= k;
    }
    weight
}

/// Size of the subtree rooted at `v` in an n-node tree: it spans
/// `[v, v + subtree_span(v))` clipped to n.
fn subtree_span(v: usize, k: usize, n: usize) -> usize {
    if v == 0 {
        n.max(1)
    } else {
        lowest_digit_weight(v, k)
    }
}

/// Parent of `v`, or None for the root.
pub fn parent(v: usize, k: usize) -> Option<usize> {
    if v == 0 {
        return None;
    }
    let k = radix(k);
    let weight = lowest_digit_weight(v, k);
    Some(v - (v / weight % k) * weight)
}

/// Children of `v` in increasing order, written into `out` (cleared first).
pub fn children(v: usize, k: usize, n: usize, out: &mut Vec<usize>) {
    out.clear();
    let k = radix(k);
    let limit = subtree_span(v, k, n);
    let mut step = 1;
    while step < limit {
        for j in 1..k {
            let c = v + j * step;
            if c >= n || j * step >= limit {
                break;
            }
            out.push(c);
        }
        match step.checked_mul(k) {
            Some(next) => step = next,
            None => break,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn subtree(v: usize, k: usize, n: usize) -> Vec<usize> {
        let mut all = vec![v];
        let mut kids = Vec::new();
        children(v, k, n, &mut kids);
        for c in kids {
            all.extend(subtree(c, k, n));
        }
        all
    }

    #[test]
    fn every_node_reached_once_and_subtrees_contiguous() {
        for k in 2..6 {
            for n in 1..70 {
                let mut all = subtree(0, k, n);
                all.sort();
                assert_eq!(all, (0..n).collect::<Vec<_>>(), "k={k} n={n}");
                for v in 0..n {
                    let s = subtree(v, k, n);
                    // Canonical order: the pre-order walk is the rank range.
                    assert_eq!(s, (v..v + s.len()).collect::<Vec<_>>(), "k={k} n={n} v={v}");
                }
            }
        }
    }

    #[test]
    fn parent_and_children_agree() {
        let mut kids = Vec::new();
        for k in 2..6 {
            for n in 2..70 {
                for v in 0..n {
                    children(v, k, n, &mut kids);
                    for &c in &kids {
                        assert_eq!(parent(c, k), Some(v), "k={k} n={n} v={v} c={c}");
                    }
                }
            }
        }
        assert_eq!(parent(0, 2), None);
    }

    #[test]
    fn binomial_example() {
        let mut kids = Vec::new();
        children(0, 2, 16, &mut kids);
        assert_eq!(kids, vec![1, 2, 4, 8]);
        children(4, 2, 16, &mut kids);
        assert_eq!(kids, vec![5, 6]);
        children(0, 3, 10, &mut kids);
        assert_eq!(kids, vec![1, 2, 3, 6, 9]);
        assert_eq!(parent(7, 3), Some(6));
    }
}
