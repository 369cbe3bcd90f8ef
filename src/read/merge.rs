//! Merging many sorted streams with few open: more than `max_open` streams
//! are merged group by
//! group into temporary spill files first.  Keys are unique and each stream
//! is sorted, so the result is the order of one flat merge.

use super::InputError;
use std::cmp::Ordering;
use std::collections::BinaryHeap;
use std::fs::File;
use std::io::{self, BufReader, BufWriter, Read, Write};
use std::path::Path;
use std::rc::Rc;

/// (completion time so far, file index, item number): a stream's running
/// maximum of event ends, so each stream is sorted by it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Key {
    pub last: f64,
    pub idx: u32,
    pub n: u64,
}

impl Eq for Key {}

impl Ord for Key {
    fn cmp(&self, o: &Self) -> Ordering {
        self.last
            .total_cmp(&o.last)
            .then(self.idx.cmp(&o.idx))
            .then(self.n.cmp(&o.n))
    }
}

impl PartialOrd for Key {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}

/// An item that can be written to a spill file and read back.
pub trait Spill: Sized {
    fn spill(&self, w: &mut dyn Write) -> io::Result<()>;
    /// None at the end of the file.
    fn unspill(r: &mut dyn Read) -> io::Result<Option<Self>>;
}

/// A shared item spills as the item (the event stream moves `Rc`s: a
/// pointer, not some 280 bytes, through each stage).
impl<T: Spill> Spill for Rc<T> {
    fn spill(&self, w: &mut dyn Write) -> io::Result<()> {
        (**self).spill(w)
    }
    fn unspill(r: &mut dyn Read) -> io::Result<Option<Self>> {
        Ok(T::unspill(r)?.map(Rc::new))
    }
}

pub type Keyed<T> = Result<(Key, T), InputError>;
pub type Stream<T> = Box<dyn Iterator<Item = Keyed<T>>>;
/// Makes a stream when the merge needs it (a file is opened only then).
pub type Maker<T> = Box<dyn FnOnce() -> Stream<T>>;

/// heapq.merge of streams: every stream is asked for its first item in
/// order, then the least is handed out and its stream asked for the next
/// one only when the consumer asks for more.
pub struct Merge<T> {
    streams: Vec<Stream<T>>,
    heap: BinaryHeap<Entry<T>>,
    primed: bool,
    /// the stream whose item went out last: asked for its next one
    advance: Option<usize>,
    failed: bool,
}

struct Entry<T> {
    key: Key,
    src: usize,
    item: T,
}

impl<T> PartialEq for Entry<T> {
    fn eq(&self, o: &Self) -> bool {
        self.key == o.key
    }
}
impl<T> Eq for Entry<T> {}
impl<T> PartialOrd for Entry<T> {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl<T> Ord for Entry<T> {
    // a max-heap: the least key on top
    fn cmp(&self, o: &Self) -> Ordering {
        o.key.cmp(&self.key).then(o.src.cmp(&self.src))
    }
}

impl<T> Merge<T> {
    pub fn new(streams: Vec<Stream<T>>) -> Self {
        Merge {
            streams,
            heap: BinaryHeap::new(),
            primed: false,
            advance: None,
            failed: false,
        }
    }

    /// Ask stream `i` for its next item; Err ends the merge.
    fn pull(&mut self, i: usize) -> Result<(), InputError> {
        match self.streams[i].next() {
            Some(Ok((key, item))) => {
                self.heap.push(Entry { key, src: i, item });
                Ok(())
            }
            Some(Err(e)) => Err(e),
            None => Ok(()),
        }
    }
}

impl<T> Iterator for Merge<T> {
    type Item = Keyed<T>;

    fn next(&mut self) -> Option<Keyed<T>> {
        if self.failed {
            return None;
        }
        let step = if !self.primed {
            self.primed = true;
            (0..self.streams.len()).try_for_each(|i| self.pull(i))
        } else if let Some(i) = self.advance.take() {
            self.pull(i)
        } else {
            Ok(())
        };
        if let Err(e) = step {
            self.failed = true;
            return Some(Err(e));
        }
        let top = self.heap.pop()?;
        self.advance = Some(top.src);
        Some(Ok((top.key, top.item)))
    }
}

/// The merge of what `makers` make, holding at most `max_open` streams
/// open at once, at any number of makers: groups of `max_open` are merged
/// into spill files, round after round, until few enough are left.  A
/// spill file is closed once written and opened again only when the next
/// round's merge reaches it (so files open at once: a group's inputs and
/// the spill being written).  Groups are spilled before the first item
/// comes out; an error while spilling is the merge's only item.
pub fn bounded_merge<T: Spill + 'static>(mut makers: Vec<Maker<T>>, max_open: usize) -> Merge<T> {
    let max_open = max_open.max(2);
    if makers.len() <= max_open {
        return Merge::new(makers.into_iter().map(|m| m()).collect());
    }
    let dir = match tempfile::Builder::new()
        .prefix("rocrtrace-merge-")
        .tempdir()
    {
        Ok(d) => Rc::new(d),
        Err(e) => return failed(io_err(e)),
    };
    let mut n = 0u64;
    while makers.len() > max_open {
        let mut next: Vec<Maker<T>> = Vec::new();
        let mut rest = makers.into_iter();
        loop {
            let group: Vec<Maker<T>> = rest.by_ref().take(max_open).collect();
            if group.is_empty() {
                break;
            }
            n += 1;
            let path = dir.path().join(n.to_string());
            let merged = Merge::new(group.into_iter().map(|m| m()).collect());
            if let Err(e) = spill(merged, &path) {
                return failed(e);
            }
            let dir = dir.clone();
            next.push(Box::new(move || -> Stream<T> {
                let f = File::open(&path);
                // read through the open file from now on: the name can go
                let _ = std::fs::remove_file(&path);
                drop(dir);
                match f {
                    Ok(f) => Box::new(Unspill::new(f)),
                    Err(e) => Box::new(std::iter::once(Err(io_err(e)))),
                }
            }));
        }
        makers = next;
    }
    Merge::new(makers.into_iter().map(|m| m()).collect())
}

fn io_err(e: io::Error) -> InputError {
    super::input_error("merge", &super::why(&e))
}

fn failed<T: 'static>(e: InputError) -> Merge<T> {
    let err: Stream<T> = Box::new(std::iter::once(Err(e)));
    Merge::new(vec![err])
}

/// Write a merge to the spill file `path`, closed when done.
fn spill<T: Spill>(items: Merge<T>, path: &Path) -> Result<(), InputError> {
    let file = File::options()
        .write(true)
        .create_new(true)
        .open(path)
        .map_err(io_err)?;
    let mut w = BufWriter::new(file);
    for it in items {
        let (key, item) = it?;
        w.write_all(&key.last.to_le_bytes()).map_err(io_err)?;
        w.write_all(&key.idx.to_le_bytes()).map_err(io_err)?;
        w.write_all(&key.n.to_le_bytes()).map_err(io_err)?;
        item.spill(&mut w).map_err(io_err)?;
    }
    w.flush().map_err(io_err)?;
    Ok(())
}

struct Unspill<T> {
    r: BufReader<File>,
    _t: std::marker::PhantomData<T>,
}

impl<T> Unspill<T> {
    fn new(f: File) -> Self {
        Unspill {
            r: BufReader::new(f),
            _t: std::marker::PhantomData,
        }
    }
}

fn read_n<const N: usize>(r: &mut dyn Read) -> io::Result<Option<[u8; N]>> {
    let mut b = [0u8; N];
    let mut have = 0;
    while have < N {
        match r.read(&mut b[have..])? {
            0 if have == 0 => return Ok(None),
            0 => return Err(io::ErrorKind::UnexpectedEof.into()),
            k => have += k,
        }
    }
    Ok(Some(b))
}

impl<T: Spill> Iterator for Unspill<T> {
    type Item = Keyed<T>;

    fn next(&mut self) -> Option<Keyed<T>> {
        let r: &mut dyn Read = &mut self.r;
        let last = match read_n::<8>(r) {
            Ok(Some(b)) => f64::from_le_bytes(b),
            Ok(None) => return None,
            Err(e) => return Some(Err(io_err(e))),
        };
        let rest = (|| -> io::Result<(Key, T)> {
            let eof = || io::Error::from(io::ErrorKind::UnexpectedEof);
            let idx = u32::from_le_bytes(read_n::<4>(r)?.ok_or_else(eof)?);
            let n = u64::from_le_bytes(read_n::<8>(r)?.ok_or_else(eof)?);
            let item = T::unspill(r)?.ok_or_else(eof)?;
            Ok((Key { last, idx, n }, item))
        })();
        Some(rest.map_err(io_err))
    }
}
