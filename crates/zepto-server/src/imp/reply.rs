//! `/imp`'s answers in QuestDB's two shapes: `fmt=json`
//!
//! ```text
//! {"status":"OK","location":"t","rowsRejected":0,"rowsImported":4,"header":true,
//!  "partitionBy":"DAY","timestamp":"ts","columns":[{"name":"ts","type":"TIMESTAMP","size":8,"errors":0},...]}
//! ```
//!
//! (`timestamp` only when the table has a designated one), and the default text table of
//! 115-character lines ended by CRLF, cell for cell as QuestDB 9.3 draws it. A failed import
//! is `{"status":"message"}` (the message alone as text), with status 200, as QuestDB answers.
#![cfg_attr(not(test), deny(clippy::indexing_slicing, clippy::unwrap_used, clippy::expect_used))]

use crate::exec_json::type_name;
use zepto_io::format::json_escape;
use zepto_storage::DataType;

/// What an import did.
#[derive(Debug, Clone)]
pub struct Report {
    /// The table.
    pub location: String,
    /// Rows left out.
    pub rejected: u64,
    /// Rows stored.
    pub imported: u64,
    /// `partitionBy` as asked (NONE by default).
    pub partition_by: String,
    /// The table's designated timestamp.
    pub timestamp: Option<String>,
    /// The table's columns, each with its values that did not read.
    pub columns: Vec<(String, DataType, u64)>,
}

/// QuestDB's size of a value of `dt` in bytes (0 for text of any length).
fn size(dt: DataType) -> u32 {
    match dt {
        DataType::Bool => 1,
        DataType::Int32 | DataType::Float32 | DataType::Symbol => 4,
        DataType::Int64 | DataType::Float64 | DataType::Timestamp | DataType::Date | DataType::Interval => 8,
        _ => 0,
    }
}

/// The `fmt=json` answer.
pub fn json(r: &Report) -> String {
    let mut s = String::from("{\"status\":\"OK\",\"location\":");
    json_escape(&r.location, &mut s);
    s.push_str(&format!(
        ",\"rowsRejected\":{},\"rowsImported\":{},\"header\":true,\"partitionBy\":",
        r.rejected, r.imported
    ));
    json_escape(&r.partition_by, &mut s);
    if let Some(ts) = &r.timestamp {
        s.push_str(",\"timestamp\":");
        json_escape(ts, &mut s);
    }
    s.push_str(",\"columns\":[");
    for (i, (name, dt, errors)) in r.columns.iter().enumerate() {
        if i > 0 {
            s.push(',');
        }
        s.push_str("{\"name\":");
        json_escape(name, &mut s);
        s.push_str(&format!(",\"type\":\"{}\",\"size\":{},\"errors\":{errors}}}", type_name(*dt), size(*dt)));
    }
    s.push_str("]}");
    s
}

/// A failed import's answer: `{"status":"message"}`, or the message alone as text.
pub fn failure(message: &str, as_json: bool) -> String {
    if !as_json {
        return message.to_string();
    }
    let mut s = String::from("{\"status\":");
    json_escape(message, &mut s);
    s.push('}');
    s
}

/// One line of the table: each cell right-aligned in its width, two spaces after it.
fn line(cells: &[(&str, usize)], out: &mut String) {
    out.push('|');
    for (text, width) in cells {
        out.push_str(&format!("{text:>width$}  |"));
    }
    out.push_str("\r\n");
}

/// The default answer: QuestDB's text table.
pub fn table(r: &Report) -> String {
    let border = format!("+{}+\r\n", "-".repeat(113));
    let mut s = border.clone();
    let head = |a: &str, b: &str, c: &str, d: &str, e: &str, s: &mut String| {
        line(&[(a, 15), (b, 50), (c, 15), (d, 7), (e, 12)], s);
    };
    head("Location:", &r.location, "Pattern", "Locale", "Errors", &mut s);
    head("Partition by", &r.partition_by, "", "", "", &mut s);
    head("Timestamp", r.timestamp.as_deref().unwrap_or("NONE"), "", "", "", &mut s);
    s.push_str(&border);
    head("Rows handled", &(r.imported + r.rejected).to_string(), "", "", "", &mut s);
    head("Rows imported", &r.imported.to_string(), "", "", "", &mut s);
    s.push_str(&border);
    for (i, (name, dt, errors)) in r.columns.iter().enumerate() {
        line(&[(&i.to_string(), 15), (name, 50), (type_name(*dt), 25), (&errors.to_string(), 12)], &mut s);
    }
    s.push_str(&border);
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn draws_questdbs_table() {
        let r = Report {
            location: "imp_probe_13".into(),
            rejected: 0,
            imported: 2,
            partition_by: "NONE".into(),
            timestamp: None,
            columns: vec![("s".into(), DataType::Varchar, 0), ("ts".into(), DataType::Timestamp, 0)],
        };
        // QuestDB 9.3's answer, but for the type of `s` (its CHAR is our VARCHAR).
        let want = "+-----------------------------------------------------------------------------------------------------------------+\r\n\
|      Location:  |                                      imp_probe_13  |        Pattern  | Locale  |      Errors  |\r\n\
|   Partition by  |                                              NONE  |                 |         |              |\r\n\
|      Timestamp  |                                              NONE  |                 |         |              |\r\n\
+-----------------------------------------------------------------------------------------------------------------+\r\n\
|   Rows handled  |                                                 2  |                 |         |              |\r\n\
|  Rows imported  |                                                 2  |                 |         |              |\r\n\
+-----------------------------------------------------------------------------------------------------------------+\r\n\
|              0  |                                                 s  |                  VARCHAR  |           0  |\r\n\
|              1  |                                                ts  |                TIMESTAMP  |           0  |\r\n\
+-----------------------------------------------------------------------------------------------------------------+\r\n";
        assert_eq!(table(&r), want);
        assert_eq!(
            json(&r),
            "{\"status\":\"OK\",\"location\":\"imp_probe_13\",\"rowsRejected\":0,\"rowsImported\":2,\"header\":true,\
             \"partitionBy\":\"NONE\",\"columns\":[{\"name\":\"s\",\"type\":\"VARCHAR\",\"size\":0,\"errors\":0},\
             {\"name\":\"ts\",\"type\":\"TIMESTAMP\",\"size\":8,\"errors\":0}]}"
        );
    }
}
