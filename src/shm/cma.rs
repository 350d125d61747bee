//! Cross Memory Attach: copying straight out of another process's memory
//! with `process_vm_readv` (one copy instead of two through a queue).
//!
//! The kernel allows it when the caller may ptrace the target
//! (`PTRACE_MODE_ATTACH_REALCREDS`): same user and a dumpable target, or
//! CAP_SYS_PTRACE, and Yama's `ptrace_scope` not forbidding it.  Containers
//! often remove the capability or filter the system call, so whether it works
//! is found out by trying (see `single::setup`), never assumed.

/// A region of another process's address space: `len` bytes at `addr` of
/// process `pid`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Remote {
    pub pid: i32,
    pub addr: usize,
    pub len: usize,
}

/// Bytes one `Remote` takes when published (pid, address, length: 3 × u64);
/// it fits a slot header's inline payload, so an offer costs one line.
pub const ENCODED: usize = 24;

impl Remote {
    pub fn encode(&self) -> [u8; ENCODED] {
        let mut out = [0u8; ENCODED];
        out[..8].copy_from_slice(&(self.pid as u64).to_le_bytes());
        out[8..16].copy_from_slice(&(self.addr as u64).to_le_bytes());
        out[16..].copy_from_slice(&(self.len as u64).to_le_bytes());
        out
    }

    pub fn decode(bytes: &[u8]) -> Option<Remote> {
        if bytes.len() != ENCODED {
            return None;
        }
        let word = |i: usize| u64::from_le_bytes(bytes[i..i + 8].try_into().expect("8 bytes"));
        Some(Remote {
            pid: i32::try_from(word(0)).ok()?,
            addr: usize::try_from(word(8)).ok()?,
            len: usize::try_from(word(16)).ok()?,
        })
    }

    /// Copies bytes `[offset, offset + len)` of the region into `dst`.
    ///
    /// # Safety
    /// `dst` must be writable for `len` bytes and not shared with anyone
    /// while the kernel writes it.
    pub unsafe fn pull(&self, offset: usize, dst: *mut u8, len: usize) -> Result<(), String> {
        if offset.checked_add(len).is_none_or(|end| end > self.len) {
            return Err(format!(
                "bytes {offset}..+{len} lie outside the {} offered",
                self.len
            ));
        }
        read(self.pid, self.addr + offset, dst, len)
    }
}

/// Reads `len` bytes at `addr` of process `pid` into `dst`.
///
/// # Safety
/// `dst` must be writable for `len` bytes.
pub unsafe fn read(pid: i32, addr: usize, dst: *mut u8, len: usize) -> Result<(), String> {
    let mut done = 0;
    while done < len {
        let local = libc::iovec {
            iov_base: dst.add(done).cast(),
            iov_len: len - done,
        };
        let remote = libc::iovec {
            iov_base: (addr + done) as *mut libc::c_void,
            iov_len: len - done,
        };
        // SAFETY: one local and one remote iovec; the local one is writable
        // (caller's contract), the remote one is only read by the kernel,
        // which checks it against the target's mappings (EFAULT otherwise).
        let n = libc::process_vm_readv(pid, &local, 1, &remote, 1, 0);
        match n {
            // A partial read happens at a page the target does not map or
            // when the kernel stops early; go on from where it stopped.
            n if n > 0 => done += n as usize,
            0 => return Err(format!("process_vm_readv from pid {pid} read nothing")),
            _ => {
                let err = std::io::Error::last_os_error();
                if err.kind() == std::io::ErrorKind::Interrupted {
                    continue;
                }
                return Err(format!("process_vm_readv from pid {pid}: {err}"));
            }
        }
    }
    Ok(())
}

/// This process's id as CMA names it.
pub fn pid() -> i32 {
    // SAFETY: getpid has no preconditions.
    unsafe { libc::getpid() }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodes_round_trip() {
        let r = Remote {
            pid: 4242,
            addr: 0x7fff_1234_5678,
            len: 3 << 20,
        };
        assert_eq!(Remote::decode(&r.encode()), Some(r));
        assert_eq!(Remote::decode(&[0u8; 8]), None);
    }

    /// Reading our own memory goes through the same system call (permitted
    /// for oneself unless it is filtered); bounds are checked before it.
    #[test]
    fn pulls_from_a_process_and_checks_bounds() {
        let src: Vec<u8> = (0..100_000u32).map(|i| (i * 7) as u8).collect();
        let r = Remote {
            pid: pid(),
            addr: src.as_ptr() as usize,
            len: src.len(),
        };
        let mut dst = vec![0u8; 5000];
        match unsafe { r.pull(1234, dst.as_mut_ptr(), dst.len()) } {
            Ok(()) => assert_eq!(dst[..], src[1234..6234]),
            Err(e) => eprintln!("CMA not permitted here, only bounds checked: {e}"),
        }
        assert!(unsafe { r.pull(99_000, dst.as_mut_ptr(), 5000) }.is_err());
    }
}
