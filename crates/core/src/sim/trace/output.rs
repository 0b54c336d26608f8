//! Where a trace file's bytes go: whole buffers (a megabyte of pcapng blocks or of event
//! records) handed to a `Sink`.
//!
//! A `FileOutput` (the event log's) writes them on a thread of its own (`handoff`), so a
//! traced run's disk writes — the kernel copying every byte into the page cache — overlap
//! its simulation instead of adding to it. Small writes are gathered into a buffer, and a
//! full one is handed over whole (`put`). The file receives exactly the bytes handed over,
//! in the order handed over.
use super::handoff::Handoff;
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::mem;
use std::path::Path;

/// Bytes written through `Write` gathered before they are handed over.
const GATHER_BYTES: usize = 1 << 20;

/// What takes a writer's full buffers.
pub trait Sink {
    /// Take all of `buf`'s bytes, leaving it empty (with room for as many again).
    fn put(&mut self, buf: &mut Vec<u8>) -> io::Result<()>;
}

/// In memory (tests, conversions into a buffer).
impl Sink for Vec<u8> {
    fn put(&mut self, buf: &mut Vec<u8>) -> io::Result<()> {
        self.extend_from_slice(buf);
        buf.clear();
        Ok(())
    }
}

impl Sink for &mut Vec<u8> {
    fn put(&mut self, buf: &mut Vec<u8>) -> io::Result<()> {
        (**self).put(buf)
    }
}

/// Written on the calling thread, a buffer at a time.
impl Sink for File {
    fn put(&mut self, buf: &mut Vec<u8>) -> io::Result<()> {
        self.write_all(buf)?;
        buf.clear();
        Ok(())
    }
}

/// Written on the calling thread.
impl<W: Write> Sink for BufWriter<W> {
    fn put(&mut self, buf: &mut Vec<u8>) -> io::Result<()> {
        self.write_all(buf)?;
        buf.clear();
        Ok(())
    }
}

/// A file written by a thread of its own (see the module note).
pub struct FileOutput {
    handoff: Handoff<Vec<u8>, ()>,
    /// Bytes written through `Write`, not yet handed over.
    gather: Vec<u8>,
}

impl FileOutput {
    /// Create (or truncate) the file at `path` and start its thread.
    pub fn create(path: &Path) -> io::Result<FileOutput> {
        let handoff = Handoff::spawn(
            "trace-writer",
            File::create(path)?,
            |file: &mut File, buf: &mut Vec<u8>| {
                file.write_all(buf)?;
                buf.clear();
                Ok(())
            },
            |_| Ok(()),
        )?;
        Ok(FileOutput {
            handoff,
            gather: Vec::new(),
        })
    }

    /// Hand everything over and wait until it is written; the first write error, if any.
    pub fn finish(mut self) -> io::Result<()> {
        self.close()
    }

    fn close(&mut self) -> io::Result<()> {
        let mut gathered = mem::take(&mut self.gather);
        let handed = self.put(&mut gathered);
        self.handoff.join(handed)
    }
}

impl Sink for FileOutput {
    fn put(&mut self, buf: &mut Vec<u8>) -> io::Result<()> {
        if buf.is_empty() {
            return Ok(());
        }
        let capacity = buf.capacity();
        self.handoff.hand_over(buf, || Vec::with_capacity(capacity))
    }
}

/// Small writes (the event log's records) are gathered and handed over a megabyte at a
/// time; `flush` hands over what is gathered without waiting for the disk.
impl Write for FileOutput {
    fn write(&mut self, b: &[u8]) -> io::Result<usize> {
        self.gather.extend_from_slice(b);
        if self.gather.len() >= GATHER_BYTES {
            let mut g = mem::take(&mut self.gather);
            let handed = self.put(&mut g);
            self.gather = g;
            handed?;
        }
        Ok(b.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        let mut g = mem::take(&mut self.gather);
        let handed = self.put(&mut g);
        self.gather = g;
        handed
    }
}

/// A file dropped unfinished (its run was interrupted) still gets every byte handed over
/// or gathered before the drop returns, as a `BufWriter`'s does.
impl Drop for FileOutput {
    fn drop(&mut self) {
        if self.handoff.is_open() {
            let _ = self.close();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp_path(name: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("tcplab-output-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        dir.join(name)
    }

    #[test]
    fn the_file_gets_every_buffer_and_write_in_order() {
        let path = temp_path("order.bin");
        let mut out = FileOutput::create(&path).unwrap();
        let mut expected = Vec::new();
        // more buffers than may wait, of several sizes, mixed with small writes
        for i in 0..40u32 {
            let mut buf: Vec<u8> = (0..(1000 + 7919 * i)).map(|j| (i + j) as u8).collect();
            expected.extend_from_slice(&buf);
            out.put(&mut buf).unwrap();
            assert!(buf.is_empty());
            let small = i.to_le_bytes();
            expected.extend_from_slice(&small);
            out.write_all(&small).unwrap();
            out.flush().unwrap();
        }
        out.write_all(b"tail").unwrap();
        expected.extend_from_slice(b"tail");
        out.finish().unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), expected);
        std::fs::remove_file(&path).unwrap();
    }

    #[test]
    fn a_dropped_file_keeps_what_was_handed_over_and_gathered() {
        let path = temp_path("dropped.bin");
        let mut out = FileOutput::create(&path).unwrap();
        let mut buf = vec![1u8; 3000];
        out.put(&mut buf).unwrap();
        out.write_all(&[2u8; 10]).unwrap();
        drop(out);
        let bytes = std::fs::read(&path).unwrap();
        assert_eq!(bytes.len(), 3010);
        assert_eq!(&bytes[2999..3001], &[1, 2]);
        std::fs::remove_file(&path).unwrap();
    }

    #[test]
    fn a_write_error_is_reported_by_a_later_hand_over_or_the_finish() {
        // Linux's /dev/full refuses every write with ENOSPC
        let full = Path::new("/dev/full");
        if !full.exists() {
            panic!("/dev/full is missing: this test needs Linux's full device");
        }
        let mut out = FileOutput::create(full).unwrap();
        let mut error = None;
        for _ in 0..10 {
            let mut buf = vec![0u8; 4096];
            if let Err(e) = out.put(&mut buf) {
                error = Some(e);
                break;
            }
        }
        let e = match error {
            Some(e) => e,
            None => out.finish().unwrap_err(),
        };
        assert_eq!(e.raw_os_error(), Some(28), "ENOSPC, got {e}");
    }
}
