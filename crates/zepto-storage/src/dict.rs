//! The per-table symbol dictionary: string ↔ `u32` code. Append-only, so a code handed out once
//! keeps its meaning forever and a reader's snapshot of codes stays valid against any later,
//! larger version of the dictionary.
//!
//! Versions share one store: a [`Dict`] is a view of the store's first `len` strings, so taking
//! a version is O(1) and adding a string never copies the ones before it (a table of 100k
//! symbols used to copy its whole dictionary on every write a reader's snapshot overlapped).
//! Strings live in a lock-free append-only vector (`boxcar`): reading a code takes no lock,
//! and the address of a string never moves. Adding takes the store's index lock, so codes are
//! handed out one at a time, in order, whichever version adds.

use crate::short_memo::ShortMemo;
use std::any::Any;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError, RwLock};

/// Batches of at least this many strings intern through a [`ShortMemo`] (its 48 KiB of
/// slots are cleared for each batch)...
const MEMO_MIN_STRINGS: usize = 256;

/// ...kept while it finds most of its strings, as judged every this many rows (a column of
/// strings that seldom repeat within a batch is interned faster without).
const MEMO_JUDGE_ROWS: usize = 4096;

/// A memo value's top bit: the rest is the string's number among the batch's new strings
/// ([`NewStrings`]), not a code.
const NEW_STRING: u32 = 1 << 31;

/// A batch's strings the index lacks (`Store::intern_many`), numbered in order of first
/// appearance. A row holding one is given `NEW_STRING | number` until they are added.
#[derive(Default)]
struct NewStrings<'a> {
    number: HashMap<&'a str, u32, foldhash::fast::FixedState>,
    order: Vec<&'a str>,
}

impl<'a> NewStrings<'a> {
    /// `s`, a string the index lacks, as a row holds it until it is added: `NEW_STRING` and
    /// its number among the new strings.
    fn add(&mut self, s: &'a str) -> u32 {
        let order = &mut self.order;
        *self.number.entry(s).or_insert_with(|| {
            order.push(s);
            let k = u32::try_from(order.len() - 1).ok().filter(|&k| k < NEW_STRING);
            NEW_STRING | k.expect("fewer than 2^31 new strings in one batch")
        })
    }
}

/// The code of `s` the memo did not have: from the index (raising `top` to it), or, for a
/// string the index lacks, what [`NewStrings::add`] gives; remembered in `memo`, if any.
fn look_up<'a>(
    index: &HashMap<Box<str>, u32, foldhash::quality::RandomState>,
    s: &'a str,
    new: &mut NewStrings<'a>,
    memo: Option<&mut ShortMemo>,
    top: &mut Option<u32>,
) -> u32 {
    let v = match index.get(s) {
        Some(&c) => {
            assert!(c < NEW_STRING, "a dictionary of 2^31 strings");
            *top = (*top).max(Some(c));
            c
        }
        None => new.add(s),
    };
    if let Some(m) = memo {
        m.put(s, v);
    }
    v
}

/// A value made from the first `len` strings of a store ([`Dict::derived`]).
type Derived = (usize, Arc<dyn Any + Send + Sync>);

static NEXT_LINEAGE: AtomicU64 = AtomicU64::new(1);

/// The strings of one lineage, shared by all of its versions.
#[derive(Debug)]
struct Store {
    lineage: u64,
    /// Code `i` is `strings[i]`; pushed only under the `index` write lock.
    strings: boxcar::Vec<Box<str>>,
    /// String → code, for every string in `strings`. Hashed with foldhash (seeded per process,
    /// so crafted symbols cannot aim at one bucket): SipHash was a tenth of ILP ingest time
    /// at 100k symbols.
    index: RwLock<HashMap<Box<str>, u32, foldhash::quality::RandomState>>,
    /// The newest value [`Dict::derived`] made, and for how many strings.
    derived: Mutex<Option<Derived>>,
    /// The last batch's memo of short strings, kept for the next batch, and the highest
    /// code it holds (module docs of `short_memo`).
    memo: Mutex<Option<(ShortMemo, Option<u32>)>>,
}

impl Store {
    fn new() -> Store {
        Store {
            lineage: NEXT_LINEAGE.fetch_add(1, Ordering::Relaxed),
            strings: boxcar::Vec::new(),
            index: RwLock::new(HashMap::default()),
            derived: Mutex::new(None),
            memo: Mutex::new(None),
        }
    }

    fn code(&self, s: &str) -> Option<u32> {
        self.index.read().unwrap_or_else(PoisonError::into_inner).get(s).copied()
    }

    /// The codes of `strings` (0 for a `None`), adding the new ones: the known ones are looked
    /// up under one read of the index for the whole batch, not one per string.
    /// Also the code the caller, a version of `len` strings, must grow to hold (`None`: none):
    /// at least every code handed out that is `len` or more.
    fn intern_many<'a>(&self, strings: impl Iterator<Item = Option<&'a str>>, len: usize) -> (Vec<u32>, Option<u32>) {
        let mut out = Vec::with_capacity(strings.size_hint().0);
        let mut new = NewStrings::default();
        let mut top = None;
        // Batches of a few strings gain nothing from the memo, and would pay for its table.
        let (mut seen, kept_high) = match strings.size_hint().0 >= MEMO_MIN_STRINGS {
            true => self.take_memo(len),
            false => (None, None),
        };
        {
            let index = self.index.read().unwrap_or_else(PoisonError::into_inner);
            // Memo misses since the last judgement (`MEMO_JUDGE_ROWS`).
            let mut missed = 0;
            for (i, s) in strings.enumerate() {
                if i % MEMO_JUDGE_ROWS == MEMO_JUDGE_ROWS - 1 {
                    if 2 * missed > MEMO_JUDGE_ROWS {
                        seen = None;
                    }
                    missed = 0;
                }
                let Some(s) = s else {
                    out.push(0);
                    continue;
                };
                // Seen earlier in the batch: a code already counted in `top`, or a new string.
                let v = match seen.as_ref().and_then(|m| m.get(s)) {
                    Some(v) => v,
                    None => {
                        missed += 1;
                        look_up(&index, s, &mut new, seen.as_mut(), &mut top)
                    }
                };
                out.push(v);
            }
        }
        if new.order.is_empty() {
            self.keep_memo(seen, kept_high.max(top));
            return (out, top);
        }
        let codes = self.add_all(&new.order);
        if let Some(m) = seen.as_mut() {
            m.resolve(|v| if v & NEW_STRING == 0 { v } else { codes[(v & !NEW_STRING) as usize] });
        }
        top = top.max(codes.iter().copied().max());
        self.keep_memo(seen, kept_high.max(top));
        for v in out.iter_mut().filter(|v| **v & NEW_STRING != 0) {
            *v = codes.get((*v & !NEW_STRING) as usize).copied().unwrap_or(0);
        }
        (out, top)
    }

    /// The memo the last batch kept, when every code it holds is below `len` (a version of
    /// `len` strings then never needs its codes counted in `top`: a string it finds was
    /// counted when it was first looked up), with the highest code it holds; a new one
    /// otherwise.
    fn take_memo(&self, len: usize) -> (Option<ShortMemo>, Option<u32>) {
        let kept = self.memo.lock().unwrap_or_else(PoisonError::into_inner).take();
        match kept {
            Some((memo, high)) if high.is_none_or(|h| (h as usize) < len) => (Some(memo), high),
            _ => (Some(ShortMemo::new()), None),
        }
    }

    /// Keep `memo` (if the batch kept it) for the next batch; `high` is the highest code
    /// it holds.
    fn keep_memo(&self, memo: Option<ShortMemo>, high: Option<u32>) {
        if let Some(memo) = memo {
            *self.memo.lock().unwrap_or_else(PoisonError::into_inner) = Some((memo, high));
        }
    }

    /// The code of `s`, added at the end if new.
    fn intern(&self, s: &str) -> u32 {
        if let Some(c) = self.code(s) {
            return c;
        }
        self.add_all(&[s])[0]
    }

    /// The codes of `strings`, each added at the end if new (another version may have added it
    /// since it was looked up), under one hold of the index's write lock.
    fn add_all(&self, strings: &[&str]) -> Vec<u32> {
        let mut index = self.index.write().unwrap_or_else(PoisonError::into_inner);
        let mut add = |s: &str| {
            if let Some(&c) = index.get(s) {
                return c;
            }
            let code = u32::try_from(self.strings.count()).expect("symbol dictionary exceeds u32 codes");
            let at = self.strings.push(s.into());
            assert_eq!(at, code as usize, "codes are handed out in order, under the index lock");
            index.insert(s.into(), code);
            code
        };
        strings.iter().map(|s| add(s)).collect()
    }
}

/// A dictionary and every later version of it share a `lineage` (and a store), so codes from
/// any two of them mean the same strings and can be mixed without remapping.
#[derive(Debug, Clone)]
pub struct Dict {
    store: Arc<Store>,
    /// Strings of this version: codes `0..len` of the store.
    len: usize,
}

impl Default for Dict {
    fn default() -> Self {
        Dict { store: Arc::new(Store::new()), len: 0 }
    }
}

impl Dict {
    /// Identity shared by this dictionary and every later version of it (see [`Dict`]); equal
    /// lineages mean codes can be mixed without remapping.
    pub fn lineage(&self) -> u64 {
        self.store.lineage
    }

    /// Number of distinct strings (the next code this version would hand out, unless another
    /// version of the lineage added strings since).
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when no string has been interned.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// A copy under a new lineage: the same code for every string so far, free to grow apart
    /// (codes it adds later mean nothing to this dictionary's lineage).
    pub fn fork(&self) -> Dict {
        let mut d = Dict::default();
        for s in self.iter() {
            d.intern(s);
        }
        d
    }

    /// The code of `s`, adding it if new. A string another version of the lineage added keeps
    /// its code, and this version grows to cover it.
    pub fn intern(&mut self, s: &str) -> u32 {
        let code = self.store.intern(s);
        self.len = self.len.max(code as usize + 1);
        code
    }

    /// The codes of `strings` (0 for a `None`: a NULL slot), adding the new ones in order of
    /// first appearance, as [`Dict::intern`] one by one would, with one look at the index for
    /// the whole batch.
    pub fn intern_many<'a>(&mut self, strings: impl Iterator<Item = Option<&'a str>>) -> Vec<u32> {
        let (codes, top) = self.store.intern_many(strings, self.len);
        if let Some(top) = top {
            self.len = self.len.max(top as usize + 1);
        }
        codes
    }

    /// Grow this version to hold `code`, a code another version of the lineage handed out;
    /// false (and unchanged) when the lineage has no such code.
    pub fn reach(&mut self, code: u32) -> bool {
        let want = code as usize + 1;
        if want <= self.len {
            return true;
        }
        if want > self.store.strings.count() {
            return false;
        }
        self.len = want;
        true
    }

    /// The code of `s`, or `None` if this version does not hold it (never adds).
    pub fn code(&self, s: &str) -> Option<u32> {
        self.store.code(s).filter(|&c| (c as usize) < self.len)
    }

    /// The string of `code`. Panics if `code` was not handed out by this dictionary's lineage up to
    /// its length.
    #[inline]
    pub fn get(&self, code: u32) -> &str {
        let i = code as usize;
        assert!(i < self.len, "symbol code {i} past a dictionary of {}", self.len);
        &self.store.strings[i]
    }

    /// Every string, in code order (the `i`-th is code `i`).
    pub fn iter(&self) -> impl Iterator<Item = &str> + '_ {
        (0..self.len).map(|i| &*self.store.strings[i])
    }

    /// A value made from this version's strings by `make`, kept beside the store and handed
    /// out again while the dictionary has not grown: the Arrow export's array of a 100k-symbol
    /// dictionary was rebuilt for every answer. One value per lineage (the newest version's
    /// wins; an older version's is made but not kept), of one type: a value of another type
    /// is made afresh and replaces it.
    pub fn derived<T: Any + Send + Sync>(&self, make: impl FnOnce(&Dict) -> T) -> Arc<T> {
        let held = |d: &Option<Derived>| {
            d.as_ref().filter(|(len, _)| *len == self.len).and_then(|(_, v)| v.clone().downcast::<T>().ok())
        };
        if let Some(v) = held(&self.store.derived.lock().unwrap_or_else(PoisonError::into_inner)) {
            return v;
        }
        let v = Arc::new(make(self));
        let mut slot = self.store.derived.lock().unwrap_or_else(PoisonError::into_inner);
        if slot.as_ref().is_none_or(|(len, _)| *len <= self.len) {
            *slot = Some((self.len, v.clone()));
        }
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_derived_value_is_made_once_per_version_length() {
        let mut a = Dict::default();
        a.intern("x");
        let made = std::cell::Cell::new(0);
        let joined = |d: &Dict| {
            made.set(made.get() + 1);
            d.iter().collect::<Vec<_>>().join(",")
        };
        let first = a.derived(joined);
        assert_eq!(*first, "x");
        assert!(Arc::ptr_eq(&first, &a.clone().derived(joined)), "a version of the same length shares it");
        let old = a.clone();
        a.intern("y");
        assert_eq!(*a.derived(joined), "x,y", "a grown dictionary makes it again");
        assert_eq!(*old.derived(joined), "x", "an older version gets its own strings");
        assert_eq!(made.get(), 3);
        assert_eq!(*a.derived(joined), "x,y", "the newest stays kept");
        assert_eq!(made.get(), 3);
        assert_eq!(*a.derived(|d| d.len()), 2, "another type is made afresh");
    }

    #[test]
    fn a_batch_interns_as_one_by_one_would() {
        let mut a = Dict::default();
        a.intern("x");
        let old = a.clone();
        let codes = a.intern_many([Some("y"), None, Some("x"), Some("z"), Some("y")].into_iter());
        assert_eq!((codes, a.len()), (vec![1, 0, 0, 2, 1], 3));
        assert_eq!((a.get(2), old.len()), ("z", 1));
        let mut b = Dict::default();
        assert_eq!((b.intern_many([None, None].into_iter()), b.len()), (vec![0, 0], 0), "NULLs add nothing");
        // A version that another version grew past sees the codes it is handed.
        let mut c = old.clone();
        assert_eq!((c.intern_many([Some("z")].into_iter()), c.len()), (vec![2], 3));
    }

    /// Batches large enough for the memo, of names that repeat (a few, then more than it
    /// holds) and of names that do not (the memo is dropped partway), short and long, with
    /// NULLs: the codes are those interning one by one gives.
    #[test]
    fn memo_batches_intern_as_one_by_one_would() {
        let mut rng = crate::rng::XorShift::new(7);
        for distinct in [3, 100, 1500, 20_000] {
            let names: Vec<String> = (0..distinct)
                .map(|i| if i % 7 == 0 { format!("long-symbol-name-{i}") } else { format!("S{i}") })
                .collect();
            let rows: Vec<Option<&str>> =
                (0..12_000).map(|i| (i % 97 != 5).then(|| names[rng.index(distinct)].as_str())).collect();
            let mut one = Dict::default();
            one.intern("S1");
            let mut many = one.clone();
            let want: Vec<u32> = rows.iter().map(|r| r.map_or(0, |s| one.intern(s))).collect();
            assert_eq!(many.intern_many(rows.iter().copied()), want, "{distinct} names");
            assert_eq!(many.len(), one.len());
        }
    }

    /// The memo one batch keeps serves the next batch of any version: the codes are the
    /// first batch's, and a version older than the memo's codes (made before they were added)
    /// still grows to hold every code it is handed.
    #[test]
    fn a_kept_memo_hands_a_version_only_codes_it_holds() {
        let names: Vec<String> = (0..50).map(|i| format!("S{i:02}")).collect();
        let rows: Vec<Option<&str>> = (0..1000).map(|i| Some(names[(i * 7) % 50].as_str())).collect();
        let mut a = Dict::default();
        let old = a.clone();
        let first = a.intern_many(rows.iter().copied());
        assert_eq!(a.len(), 50);
        assert!(first.iter().zip(&rows).all(|(&c, s)| Some(a.get(c)) == *s));
        assert_eq!(a.intern_many(rows.iter().copied()), first, "the kept memo's codes");
        let mut b = old.clone();
        assert_eq!(b.intern_many(rows.iter().copied()), first);
        assert_eq!(b.len(), 50, "an older version grows to the codes it is handed");
        // Interleaved: a version short of the memo's codes, then one that holds them all.
        let mut c = old.clone();
        assert_eq!(c.intern_many(rows[..300].iter().copied()), first[..300]);
        assert!(first[..300].iter().all(|&k| (k as usize) < c.len()));
        assert_eq!(a.intern_many(rows.iter().copied()), first);
    }

    #[test]
    fn versions_share_codes_and_see_only_their_own_strings() {
        let mut a = Dict::default();
        let (x, y) = (a.intern("x"), a.intern("y"));
        assert_eq!((x, y, a.intern("x")), (0, 1, 0));
        let old = a.clone();
        let z = a.intern("z");
        assert_eq!((z, a.len(), old.len()), (2, 3, 2));
        assert_eq!(old.code("z"), None, "an older version does not hold a later string");
        assert_eq!(a.code("z"), Some(2));
        assert_eq!(old.iter().collect::<Vec<_>>(), ["x", "y"]);
        // Another version adding the same string gets the same code and grows past it.
        let mut b = old.clone();
        assert_eq!(b.intern("w"), 3);
        assert_eq!((b.len(), b.get(2), b.get(3)), (4, "z", "w"));
        assert_eq!(a.intern("w"), 3);
        assert_eq!((a.lineage(), b.lineage()), (old.lineage(), old.lineage()));
    }

    #[test]
    fn a_fork_keeps_codes_under_a_new_lineage() {
        let mut a = Dict::default();
        ["p", "q", "r"].iter().for_each(|s| {
            a.intern(s);
        });
        let mut f = a.fork();
        assert_ne!(f.lineage(), a.lineage());
        assert_eq!(f.iter().collect::<Vec<_>>(), ["p", "q", "r"]);
        assert_eq!((f.intern("s"), a.intern("t")), (3, 3));
        assert_eq!((f.get(3), a.get(3)), ("s", "t"));
    }

    #[test]
    fn versions_intern_from_many_threads_without_losing_a_code() {
        let base = Dict::default();
        let per_thread: Vec<Vec<(String, u32)>> = std::thread::scope(|sc| {
            let hs: Vec<_> = (0..4)
                .map(|t| {
                    let mut d = base.clone();
                    sc.spawn(move || {
                        (0..500)
                            .map(|i| format!("s{}", (i * 7 + t) % 600))
                            .map(|s| {
                                let c = d.intern(&s);
                                (s, c)
                            })
                            .collect()
                    })
                })
                .collect();
            hs.into_iter().map(|h| h.join().expect("no panic")).collect()
        });
        let mut all = base.clone();
        for (s, c) in per_thread.iter().flatten() {
            assert_eq!(all.intern(s), *c, "'{s}' has one code");
            assert_eq!(all.get(*c), s);
        }
        let distinct: std::collections::HashSet<&String> = per_thread.iter().flatten().map(|(s, _)| s).collect();
        assert_eq!(all.len(), distinct.len());
    }
}
