//! ZeptoDB's errors as PostgreSQL errors: a SQLSTATE for each of our codes, the message, and
//! the position PostgreSQL reports (a 1-based character index into the statement) when the
//! error knows where it is, so psql draws its caret and drivers fill `statement_position`.

use pgwire::error::{ErrorInfo, PgWireError, SEVERITY_ERROR};
use zepto_sql::error::FileProblem;
use zepto_sql::SqlError;

/// The SQLSTATE of `e` (PostgreSQL's code for the same condition).
pub fn sqlstate(e: &SqlError) -> &'static str {
    match e {
        SqlError::Parse { .. } => "42601",
        SqlError::Plan { message, .. } if message.contains("function") => "42883",
        SqlError::Plan { .. } => "42804",
        SqlError::TableNotFound { .. } => "42P01",
        SqlError::TableExists(_) => "42P07",
        SqlError::ColumnNotFound { .. } => "42703",
        SqlError::Execution(m) if m.contains("division by zero") => "22012",
        SqlError::Execution(_) => "22000",
        SqlError::Io(_) => "58030",
        SqlError::File { problem: FileProblem::NotFound, .. } => "58P01",
        SqlError::File { problem: FileProblem::Denied, .. } => "42501",
        SqlError::File { problem: FileProblem::Malformed, .. } => "22P04",
        SqlError::LimitExceeded(_) => "54000",
        SqlError::DiskFull(_) => "53100",
        SqlError::ResourcesExhausted(_) => "53200",
        SqlError::Timeout(_) | SqlError::Cancelled => "57014",
        SqlError::PermissionDenied(_) => "42501",
        SqlError::NotSupported(_) => "0A000",
        SqlError::Unavailable(_) => "57P03",
        SqlError::Internal(_) => "XX000",
    }
}

/// `e`, raised by statement text `sql`, as the error a PostgreSQL client reads.
pub fn pg_error(e: &SqlError, sql: &str) -> PgWireError {
    let mut info = ErrorInfo::new(SEVERITY_ERROR.to_owned(), sqlstate(e).to_owned(), e.to_string());
    info.position = e.pos().map(|p| position(sql, p.offset).to_string());
    info.hint = Some(format!("ZeptoDB error code {}", e.code()));
    PgWireError::UserError(Box::new(info))
}

/// `e`, raised by the piece of `sql` that starts at byte `base`, with its position counted
/// from the start of `sql`.
pub fn shifted(e: PgWireError, sql: &str, base: usize) -> PgWireError {
    match e {
        PgWireError::UserError(mut info) => {
            let before = position(sql, base) - 1;
            info.position = info.position.and_then(|p| p.parse::<usize>().ok()).map(|p| (p + before).to_string());
            PgWireError::UserError(info)
        }
        e => e,
    }
}

/// An error of our own with `code` (a SQLSTATE).
pub fn user_error(code: &str, message: impl Into<String>) -> PgWireError {
    PgWireError::UserError(Box::new(ErrorInfo::new(SEVERITY_ERROR.to_owned(), code.to_owned(), message.into())))
}

/// The 1-based character position of byte `offset` in `sql`.
fn position(sql: &str, offset: usize) -> usize {
    let mut end = offset.min(sql.len());
    while !sql.is_char_boundary(end) {
        end -= 1;
    }
    sql.get(..end).map_or(0, |s| s.chars().count()) + 1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_count_characters_from_one() {
        assert_eq!(position("SELECT x", 7), 8);
        assert_eq!(position("SELECT 'é' x", 12), 12, "é is two bytes, one character");
        assert_eq!(position("ab", 99), 3);
        let e = zepto_sql::parser::parse_statements("SELECT FROM WHERE").expect_err("bad");
        let PgWireError::UserError(info) = pg_error(&e, "SELECT FROM WHERE") else { panic!("a user error") };
        assert_eq!((info.code.as_str(), info.position.as_deref()), ("42601", Some("8")), "at FROM");
    }
}
