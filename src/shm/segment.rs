//! The per-communicator shared-memory segment: creation, mapping, placement
//! and removal of its name.
//!
//! Lifecycle (driven by `channel::Shared::establish`, all processes together):
//! 1. the leader creates a uniquely named POSIX shm object (O_EXCL, mode 0600)
//!    sized for the layout, and maps it;
//! 2. the name travels to the others through the previous coll component;
//! 3. everybody maps it and reserves (fallocate) the pages of its own queue:
//!    tmpfs allocates a page on behalf of the process that first touches it,
//!    so each queue lands on its owner's NUMA node, and a full /dev/shm is
//!    reported as an error here instead of a SIGBUS later;
//! 4. after an agreement that all mapped it, the leader unlinks the name: from
//!    then on a crash leaves nothing behind in /dev/shm.

use std::ffi::CString;
use std::fs::File;
use std::os::fd::{FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicU64, Ordering};

use memmap2::{MmapMut, MmapOptions};

use crate::shm::layout::{Layout, MAGIC, PAGE};

/// A mapped segment.  Unmapped on drop.
pub struct Segment {
    map: MmapMut,
    layout: Layout,
}

/// Length of the name buffer exchanged between processes (NUL-padded).
pub const NAME_BYTES: usize = 64;

static NAME_COUNTER: AtomicU64 = AtomicU64::new(0);

fn os_error(what: &str) -> String {
    format!("{what}: {}", std::io::Error::last_os_error())
}

fn shm_open(name: &CString, create: bool) -> Result<OwnedFd, std::io::Error> {
    let flags = if create {
        libc::O_CREAT | libc::O_EXCL | libc::O_RDWR
    } else {
        libc::O_RDWR
    };
    // SAFETY: a valid C string; the returned descriptor is owned below.
    let fd = unsafe { libc::shm_open(name.as_ptr(), flags, 0o600) };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: `fd` is a fresh descriptor nobody else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

fn map(fd: OwnedFd, layout: Layout) -> Result<Segment, String> {
    let file = File::from(fd);
    // SAFETY: the shm object is shared on purpose; all concurrent access to it
    // goes through the queue protocol (atomics), never through Rust references
    // to plain data.
    let map = unsafe { MmapOptions::new().len(layout.total).map_mut(&file) }
        .map_err(|e| format!("mmap: {e}"))?;
    Ok(Segment { map, layout })
}

/// Removes a shm name (the mapping stays valid).
pub fn unlink(name: &str) {
    if let Ok(c) = CString::new(name) {
        // SAFETY: a valid C string.
        unsafe { libc::shm_unlink(c.as_ptr()) };
    }
}

impl Segment {
    /// Creates a new, uniquely named segment; returns it and its name.
    pub fn create(layout: Layout) -> Result<(Segment, String), String> {
        loop {
            let name = format!(
                "/sharm-{}-{}-{:x}",
                std::process::id(),
                NAME_COUNTER.fetch_add(1, Ordering::Relaxed),
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map(|d| d.subsec_nanos())
                    .unwrap_or(0)
            );
            let cname = CString::new(name.clone()).expect("no NUL in name");
            let fd = match shm_open(&cname, true) {
                Ok(fd) => fd,
                Err(e) if e.raw_os_error() == Some(libc::EEXIST) => continue,
                Err(e) => return Err(format!("shm_open {name}: {e}")),
            };
            let size = layout.total as libc::off_t;
            // SAFETY: a valid descriptor.
            if unsafe { libc::ftruncate(std::os::fd::AsRawFd::as_raw_fd(&fd), size) } != 0 {
                let e = os_error("ftruncate");
                unlink(&name);
                return Err(e);
            }
            let result = Self::reserve(&fd, 0, layout.queues_offset).and_then(|_| map(fd, layout));
            return match result {
                Ok(mut seg) => {
                    seg.write_header();
                    Ok((seg, name))
                }
                Err(e) => {
                    unlink(&name);
                    Err(e)
                }
            };
        }
    }

    /// Maps an existing segment by name and checks it matches `layout`.
    pub fn open(name: &str, layout: Layout) -> Result<Segment, String> {
        let cname = CString::new(name).map_err(|_| "bad segment name".to_owned())?;
        let fd = shm_open(&cname, false).map_err(|e| format!("shm_open {name}: {e}"))?;
        let seg = map(fd, layout)?;
        if seg.header_word(0) != MAGIC
            || seg.header_word(1) != layout.p as u64
            || seg.header_word(2) != layout.s as u64
            || seg.header_word(3) != layout.f as u64
        {
            return Err(format!(
                "segment {name} does not match this communicator's layout"
            ));
        }
        Ok(seg)
    }

    /// Allocates the pages of queue `owner` from the calling process (first
    /// touch: they land on its NUMA node), and from process 0 those of the
    /// pair buffer, which both of two processes write (`shm::pair`).  Fails
    /// cleanly when /dev/shm is full, instead of a SIGBUS at a later store.
    pub fn place_queue(&self, name: &str, owner: usize) -> Result<(), String> {
        let cname = CString::new(name).map_err(|_| "bad segment name".to_owned())?;
        let fd = shm_open(&cname, false).map_err(|e| format!("shm_open {name}: {e}"))?;
        Self::reserve(&fd, self.layout.queue(owner), self.layout.queue_stride)?;
        if owner == 0 && self.layout.pair_half > 0 {
            // The pair buffer ends the segment (`Layout::with_pair`).
            let (start, end) = (self.layout.pair_offset, self.layout.total);
            Self::reserve(&fd, start, end - start)?;
        }
        Ok(())
    }

    fn reserve(fd: &OwnedFd, offset: usize, len: usize) -> Result<(), String> {
        // SAFETY: a valid descriptor; the range lies within the object's size.
        let rc = unsafe {
            libc::posix_fallocate(
                std::os::fd::AsRawFd::as_raw_fd(fd),
                offset as libc::off_t,
                len as libc::off_t,
            )
        };
        if rc != 0 {
            return Err(format!(
                "posix_fallocate of {len} bytes in /dev/shm: {}",
                std::io::Error::from_raw_os_error(rc)
            ));
        }
        Ok(())
    }

    fn write_header(&mut self) {
        let words = [
            MAGIC,
            self.layout.p as u64,
            self.layout.s as u64,
            self.layout.f as u64,
        ];
        for (i, w) in words.iter().enumerate() {
            self.map[i * 8..i * 8 + 8].copy_from_slice(&w.to_le_bytes());
        }
    }

    fn header_word(&self, i: usize) -> u64 {
        u64::from_le_bytes(self.map[i * 8..i * 8 + 8].try_into().expect("8 bytes"))
    }

    /// Fills this process's page tables for the whole mapping, once every
    /// process placed its queue (call it after that agreement: a page not
    /// yet allocated would be allocated here, on this process's node).
    /// Returns false if the kernel declined (before Linux 5.14); the pages
    /// then fault in on first use, as they would anyway.
    ///
    /// Why: `posix_fallocate` allocates the pages, but each process still
    /// takes a minor fault on its first access to every page of its mapping.
    /// Without this, the first passes through a 2 MiB ring cost 512 faults
    /// per queue on both sides, inside the set-up calibration's timed calls
    /// and the first collectives; and the queue stores' timing
    /// (`shm::stores`) read those fills (1-2 GB/s, 32 KiB fills, np=2) as
    /// far cores and switched to non-temporal stores with the cores near.
    pub fn prefault(&self) -> bool {
        // SAFETY: the range is exactly our mapping; MADV_POPULATE_WRITE only
        // faults the pages in writable, as a write would, without changing
        // their contents.
        let rc = unsafe {
            libc::madvise(
                self.map.as_ptr() as *mut libc::c_void,
                self.layout.total,
                libc::MADV_POPULATE_WRITE,
            )
        };
        rc == 0
    }

    /// Base address of the mapping (page aligned).
    pub fn base(&self) -> *mut u8 {
        debug_assert_eq!(self.map.as_ptr() as usize % PAGE, 0);
        self.map.as_ptr() as *mut u8
    }

    pub fn layout(&self) -> &Layout {
        &self.layout
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Resident bytes of the mapping that starts at `base`, from
    /// /proc/self/smaps: pages this process has page-table entries for.
    fn resident(base: *const u8) -> usize {
        let smaps = std::fs::read_to_string("/proc/self/smaps").expect("smaps");
        let start = format!("{:x}-", base as usize);
        let mut lines = smaps.lines().skip_while(|l| !l.starts_with(&start));
        assert!(lines.next().is_some(), "mapping at {start} not in smaps");
        lines
            .find_map(|l| l.strip_prefix("Rss:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<usize>().ok())
            .expect("an Rss line")
            * 1024
    }

    /// Before `prefault` only the pages the creator wrote are mapped in;
    /// after it every page of the segment is.
    #[test]
    fn prefault_maps_every_page() {
        let layout = Layout::new(2, 64, 8192).unwrap();
        let (seg, name) = Segment::create(layout).expect("a segment in /dev/shm");
        for owner in 0..2 {
            seg.place_queue(&name, owner).expect("placed");
        }
        unlink(&name);
        assert!(resident(seg.base()) < layout.total, "faulted in already");
        assert!(seg.prefault(), "MADV_POPULATE_WRITE declined");
        assert_eq!(resident(seg.base()), layout.total);
    }
}
