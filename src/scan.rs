//! MPI_Scan and MPI_Exscan: every process publishes each fragment of its
//! input once, to all higher ranks, and folds the lower ranks' fragments
//! itself in canonical order (`x_0 op ... op x_r`), so no chain of p hops
//! delays the last rank.

use crate::comm::Shared;
use crate::queue::Readers;
use crate::reduce::{fold_ranks, Piece, Reduction};

/// `inclusive`: Scan (else Exscan, whose rank 0 receives nothing).
pub fn scan(sh: &mut Shared, red: &Reduction, inclusive: bool) {
    let cut = sh.cut(red.layout.span(red.layout.count));
    let (me, p, f) = (sh.me, sh.p, cut.size);
    let op = sh.next_op();
    let higher: Vec<usize> = (me + 1..p).collect();
    let upto = if inclusive { me + 1 } else { me };
    for i in 0..red.layout.fragments(f) {
        let (_, n, offset, len) = red.layout.fragment(i, f);
        let pos = cut.pos(op, i);
        // SAFETY (whole block): offsets stay within the buffers of `count`
        // elements; scratch and slots hold a fragment.
        unsafe {
            let own = red.own.add(offset);
            if !higher.is_empty() {
                let dst = sh.writer.reserve(&sh.queues, &sh.waiter, pos, len);
                std::ptr::copy_nonoverlapping(own, dst, len);
                sh.writer
                    .publish(&sh.queues, pos, len, Readers::List(&higher));
            }
            if upto == 0 {
                continue;
            }
            // Our own input is read before the result overwrites it (in place).
            let acc = sh.scratch.ptr();
            fold_ranks(sh, 0..upto, own, acc, Piece { pos, n, len }, red);
            red.layout.copy_to_user(red.rbuf.add(offset), acc, n);
        }
    }
}
