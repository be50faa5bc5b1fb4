//! [`AddrTags`]: a few values keyed by a descriptor address, e.g. the trace tag of the
//! frame a ring descriptor carries. A ring has a handful of descriptors, so a vector
//! searched from the front serves: unlike a map it keeps its memory when it empties,
//! which the per-frame tags do between frames.

/// Values keyed by descriptor address (at most one per address; no order).
#[derive(Clone, Debug)]
pub(crate) struct AddrTags<T> {
    entries: Vec<(u64, T)>,
}

impl<T> Default for AddrTags<T> {
    fn default() -> Self {
        Self {
            entries: Vec::new(),
        }
    }
}

impl<T> AddrTags<T> {
    /// Puts `value` under `addr`, replacing what was there.
    pub(crate) fn insert(&mut self, addr: u64, value: T) {
        match self.entries.iter_mut().find(|(a, _)| *a == addr) {
            Some((_, v)) => *v = value,
            None => self.entries.push((addr, value)),
        }
    }

    /// The value under `addr`.
    pub(crate) fn get(&self, addr: u64) -> Option<&T> {
        self.entries
            .iter()
            .find(|(a, _)| *a == addr)
            .map(|(_, v)| v)
    }

    /// Takes the value under `addr` out.
    pub(crate) fn remove(&mut self, addr: u64) -> Option<T> {
        let i = self.entries.iter().position(|(a, _)| *a == addr)?;
        Some(self.entries.swap_remove(i).1)
    }

    /// Every value (in no particular order).
    pub(crate) fn values_mut(&mut self) -> impl Iterator<Item = &mut T> {
        self.entries.iter_mut().map(|(_, v)| v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tag_per_address_replaced_and_taken() {
        let mut t = AddrTags::default();
        t.insert(0x40, 'a');
        t.insert(0x50, 'b');
        t.insert(0x40, 'c');
        assert_eq!(t.get(0x40), Some(&'c'), "replaced");
        assert_eq!(t.get(0x60), None);
        for v in t.values_mut() {
            *v = v.to_ascii_uppercase();
        }
        assert_eq!(t.remove(0x40), Some('C'));
        assert_eq!(t.remove(0x40), None, "taken once");
        assert_eq!(t.remove(0x50), Some('B'));
        assert!(t.entries.is_empty());
    }
}
