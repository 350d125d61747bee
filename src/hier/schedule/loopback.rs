//! An in-process transport for the executor tests: one thread per process,
//! one FIFO channel per ordered pair (eager sends; receives complete in
//! posting order, as MPI's non-overtaking rule guarantees per pair).

use super::exec::Transport;
use std::sync::mpsc::{channel, Receiver, Sender};

pub struct Endpoint {
    to: Vec<Sender<(i32, Vec<u8>)>>,
    from: Vec<Receiver<(i32, Vec<u8>)>>,
}

pub enum Req {
    Done,
    Recv {
        from: usize,
        buf: *mut u8,
        len: usize,
        tag: i32,
    },
}

// SAFETY: a Req only travels with its Endpoint to the thread that owns the
// receive buffer.
unsafe impl Send for Req {}

/// Endpoints of `p` processes.
pub fn network(p: usize) -> Vec<Endpoint> {
    let mut tx: Vec<Vec<Option<Sender<_>>>> =
        (0..p).map(|_| (0..p).map(|_| None).collect()).collect();
    let mut rx: Vec<Vec<Option<Receiver<_>>>> =
        (0..p).map(|_| (0..p).map(|_| None).collect()).collect();
    for a in 0..p {
        for b in 0..p {
            let (s, r) = channel();
            tx[a][b] = Some(s);
            rx[b][a] = Some(r);
        }
    }
    tx.into_iter()
        .zip(rx)
        .map(|(t, r)| Endpoint {
            to: t.into_iter().map(Option::unwrap).collect(),
            from: r.into_iter().map(Option::unwrap).collect(),
        })
        .collect()
}

impl Transport for Endpoint {
    type Req = Req;

    unsafe fn isend(&mut self, to: usize, buf: *const u8, len: usize, tag: i32) -> Req {
        let data = std::slice::from_raw_parts(buf, len).to_vec();
        self.to[to].send((tag, data)).expect("peer alive");
        Req::Done
    }

    unsafe fn irecv(&mut self, from: usize, buf: *mut u8, len: usize, tag: i32) -> Req {
        Req::Recv {
            from,
            buf,
            len,
            tag,
        }
    }

    fn wait_all(&mut self, reqs: &mut Vec<Req>) -> Result<(), String> {
        for req in reqs.drain(..) {
            if let Req::Recv {
                from,
                buf,
                len,
                tag,
            } = req
            {
                let (t, data) = self.from[from]
                    .recv_timeout(std::time::Duration::from_secs(20))
                    .map_err(|e| format!("from {from}: {e}"))?;
                if t != tag || data.len() != len {
                    return Err(format!(
                        "from {from}: got {} bytes tag {t}, want {len} tag {tag}",
                        data.len()
                    ));
                }
                // SAFETY: the executor keeps `buf` valid until this returns.
                unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), buf, len) };
            }
        }
        Ok(())
    }
}
