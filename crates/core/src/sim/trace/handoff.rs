//! A trace file's writing thread, seen from the run: full items (a buffer of bytes, a batch
//! of packets) go to the thread through a queue of at most `QUEUED` items, and the items the
//! thread is done with come back, emptied, to be filled again. Items are reused because a
//! fresh one would cost the run a page fault per page it fills; `ITEMS` are made, enough for
//! the run never to wait for a spare while a place in the queue is free. A run that fills
//! items faster than the thread empties them waits for it, so memory stays bounded. A work
//! error ends the thread; the next hand-over, or the join at the end, reports it.
use std::io;
use std::mem;
use std::sync::mpsc::{channel, sync_channel, Receiver, SyncSender};
use std::thread::{self, JoinHandle};

/// Full items that may wait for the thread.
const QUEUED: usize = 2;
/// Items in all: one being filled, the queued ones and one being worked on.
const ITEMS: usize = QUEUED + 2;

/// The run's end of a writing thread whose work on items of type `T` ends in an `R`.
pub(super) struct Handoff<T, R> {
    /// `None` once closed.
    full: Option<SyncSender<T>>,
    /// Items the thread is done with, emptied.
    spare: Receiver<T>,
    /// Items made so far (handed over, or being filled).
    made: usize,
    /// `None` once joined.
    thread: Option<JoinHandle<io::Result<R>>>,
}

impl<T: Send + 'static, R: Send + 'static> Handoff<T, R> {
    /// Start thread `name`, which takes `state` and runs `each` on every item handed over
    /// (`each` leaves the item empty), then `end` once the run closes its side.
    pub fn spawn<S: Send + 'static>(
        name: &str,
        mut state: S,
        each: fn(&mut S, &mut T) -> io::Result<()>,
        end: fn(S) -> io::Result<R>,
    ) -> io::Result<Handoff<T, R>> {
        let (full, to_work) = sync_channel::<T>(QUEUED);
        let (give_back, spare) = channel();
        let thread = thread::Builder::new().name(name.into()).spawn(move || {
            for mut item in to_work {
                each(&mut state, &mut item)?;
                // the run may have stopped taking spares: nothing lost
                let _ = give_back.send(item);
            }
            end(state)
        })?;
        Ok(Handoff {
            full: Some(full),
            spare,
            made: 1,
            thread: Some(thread),
        })
    }

    /// Hand `item` to the thread, leaving in its place an empty one (a spare, or one made by
    /// `fresh`).
    pub fn hand_over(&mut self, item: &mut T, fresh: impl FnOnce() -> T) -> io::Result<()> {
        let Some(full) = &self.full else {
            return Err(io::Error::other("trace file already closed"));
        };
        let empty = match self.spare.try_recv() {
            Ok(spare) => Some(spare),
            Err(_) if self.made < ITEMS => {
                self.made += 1;
                Some(fresh())
            }
            // all in use: wait for the thread to finish one (or to stop on an error)
            Err(_) => self.spare.recv().ok(),
        };
        if let Some(empty) = empty {
            if full.send(mem::replace(item, empty)).is_ok() {
                return Ok(());
            }
        }
        // the thread stopped on an error: report it
        self.full = None;
        match self.thread.take().map(JoinHandle::join) {
            Some(Ok(Err(e))) => Err(e),
            _ => Err(io::Error::other("the trace file's thread stopped")),
        }
    }

    /// The thread is still to be joined.
    pub fn is_open(&self) -> bool {
        self.thread.is_some()
    }

    /// Close the run's side and wait for the thread: what its work ended in. `handed` is
    /// the outcome of the last hand-over, reported when the thread itself had no error
    /// (which would explain a refused hand-over).
    pub fn join(&mut self, handed: io::Result<()>) -> io::Result<R> {
        self.full = None;
        let joined = self.thread.take().map(|t| {
            t.join()
                .unwrap_or_else(|_| Err(io::Error::other("the trace file's thread panicked")))
        });
        match (joined, handed) {
            (Some(Err(e)), _) | (_, Err(e)) => Err(e),
            (Some(Ok(r)), Ok(())) => Ok(r),
            (None, Ok(())) => Err(io::Error::other("trace file already closed")),
        }
    }
}
