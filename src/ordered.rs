//! A map that remembers the order its keys came in, with O(1) insert and
//! remove whatever it holds (a process or thread ending costs the
//! same with ten or a million others live).  `IndexMap::shift_remove` keeps
//! the order but moves every later entry; `swap_remove` is O(1) but loses
//! it.  Here each entry carries the number of its arrival, and the rare
//! walks in order (the end of a trace, a process's end) sort by it.

use foldhash::HashMap;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::hash::Hash;

#[derive(Debug, Clone)]
pub struct Ordered<K, V> {
    map: HashMap<K, (u64, V)>,
    next: u64,
}

impl<K, V> Default for Ordered<K, V> {
    fn default() -> Self {
        Ordered {
            map: HashMap::default(),
            next: 0,
        }
    }
}

impl<K: Hash + Eq + Clone, V> Ordered<K, V> {
    pub fn len(&self) -> usize {
        self.map.len()
    }

    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    pub fn contains_key(&self, k: &K) -> bool {
        self.map.contains_key(k)
    }

    pub fn get(&self, k: &K) -> Option<&V> {
        self.map.get(k).map(|(_, v)| v)
    }

    pub fn get_mut(&mut self, k: &K) -> Option<&mut V> {
        self.map.get_mut(k).map(|(_, v)| v)
    }

    fn arrival(&mut self) -> u64 {
        self.next += 1;
        self.next
    }

    /// `map[k] = v` (a dict assignment): a key already there keeps its
    /// place; returns the value it had.
    pub fn insert(&mut self, k: K, v: V) -> Option<V> {
        if let Some(e) = self.map.get_mut(&k) {
            return Some(std::mem::replace(&mut e.1, v));
        }
        let n = self.arrival();
        self.map.insert(k, (n, v));
        None
    }

    /// Insert at the end (a key already there moves there).
    pub fn push(&mut self, k: K, v: V) -> Option<V> {
        let n = self.arrival();
        self.map.insert(k, (n, v)).map(|(_, v)| v)
    }

    pub fn remove(&mut self, k: &K) -> Option<V> {
        self.map.remove(k).map(|(_, v)| v)
    }

    /// Take an entry out with its place, for [`Ordered::put`].
    pub fn take(&mut self, k: &K) -> Option<(u64, V)> {
        self.map.remove(k)
    }

    /// Put back what [`Ordered::take`] gave (`place` None: at the end).
    pub fn put(&mut self, k: K, place: Option<u64>, v: V) {
        let n = place.unwrap_or_else(|| self.arrival());
        self.map.insert(k, (n, v));
    }

    /// The place of `k` (smaller: came earlier).
    pub fn place(&self, k: &K) -> Option<u64> {
        self.map.get(k).map(|e| e.0)
    }

    /// The keys in the order they came in.
    pub fn keys(&self) -> Vec<K> {
        let mut v: Vec<(u64, &K)> = self.map.iter().map(|(k, (n, _))| (*n, k)).collect();
        v.sort_unstable_by_key(|e| e.0);
        v.into_iter().map(|(_, k)| k.clone()).collect()
    }

    /// Every entry, in the order they came in; the map is left empty.
    pub fn drain(&mut self) -> Vec<(K, V)> {
        let mut v: Vec<(u64, K, V)> = std::mem::take(&mut self.map)
            .into_iter()
            .map(|(k, (n, v))| (n, k, v))
            .collect();
        v.sort_unstable_by_key(|e| e.0);
        v.into_iter().map(|(_, k, v)| (k, v)).collect()
    }

    /// The entries in no particular order.
    pub fn iter(&self) -> impl Iterator<Item = (&K, &V)> {
        self.map.iter().map(|(k, (_, v))| (k, v))
    }
}

/// A min-queue for items that mostly come in order (the completion-order
/// buffer: each thread's keys rise, so the stream is a merge of a few
/// rising runs).  An item not below the last one goes to the back of a
/// sorted run, one a few places back is inserted there, and only the rest
/// go to a heap: push and pop are O(1) for the usual item where a heap of
/// thousands costs a dozen moves each.  Pops come in the order a
/// `BinaryHeap<Reverse<T>>` gives (items that compare equal in some
/// order).
#[derive(Debug, Clone)]
pub struct MinQueue<T> {
    /// ascending
    run: VecDeque<T>,
    /// what came too far out of order for `run`
    late: BinaryHeap<Reverse<T>>,
}

impl<T> Default for MinQueue<T> {
    fn default() -> Self {
        MinQueue {
            run: VecDeque::new(),
            late: BinaryHeap::new(),
        }
    }
}

/// How far back in the run an item is placed (further: the heap).
const STEPS_BACK: usize = 8;

impl<T: Ord> MinQueue<T> {
    pub fn len(&self) -> usize {
        self.run.len() + self.late.len()
    }

    pub fn is_empty(&self) -> bool {
        self.run.is_empty() && self.late.is_empty()
    }

    pub fn push(&mut self, x: T) {
        let n = self.run.len();
        let mut i = n;
        while i > 0 && n - i < STEPS_BACK && x < self.run[i - 1] {
            i -= 1;
        }
        if i == 0 || x >= self.run[i - 1] {
            self.run.insert(i, x);
        } else {
            self.late.push(Reverse(x));
        }
    }

    /// Whether the least item is the heap's.
    fn late_first(&self) -> bool {
        match (self.run.front(), self.late.peek()) {
            (Some(a), Some(Reverse(b))) => b < a,
            (None, Some(_)) => true,
            _ => false,
        }
    }

    /// The least item.
    pub fn peek(&self) -> Option<&T> {
        if self.late_first() {
            self.late.peek().map(|r| &r.0)
        } else {
            self.run.front()
        }
    }

    /// Take the least item out.
    pub fn pop(&mut self) -> Option<T> {
        if self.late_first() {
            self.late.pop().map(|r| r.0)
        } else {
            self.run.pop_front()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_arrival_order_through_removes() {
        let mut m: Ordered<u32, &str> = Ordered::default();
        for (k, v) in [(5, "a"), (1, "b"), (9, "c"), (3, "d")] {
            m.insert(k, v);
        }
        assert_eq!(m.remove(&1), Some("b"));
        // an assignment keeps the place, a push moves to the end
        assert_eq!(m.insert(5, "A"), Some("a"));
        m.push(9, "C");
        assert_eq!(m.keys(), vec![5, 3, 9]);
        let (n, v) = m.take(&5).unwrap();
        m.put(5, Some(n), v);
        assert_eq!(m.keys(), vec![5, 3, 9]);
        assert_eq!(m.drain(), vec![(5, "A"), (3, "d"), (9, "C")]);
        assert!(m.is_empty());
    }

    /// Pops in a heap's order whatever the arrival order: rising runs
    /// interleaved, items far out of place, repeats.
    #[test]
    fn min_queue_pops_as_a_heap_does() {
        let mut seed = 7u64;
        let mut rnd = move |m: u64| {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (seed >> 33) % m
        };
        for round in 0..200 {
            let mut q = MinQueue::default();
            let mut h = BinaryHeap::new();
            let mut clock = [0u64; 4];
            for step in 0..300 {
                let x = match round % 3 {
                    0 => rnd(1000),
                    _ => {
                        let t = rnd(4) as usize;
                        clock[t] += rnd(20);
                        clock[t] + if rnd(10) == 0 { rnd(500) } else { 0 }
                    }
                };
                q.push((x, step));
                h.push(Reverse((x, step)));
                if rnd(3) == 0 {
                    assert_eq!(q.pop(), h.pop().map(|r| r.0));
                }
                assert_eq!(q.len(), h.len());
                assert_eq!(q.peek(), h.peek().map(|r| &r.0));
            }
            while let Some(Reverse(x)) = h.pop() {
                assert_eq!(q.pop(), Some(x));
            }
            assert!(q.is_empty() && q.pop().is_none());
        }
    }
}
