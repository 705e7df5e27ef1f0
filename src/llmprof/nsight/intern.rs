//! Shared strings for the Nsight parsers. A raw ncu export repeats the same metric names, units,
//! section names and device strings for every kernel (46k kernels × 630 columns in a 200 MB
//! capture): each distinct string is allocated once per parse and every record holds a pointer.
use serde::{Serialize, Serializer};
use std::borrow::Borrow;
use std::collections::HashSet;
use std::fmt;
use std::ops::Deref;
use std::sync::Arc;

/// An immutable shared string; compares, hashes and prints as its text.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct Sym(Arc<str>);

impl Sym {
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl Deref for Sym {
    type Target = str;
    fn deref(&self) -> &str {
        &self.0
    }
}

impl Borrow<str> for Sym {
    fn borrow(&self) -> &str {
        &self.0
    }
}

impl AsRef<str> for Sym {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl From<&str> for Sym {
    fn from(s: &str) -> Self {
        Sym(Arc::from(s))
    }
}

impl PartialEq<str> for Sym {
    fn eq(&self, other: &str) -> bool {
        &*self.0 == other
    }
}

impl PartialEq<&str> for Sym {
    fn eq(&self, other: &&str) -> bool {
        &*self.0 == *other
    }
}

impl fmt::Debug for Sym {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&*self.0, f)
    }
}

impl fmt::Display for Sym {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl Serialize for Sym {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.0)
    }
}

/// Hands out one [`Sym`] per distinct string.
#[derive(Default)]
pub struct Interner(HashSet<Sym>);

impl Interner {
    pub fn get(&mut self, s: &str) -> Sym {
        if let Some(sym) = self.0.get(s) {
            return sym.clone();
        }
        let sym = Sym::from(s);
        self.0.insert(sym.clone());
        sym
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_allocation_per_distinct_string() {
        let mut i = Interner::default();
        let a = i.get("dram__bytes_read.sum");
        let b = i.get("dram__bytes_read.sum");
        assert!(Arc::ptr_eq(&a.0, &b.0));
        assert_eq!(a, "dram__bytes_read.sum");
        assert_eq!(
            serde_json::to_string(&a).unwrap(),
            "\"dram__bytes_read.sum\""
        );
        assert_eq!(format!("{a}"), "dram__bytes_read.sum");
    }
}
