//! Where a trace file's bytes go: whole buffers (a megabyte of pcapng blocks or of event
//! records) handed to a `Sink`.
//!
//! A `FileOutput` (the event log's) writes them on a thread of its own, so a traced run's
//! disk writes — the kernel copying every byte into the page cache — overlap its
//! simulation instead of adding to it. Small writes are gathered into a buffer; a full one
//! is handed over whole (`put`), and an empty one the thread is done with taken back. At
//! most `QUEUED_BUFFERS` full buffers wait: a run that fills them faster than the disk
//! takes them waits for it, and memory stays bounded. The file receives exactly the bytes
//! handed over, in the order handed over; a write error ends the thread, and the next
//! hand-over or the end of the file reports it.
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::mem;
use std::path::Path;
use std::sync::mpsc::{channel, sync_channel, Receiver, SyncSender};
use std::thread::{self, JoinHandle};

/// Full buffers that may wait for the writing thread.
const QUEUED_BUFFERS: usize = 2;
/// Buffers of a file: one being filled, the queued ones and one being written.
const BUFFERS: usize = QUEUED_BUFFERS + 2;
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
    /// `None` once closed.
    full: Option<SyncSender<Vec<u8>>>,
    /// Buffers the thread has written, empty, for the next hand-overs.
    spare: Receiver<Vec<u8>>,
    /// Buffers made so far (handed over, or being filled by the run).
    made: usize,
    /// Bytes written through `Write`, not yet handed over.
    gather: Vec<u8>,
    /// `None` once joined.
    thread: Option<JoinHandle<io::Result<()>>>,
}

impl FileOutput {
    /// Create (or truncate) the file at `path` and start its thread.
    pub fn create(path: &Path) -> io::Result<FileOutput> {
        let mut file = File::create(path)?;
        let (full, to_write) = sync_channel::<Vec<u8>>(QUEUED_BUFFERS);
        let (give_back, spare) = channel();
        let thread = thread::Builder::new()
            .name("trace-writer".into())
            .spawn(move || {
                // ends when the run closes its side; an error ends it early, which the run
                // sees at its next hand-over (the channel is closed) or at `finish`
                for mut buf in to_write {
                    file.write_all(&buf)?;
                    buf.clear();
                    // the run may have stopped taking spares: nothing lost
                    let _ = give_back.send(buf);
                }
                Ok(())
            })?;
        Ok(FileOutput {
            full: Some(full),
            spare,
            made: 1,
            gather: Vec::new(),
            thread: Some(thread),
        })
    }

    /// Hand everything over and wait until it is written; the first write error, if any.
    pub fn finish(mut self) -> io::Result<()> {
        self.close()
    }

    fn close(&mut self) -> io::Result<()> {
        let mut gathered = mem::take(&mut self.gather);
        let handed = self.put(&mut gathered);
        self.full = None;
        let written = match self.thread.take() {
            Some(t) => t
                .join()
                .unwrap_or_else(|_| Err(io::Error::other("the trace writer's thread panicked"))),
            None => Ok(()),
        };
        // the thread's own error explains a refused hand-over
        written.and(handed)
    }
}

impl Sink for FileOutput {
    fn put(&mut self, buf: &mut Vec<u8>) -> io::Result<()> {
        if buf.is_empty() {
            return Ok(());
        }
        let Some(full) = &self.full else {
            return Err(io::Error::other("trace file already closed"));
        };
        // Every buffer is reused once written: a fresh one would cost the run a page fault
        // per page it fills. Enough are made for the run never to wait for a spare while
        // a place in the queue is free.
        let empty = match self.spare.try_recv() {
            Ok(b) => Some(b),
            Err(_) if self.made < BUFFERS => {
                self.made += 1;
                Some(Vec::with_capacity(buf.capacity()))
            }
            // all in use: wait for the thread to finish one (or to stop on an error)
            Err(_) => self.spare.recv().ok(),
        };
        if let Some(empty) = empty {
            if full.send(mem::replace(buf, empty)).is_ok() {
                return Ok(());
            }
        }
        // the thread stopped on an error: report it
        self.full = None;
        match self.thread.take().map(JoinHandle::join) {
            Some(Ok(Err(e))) => Err(e),
            _ => Err(io::Error::other("the trace writer's thread stopped")),
        }
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
        let _ = self.close();
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
