//! Cross Memory Attach: copying straight out of another process's memory
//! with `process_vm_readv`, or into it with `process_vm_writev` (one copy
//! instead of two through a queue).
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
        read(self.pid, self.at(offset, len)?, dst, len)
    }

    /// Copies `len` bytes from `src` into bytes `[offset, offset + len)` of
    /// the region.
    ///
    /// # Safety
    /// `src` must be readable for `len` bytes; the region's owner must have
    /// offered it for writing and not touch it until acknowledged.
    pub unsafe fn push(&self, offset: usize, src: *const u8, len: usize) -> Result<(), String> {
        write(self.pid, self.at(offset, len)?, src, len)
    }

    /// The address of bytes `[offset, offset + len)` of the region, checked
    /// to lie within it.
    fn at(&self, offset: usize, len: usize) -> Result<usize, String> {
        if offset.checked_add(len).is_none_or(|end| end > self.len) {
            return Err(format!(
                "bytes {offset}..+{len} lie outside the {} offered",
                self.len
            ));
        }
        Ok(self.addr + offset)
    }
}

/// Which way a CMA system call copies.
#[derive(Clone, Copy)]
enum Direction {
    /// `process_vm_readv`: remote to local.
    Read,
    /// `process_vm_writev`: local to remote.
    Write,
}

/// Reads `len` bytes at `addr` of process `pid` into `dst`.
///
/// # Safety
/// `dst` must be writable for `len` bytes.
pub unsafe fn read(pid: i32, addr: usize, dst: *mut u8, len: usize) -> Result<(), String> {
    // SAFETY: forwarded contract.
    unsafe { transfer(Direction::Read, pid, addr, dst, len) }
}

/// Writes `len` bytes from `src` to `addr` of process `pid`.
///
/// # Safety
/// `src` must be readable for `len` bytes.
pub unsafe fn write(pid: i32, addr: usize, src: *const u8, len: usize) -> Result<(), String> {
    // SAFETY: forwarded contract; a write only reads the local range.
    unsafe { transfer(Direction::Write, pid, addr, src.cast_mut(), len) }
}

/// Moves `len` bytes between `local` and `addr` of process `pid`, going on
/// after partial transfers.
///
/// # Safety
/// `local` must be valid for `len` bytes in the direction's sense
/// (writable to read, readable to write).
unsafe fn transfer(
    way: Direction,
    pid: i32,
    addr: usize,
    local: *mut u8,
    len: usize,
) -> Result<(), String> {
    let name = match way {
        Direction::Read => "process_vm_readv from",
        Direction::Write => "process_vm_writev to",
    };
    let mut done = 0;
    while done < len {
        let here = libc::iovec {
            // SAFETY: `done < len`, inside the caller's range.
            iov_base: unsafe { local.add(done) }.cast(),
            iov_len: len - done,
        };
        let there = libc::iovec {
            iov_base: (addr + done) as *mut libc::c_void,
            iov_len: len - done,
        };
        // SAFETY: one local and one remote iovec; the local one is valid in
        // the direction's sense (caller's contract); the kernel checks the
        // remote one against the target's mappings (EFAULT otherwise).
        let n = unsafe {
            match way {
                Direction::Read => libc::process_vm_readv(pid, &here, 1, &there, 1, 0),
                Direction::Write => libc::process_vm_writev(pid, &here, 1, &there, 1, 0),
            }
        };
        match n {
            // A partial transfer happens at a page the target does not map
            // or when the kernel stops early; go on from where it stopped.
            n if n > 0 => done += n as usize,
            0 => return Err(format!("{name} pid {pid} moved nothing")),
            _ => {
                let err = std::io::Error::last_os_error();
                if err.kind() == std::io::ErrorKind::Interrupted {
                    continue;
                }
                return Err(format!("{name} pid {pid}: {err}"));
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

    /// Writing goes through `process_vm_writev`, bounds checked before it.
    #[test]
    fn pushes_into_a_process_and_checks_bounds() {
        let mut dst = vec![0u8; 10_000];
        let r = Remote {
            pid: pid(),
            addr: dst.as_mut_ptr() as usize,
            len: dst.len(),
        };
        let src: Vec<u8> = (0..3000u32).map(|i| (i * 13 + 1) as u8).collect();
        match unsafe { r.push(4321, src.as_ptr(), src.len()) } {
            Ok(()) => {
                assert_eq!(dst[4321..7321], src[..]);
                assert!(dst[..4321].iter().chain(&dst[7321..]).all(|&b| b == 0));
            }
            Err(e) => eprintln!("CMA not permitted here, only bounds checked: {e}"),
        }
        assert!(unsafe { r.push(8000, src.as_ptr(), src.len()) }.is_err());
    }
}
