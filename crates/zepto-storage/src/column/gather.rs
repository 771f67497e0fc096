//! Rows of columns gathered, taken and joined: `take` by index, `concat` of whole columns,
//! `concat_spans` of row ranges (symbol codes remapped into one dictionary) and `gather` of
//! picked rows from several columns, each written once into a column sized up front.

use super::{Column, ColumnBuilder, ColumnData, NULL_INDEX};
use crate::bitmap::Bitmap;
use crate::dict::Dict;
use crate::strings::StrVec;
use crate::types::DataType;
use std::sync::Arc;

impl Column {
    /// Gather rows by index.
    pub fn take(&self, idx: &[u32]) -> Column {
        fn g<T: Copy>(v: &[T], idx: &[u32]) -> Vec<T> {
            idx.iter().map(|&i| v[i as usize]).collect()
        }
        let data = map_vec!(&self.data,
            v => g(v, idx).into(),
            s => s.take(idx),
            codes, dict => ColumnData::Symbol { codes: g(codes, idx).into(), dict: dict.clone() },
            dim, values => ColumnData::Vector { dim: *dim, values: take_rows(values, *dim as usize, idx).into() },
            _n => idx.len());
        let validity = self.validity.as_ref().map(|b| Bitmap::from_bools(idx.iter().map(|&i| b.get(i as usize))));
        Column::new(data, validity)
    }

    /// Gather rows by index where [`NULL_INDEX`] yields a NULL row.
    pub fn take_opt(&self, idx: &[u32]) -> Column {
        if !idx.contains(&NULL_INDEX) {
            return self.take(idx);
        }
        let safe: Vec<u32> = idx.iter().map(|&i| if i == NULL_INDEX { 0 } else { i }).collect();
        let dt = self.data_type();
        if self.is_empty() {
            return Column::nulls(dt, idx.len());
        }
        let mut c = self.take(&safe);
        if dt == DataType::Null {
            return c;
        }
        let validity = match &c.validity {
            None => Bitmap::from_bools(idx.iter().map(|&i| i != NULL_INDEX)),
            Some(v) => Bitmap::from_bools(idx.iter().enumerate().map(|(k, &i)| i != NULL_INDEX && v.get(k))),
        };
        c.validity = Some(validity).filter(|v| !v.all_set());
        c
    }

    /// Rows of `cols` one after another. All columns must share a type (`Null` columns adapt).
    pub fn concat(cols: &[&Column]) -> Column {
        let dt = cols.iter().map(|c| c.data_type()).find(|t| *t != DataType::Null).unwrap_or(DataType::Null);
        if dt == DataType::Symbol {
            if let Some(c) = Self::concat_same_lineage(cols) {
                return c;
            }
        }
        let total: usize = cols.iter().map(|c| c.len()).sum();
        let mut b = ColumnBuilder::new(dt, total);
        for c in cols {
            b.extend_from(c);
        }
        b.finish()
    }

    /// The rows `rows` of each column one after another (all of one type; `Null` columns
    /// adapt): one copy into exact-size buffers, with no slice of each column made first.
    /// Symbols keep their codes under the largest of their dictionaries when those are versions
    /// of one dictionary, and are re-coded otherwise. Errs (naming the span) when a range lies
    /// outside its column or the types differ.
    pub fn concat_ranges(spans: &[(&Column, std::ops::Range<usize>)]) -> Result<Column, String> {
        let dt = spans.iter().map(|(c, _)| c.data_type()).find(|t| *t != DataType::Null).unwrap_or(DataType::Null);
        let dict = match dt {
            DataType::Symbol => match Self::common_dict(spans.iter().map(|(c, _)| *c)) {
                Some(d) => Some(d.clone()),
                None => {
                    if let Some((c, r)) = spans.iter().find(|(c, r)| r.start > r.end || r.end > c.len()) {
                        return Err(format!("span {r:?} out of a column of {} rows", c.len()));
                    }
                    let parts: Vec<Column> = spans.iter().map(|(c, r)| c.slice(r.start, r.len())).collect();
                    return Ok(Self::concat(&parts.iter().collect::<Vec<_>>()));
                }
            },
            _ => None,
        };
        let spans: Vec<Span> = spans.iter().map(|(c, r)| Span { col: c, rows: r.clone(), remap: None }).collect();
        Self::concat_spans(dt, dict.as_ref(), &spans)
    }

    /// The largest of the columns' dictionaries when every column is a SYMBOL column (or an
    /// untyped NULL one) and their dictionaries are versions of one dictionary.
    pub(super) fn common_dict<'c>(cols: impl Iterator<Item = &'c Column>) -> Option<&'c Arc<Dict>> {
        let mut best: Option<&Arc<Dict>> = None;
        for c in cols {
            match &c.data {
                ColumnData::Symbol { dict, .. } => match best {
                    Some(b) if b.lineage() != dict.lineage() => return None,
                    Some(b) if b.len() >= dict.len() => {}
                    _ => best = Some(dict),
                },
                ColumnData::Null(_) => {}
                _ => return None,
            }
        }
        best
    }

    /// Symbols whose dictionaries are versions of one dictionary concatenate their codes as they
    /// are, under the largest version.
    fn concat_same_lineage(cols: &[&Column]) -> Option<Column> {
        if cols.iter().any(|c| !matches!(c.data, ColumnData::Symbol { .. })) {
            return None;
        }
        let best = Self::common_dict(cols.iter().copied());
        let dict = best?.clone();
        let total: usize = cols.iter().map(|c| c.len()).sum();
        let mut codes = Vec::with_capacity(total);
        let any_null = cols.iter().any(|c| c.validity.is_some());
        let mut validity = Bitmap::default();
        for c in cols {
            if let ColumnData::Symbol { codes: k, .. } = &c.data {
                codes.extend_from_slice(k);
            }
            if any_null {
                match &c.validity {
                    Some(v) => v.iter().for_each(|b| validity.push(b)),
                    None => validity.extend_set(c.len()),
                }
            }
        }
        Some(Column::new(ColumnData::Symbol { codes: codes.into(), dict }, any_null.then_some(validity)))
    }

    /// The rows of `spans` one after another, as one column of type `dt` (every span's column
    /// has that type, or is an untyped NULL column). SYMBOL results are coded against `dict`:
    /// a span's codes are translated through its `remap` when it has one, else kept (they must
    /// already belong to `dict`'s lineage). One copy of the data, into exact-size buffers.
    pub fn concat_spans(dt: DataType, dict: Option<&Arc<Dict>>, spans: &[Span<'_>]) -> Result<Column, String> {
        let total: usize = spans.iter().map(|s| s.rows.len()).sum();
        for s in spans {
            if s.rows.start > s.rows.end || s.rows.end > s.col.len() {
                return Err(format!("span {:?} out of a column of {} rows", s.rows, s.col.len()));
            }
            if !matches!(s.col.data_type(), DataType::Null) && s.col.data_type() != dt {
                return Err(format!("span of type {} in a {dt} column", s.col.data_type()));
            }
        }
        macro_rules! prim {
            ($variant:ident, $zero:expr) => {{
                let mut v = Vec::with_capacity(total);
                for s in spans {
                    match &s.col.data {
                        ColumnData::$variant(src) => v.extend_from_slice(&src[s.rows.clone()]),
                        _ => v.resize(v.len() + s.rows.len(), $zero),
                    }
                }
                ColumnData::$variant(v.into())
            }};
        }
        let data = fixed_width_match!(dt, prim, {
            DataType::Varchar => {
                let bytes = spans
                    .iter()
                    .map(|s| match &s.col.data {
                        ColumnData::Varchar(v) => (v.offsets()[s.rows.end] - v.offsets()[s.rows.start]) as usize,
                        _ => 0,
                    })
                    .sum();
                let mut out = StrVec::with_capacity(total, bytes);
                for s in spans {
                    match &s.col.data {
                        ColumnData::Varchar(v) => out.extend_range(v, s.rows.clone()),
                        _ => s.rows.clone().for_each(|_| out.push("")),
                    }
                }
                ColumnData::Varchar(out)
            }
            DataType::Symbol => {
                let dict = dict.ok_or("a SYMBOL column needs a dictionary")?.clone();
                let mut codes = Vec::with_capacity(total);
                for s in spans {
                    match (&s.col.data, s.remap) {
                        (ColumnData::Symbol { codes: src, .. }, None) => codes.extend_from_slice(&src[s.rows.clone()]),
                        (ColumnData::Symbol { codes: src, .. }, Some(remap)) => {
                            for (i, &c) in src[s.rows.clone()].iter().enumerate() {
                                // NULL rows hold code 0, which may not be in `remap`.
                                let valid = s.col.is_valid(s.rows.start + i);
                                codes.push(if valid {
                                    *remap.get(c as usize).ok_or("symbol code outside its remap")?
                                } else {
                                    0
                                });
                            }
                        }
                        _ => codes.resize(codes.len() + s.rows.len(), 0),
                    }
                }
                ColumnData::Symbol { codes: codes.into(), dict }
            }
            DataType::Vector(dim) => {
                let d = dim as usize;
                let mut values = Vec::with_capacity(total * d);
                for s in spans {
                    match &s.col.data {
                        ColumnData::Vector { values: src, .. } => {
                            values.extend_from_slice(&src[s.rows.start * d..s.rows.end * d])
                        }
                        _ => values.resize(values.len() + s.rows.len() * d, 0.0),
                    }
                }
                ColumnData::Vector { dim, values: values.into() }
            }
            DataType::Null => ColumnData::Null(total),
        });
        let validity =
            spans.iter().any(|s| s.col.validity.is_some() || s.col.data_type() == DataType::Null).then(|| {
                let mut v = Bitmap::default();
                for s in spans {
                    match (&s.col.validity, &s.col.data) {
                        (_, ColumnData::Null(_)) => (0..s.rows.len()).for_each(|_| v.push(false)),
                        (Some(b), _) => v.append_bits(b.as_bytes(), s.rows.start, s.rows.len()),
                        (None, _) => v.extend_set(s.rows.len()),
                    }
                }
                v
            });
        Ok(Column::new(data, validity))
    }

    /// Rows gathered from several columns into one: `idx` rows of each part's column in turn,
    /// [`NULL_INDEX`] giving a NULL row (its slot holds the zero value). Every part's column has
    /// type `dt` (or is untyped NULL); non-empty SYMBOL parts share one dictionary lineage, whose largest
    /// version codes the result. One pass, one exact-size buffer: what `take_opt` per part
    /// followed by `concat` does in two.
    pub fn gather(dt: DataType, parts: &[(&Column, &[u32])]) -> Result<Column, String> {
        let total: usize = parts.iter().map(|(_, idx)| idx.len()).sum();
        for (c, _) in parts {
            if c.data_type() != DataType::Null && c.data_type() != dt {
                return Err(format!("gathering {} rows into a {dt} column", c.data_type()));
            }
        }
        // Per part: whether it picked NULL rows. Bounds are checked in the copy loop itself:
        // an index past the source reads as a NULL row (no second pass over the indices), and
        // one that is not NULL_INDEX is an error.
        let mut picks_null = vec![false; parts.len()];
        let mut bad: Option<(u32, usize)> = None;
        macro_rules! prim {
            ($variant:ident, $zero:expr) => {{
                let mut v = Vec::with_capacity(total);
                for ((c, idx), nulls) in parts.iter().zip(&mut picks_null) {
                    match &c.data {
                        ColumnData::$variant(src) => *nulls = gather_pick(src, idx, $zero, &mut v, &mut bad),
                        _ => v.resize(v.len() + idx.len(), $zero),
                    }
                }
                ColumnData::$variant(v.into())
            }};
        }
        let data = fixed_width_match!(dt, prim, {
            DataType::Varchar => gather_varchar(parts, total, &mut picks_null, &mut bad),
            DataType::Symbol => gather_symbol(parts, total, &mut picks_null, &mut bad)?,
            DataType::Vector(dim) => gather_vector(dim, parts, total, &mut picks_null, &mut bad),
            DataType::Null => ColumnData::Null(total),
        });
        if let Some((i, len)) = bad {
            return Err(format!("row {i} out of a column of {len} rows"));
        }
        // An untyped NULL part picks NULL rows only, whatever its indices.
        for ((c, idx), nulls) in parts.iter().zip(&mut picks_null) {
            if let ColumnData::Null(n) = c.data {
                if let Some(&i) = idx.iter().find(|&&i| i != NULL_INDEX && i as usize >= n) {
                    return Err(format!("row {i} out of a column of {n} rows"));
                }
                *nulls |= !idx.is_empty();
            }
        }
        Ok(Column::new(data, gather_validity(parts, &picks_null)))
    }
}

/// One bit per index (LSB first), eight at a time.
pub(super) fn pack_bits(idx: &[u32], valid: impl Fn(u32) -> bool) -> Vec<u8> {
    idx.chunks(8).map(|ch| ch.iter().enumerate().fold(0u8, |b, (k, &i)| b | ((valid(i) as u8) << k))).collect()
}

/// [`pack_bits`] of "not [`NULL_INDEX`]" (a gather's rows that found one): with AVX2, a
/// compare and a mask move per eight indices (the compiler's vectorization of the portable
/// loop transposed its lanes, 7% of an ASOF join that gathers two columns).
pub(super) fn pack_found(idx: &[u32]) -> Vec<u8> {
    #[cfg(target_arch = "x86_64")]
    if is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU has AVX2.
        return unsafe { found_avx2::pack(idx) };
    }
    pack_bits(idx, |i| i != NULL_INDEX)
}

#[cfg(target_arch = "x86_64")]
#[allow(unsafe_code)]
mod found_avx2 {
    use super::{pack_bits, NULL_INDEX};
    use std::arch::x86_64::*;

    /// [`super::pack_found`] eight indices at a time.
    ///
    /// # Safety
    /// The CPU must support AVX2.
    #[target_feature(enable = "avx2")]
    pub unsafe fn pack(idx: &[u32]) -> Vec<u8> {
        let none = _mm256_set1_epi32(NULL_INDEX as i32);
        let mut bytes = idx.chunks_exact(8);
        let mut out: Vec<u8> = bytes
            .by_ref()
            .map(|ch| {
                // SAFETY: `ch` holds eight u32s (32 bytes); the load is unaligned.
                let x = unsafe { _mm256_loadu_si256(ch.as_ptr().cast()) };
                let missing = _mm256_movemask_ps(_mm256_castsi256_ps(_mm256_cmpeq_epi32(x, none)));
                !(missing as u8)
            })
            .collect();
        if !bytes.remainder().is_empty() {
            out.extend(pack_bits(bytes.remainder(), |i| i != NULL_INDEX));
        }
        out
    }
}

/// [`Column::gather`]'s copy of one part's fixed-width values: `idx` rows of `src` appended to
/// `out`, an index past `src` giving `zero` (a NULL row). Whether any row missed; an index
/// past `src` that is not [`NULL_INDEX`] is recorded in `bad`.
fn gather_pick<T: Copy>(src: &[T], idx: &[u32], zero: T, out: &mut Vec<T>, bad: &mut Option<(u32, usize)>) -> bool {
    // The first wrong index is noted as the copy meets it: a LEFT join's few unmatched rows
    // (NULL_INDEX) cost no second pass over the indices.
    let (mut miss, mut wrong) = (false, None);
    out.extend(idx.iter().map(|&i| match src.get(i as usize) {
        Some(&v) => v,
        None => {
            miss = true;
            if i != NULL_INDEX && wrong.is_none() {
                wrong = Some(i);
            }
            zero
        }
    }));
    if let Some(i) = wrong {
        *bad = Some((i, src.len()));
    }
    miss
}

/// [`Column::gather`] of VARCHAR parts (an untyped NULL part gives empty strings).
fn gather_varchar(
    parts: &[(&Column, &[u32])],
    total: usize,
    picks_null: &mut [bool],
    bad: &mut Option<(u32, usize)>,
) -> ColumnData {
    let mut out = StrVec::with_capacity(total, 0);
    for ((c, idx), nulls) in parts.iter().zip(picks_null) {
        for &i in *idx {
            if (i as usize) < c.len() {
                out.push(c.str_at(i as usize).unwrap_or(""));
            } else {
                *nulls = true;
                if i != NULL_INDEX {
                    *bad = Some((i, c.len()));
                }
                out.push("");
            }
        }
    }
    ColumnData::Varchar(out)
}

/// Rows `idx` of a flat vector buffer of `dim` elements per row ([`NULL_INDEX`] or an index past
/// the end gives a row of zeros).
pub(super) fn take_rows(values: &[f32], dim: usize, idx: &[u32]) -> Vec<f32> {
    let mut out = Vec::with_capacity(idx.len() * dim);
    for &i in idx {
        let start = i as usize * dim;
        match values.get(start..start + dim) {
            Some(row) => out.extend_from_slice(row),
            None => out.resize(out.len() + dim, 0.0),
        }
    }
    out
}

/// [`Column::gather`] of `FLOAT[dim]` parts (an untyped NULL part gives rows of zeros).
fn gather_vector(
    dim: u16,
    parts: &[(&Column, &[u32])],
    total: usize,
    picks_null: &mut [bool],
    bad: &mut Option<(u32, usize)>,
) -> ColumnData {
    let d = dim as usize;
    let mut values = Vec::with_capacity(total * d);
    for ((c, idx), nulls) in parts.iter().zip(picks_null) {
        match &c.data {
            ColumnData::Vector { values: src, .. } => {
                let n = c.len();
                if idx.iter().any(|&i| i as usize >= n) {
                    *nulls = true;
                    if let Some(&b) = idx.iter().find(|&&i| i != NULL_INDEX && i as usize >= n) {
                        *bad = Some((b, n));
                    }
                }
                values.extend_from_slice(&take_rows(src, d, idx));
            }
            _ => values.resize(values.len() + idx.len() * d, 0.0),
        }
    }
    ColumnData::Vector { dim, values: values.into() }
}

/// [`Column::gather`] of SYMBOL parts: coded by the largest dictionary of their one lineage.
fn gather_symbol(
    parts: &[(&Column, &[u32])],
    total: usize,
    picks_null: &mut [bool],
    bad: &mut Option<(u32, usize)>,
) -> Result<ColumnData, String> {
    let mut dict: Option<&Arc<Dict>> = None;
    // An empty part contributes no codes (only NULL rows): its dictionary is moot.
    for (c, _) in parts.iter().filter(|(c, _)| !c.is_empty()) {
        if let ColumnData::Symbol { dict: d, .. } = &c.data {
            match dict {
                Some(b) if b.lineage() != d.lineage() => return Err("symbols of two dictionaries".into()),
                Some(b) if b.len() >= d.len() => {}
                _ => dict = Some(d),
            }
        }
    }
    let dict = dict.cloned().unwrap_or_default();
    let mut codes = Vec::with_capacity(total);
    for ((c, idx), nulls) in parts.iter().zip(picks_null) {
        match &c.data {
            ColumnData::Symbol { codes: src, .. } => *nulls = gather_pick(src, idx, 0, &mut codes, bad),
            _ => codes.resize(codes.len() + idx.len(), 0),
        }
    }
    Ok(ColumnData::Symbol { codes: codes.into(), dict })
}

/// [`Column::gather`]'s validity: none when no part has NULL rows or picked any.
fn gather_validity(parts: &[(&Column, &[u32])], picks_null: &[bool]) -> Option<Bitmap> {
    let any_null = parts.iter().zip(picks_null).any(|((c, _), &n)| n || c.validity.is_some());
    any_null.then(|| {
        let mut v = Bitmap::default();
        for ((c, idx), &nulls) in parts.iter().zip(picks_null) {
            match (&c.validity, nulls, c.data_type() == DataType::Null) {
                (_, _, true) => v.append_bits(&vec![0u8; idx.len().div_ceil(8)], 0, idx.len()),
                (None, false, _) => v.extend_set(idx.len()),
                (None, true, _) => v.append_bits(&pack_found(idx), 0, idx.len()),
                (Some(b), _, _) => {
                    v.append_bits(&pack_bits(idx, |i| i != NULL_INDEX && b.get(i as usize)), 0, idx.len())
                }
            }
        }
        v
    })
}

/// Rows `rows` of `col`, symbol codes translated through `remap` (old code → new) if given:
/// one input of [`Column::concat_spans`].
#[derive(Debug, Clone)]
pub struct Span<'a> {
    /// The column read.
    pub col: &'a Column,
    /// Its rows taken, in order.
    pub rows: std::ops::Range<usize>,
    /// Old symbol code → new code, for symbol columns joined into another dictionary; `None` keeps
    /// codes.
    pub remap: Option<&'a [u32]>,
}
