//! Secondary index definitions: what `CREATE INDEX` recorded, kept with the table.
//!
//! Storage keeps the definition only (name, column, method, options), logs it and writes it in
//! checkpoints, so an index survives restarts; the structure itself (an HNSW graph for a vector
//! column) is built by the layer that knows the method (`zepto-ann`, driven by the SQL engine)
//! from the table's rows, and never changes what a query answers, only how fast. Methods and
//! their options are checked there; here a definition is only well formed.

use crate::error::StorageError;

/// One index of a table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexDef {
    name: String,
    column: String,
    method: String,
    options: Vec<(String, String)>,
}

fn plain(what: &str, s: &str) -> Result<(), StorageError> {
    let ok = !s.is_empty() && !s.chars().any(|c| c.is_control() || c == '\t' || c == '=' || c == ',');
    if ok {
        Ok(())
    } else {
        Err(StorageError::Invalid(format!("index {what} '{s}': empty or holds a tab, newline, '=' or ','")))
    }
}

impl IndexDef {
    /// An index `name` on `column` by `method` (lower-cased) with `options` (keys lower-cased,
    /// each at most once). Names and values may not hold tabs, newlines, '=' or ','.
    pub fn new(
        name: &str,
        column: &str,
        method: &str,
        options: Vec<(String, String)>,
    ) -> Result<IndexDef, StorageError> {
        plain("name", name)?;
        plain("column", column)?;
        plain("method", method)?;
        let mut opts: Vec<(String, String)> = Vec::with_capacity(options.len());
        for (k, v) in options {
            plain("option", &k)?;
            plain("option value", &v)?;
            let k = k.to_ascii_lowercase();
            if opts.iter().any(|(o, _)| *o == k) {
                return Err(StorageError::Invalid(format!("index option '{k}' given twice")));
            }
            opts.push((k, v));
        }
        Ok(IndexDef {
            name: name.to_string(),
            column: column.to_string(),
            method: method.to_ascii_lowercase(),
            options: opts,
        })
    }

    /// The index's name (unique in a catalog, case-insensitively).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The column it indexes.
    pub fn column(&self) -> &str {
        &self.column
    }

    /// How (`hnsw`).
    pub fn method(&self) -> &str {
        &self.method
    }

    /// Its `WITH (...)` options, as given.
    pub fn options(&self) -> &[(String, String)] {
        &self.options
    }

    /// The value of option `key`, if given.
    pub fn option(&self, key: &str) -> Option<&str> {
        self.options.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
    }

    /// One line of text: `name \t column \t method \t k=v,k=v` (what a checkpoint stores).
    pub fn to_line(&self) -> String {
        let opts: Vec<String> = self.options.iter().map(|(k, v)| format!("{k}={v}")).collect();
        format!("{}\t{}\t{}\t{}", self.name, self.column, self.method, opts.join(","))
    }

    /// The definition [`IndexDef::to_line`] wrote.
    pub fn from_line(line: &str) -> Result<IndexDef, StorageError> {
        let bad = || StorageError::Invalid(format!("an index line '{line}' is malformed"));
        let mut f = line.split('\t');
        let (Some(name), Some(column), Some(method), Some(opts), None) =
            (f.next(), f.next(), f.next(), f.next(), f.next())
        else {
            return Err(bad());
        };
        let options = opts
            .split(',')
            .filter(|o| !o.is_empty())
            .map(|o| o.split_once('=').map(|(k, v)| (k.to_string(), v.to_string())).ok_or_else(bad))
            .collect::<Result<Vec<_>, _>>()?;
        IndexDef::new(name, column, method, options)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_definition_round_trips_through_its_line_and_refuses_what_it_cannot_hold() {
        let opts = vec![("Metric".to_string(), "cosine".to_string()), ("m".to_string(), "16".to_string())];
        let d = IndexDef::new("i", "emb", "HNSW", opts).expect("well formed");
        assert_eq!(
            (d.method(), d.option("metric"), d.option("m"), d.option("x")),
            ("hnsw", Some("cosine"), Some("16"), None)
        );
        assert_eq!(IndexDef::from_line(&d.to_line()).expect("parsed"), d);
        let none = IndexDef::new("j", "v", "hnsw", Vec::new()).expect("no options");
        assert_eq!(IndexDef::from_line(&none.to_line()).expect("parsed"), none);
        assert!(IndexDef::new("a\tb", "v", "hnsw", Vec::new()).is_err());
        assert!(IndexDef::new("i", "v", "hnsw", vec![("m".into(), "1".into()), ("M".into(), "2".into())]).is_err());
        assert!(IndexDef::from_line("i\tv").is_err());
    }
}
