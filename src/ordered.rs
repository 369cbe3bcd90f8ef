//! A map that remembers the order its keys came in, with O(1) insert and
//! remove whatever it holds (a process or thread ending costs the
//! same with ten or a million others live).  `IndexMap::shift_remove` keeps
//! the order but moves every later entry; `swap_remove` is O(1) but loses
//! it.  Here each entry carries the number of its arrival, and the rare
//! walks in order (the end of a trace, a process's end) sort by it.

use foldhash::HashMap;
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

    /// Put back what [`Ordered::take`] gave (`place` None: at the end);
    /// returns the place it has.
    pub fn put(&mut self, k: K, place: Option<u64>, v: V) -> u64 {
        let n = place.unwrap_or_else(|| self.arrival());
        self.map.insert(k, (n, v));
        n
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
}
