//! How much one request may ask of the parser: its size, its statements, and the depth and
//! size of its expressions (ClickHouse's `max_query_size`, `max_ast_depth` and
//! `max_ast_elements`; DuckDB's `max_expression_depth`).
//!
//! Why: every later pass (binder, optimizer, evaluator) walks expressions recursively, so a
//! left-deep chain of 100k `AND`s would overflow a thread's stack and take the whole server
//! down. The parser itself builds such chains in loops; it measures each expression when it
//! is complete ([`measure`], iterative) and refuses one beyond the limits with an error that
//! names the limit and the flag that raises it.

use super::ast::Expr;
use super::visit::for_each_child;
use crate::error::{Pos, Result, SqlError};

/// The highest expression depth a setting may allow. Parser, binder and evaluator grow their
/// stacks on demand, but the derived `Drop` and `Clone` of a tree and the small walkers over
/// bound expressions recurse plainly, so the bound is what every one of them fits into on the
/// 2 MiB stack of a server thread, with room to spare: `tests/deep_input.rs` runs the deepest
/// allowed trees through parse, clone, visit, bind, run and drop on a 1 MiB stack as well.
/// (It was 10,000; at 5,000 a walker over a bound `AND` chain overflowed a 2 MiB stack.)
pub const HARD_MAX_DEPTH: usize = 2_000;

/// Limits checked while parsing. The defaults suit interactive and scripted use; the server
/// exposes each one as a flag (`--max-query-mb`, `--max-statements`, `--max-expr-depth`,
/// `--max-expr-elements`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ParseLimits {
    /// Bytes of SQL text in one request.
    pub max_bytes: usize,
    /// Statements in one request.
    pub max_statements: usize,
    /// Depth of one expression tree (a chain `a AND b AND c` of n terms is n deep).
    pub max_depth: usize,
    /// Expression nodes in one statement (a literal IN list of n items is n + 2).
    pub max_elements: usize,
}

impl Default for ParseLimits {
    fn default() -> ParseLimits {
        ParseLimits { max_bytes: 16 << 20, max_statements: 10_000, max_depth: 1_000, max_elements: 2_000_000 }
    }
}

impl ParseLimits {
    /// Refuse settings that would make a limit meaningless or unsafe.
    pub fn validate(&self) -> std::result::Result<(), String> {
        if self.max_bytes == 0 || self.max_statements == 0 || self.max_elements == 0 {
            return Err("query size, statement and element limits must be positive".into());
        }
        if !(1..=HARD_MAX_DEPTH).contains(&self.max_depth) {
            return Err(format!("the expression depth limit must be between 1 and {HARD_MAX_DEPTH}"));
        }
        Ok(())
    }

    /// The request's text against `max_bytes`.
    pub fn check_size(&self, sql: &str) -> Result<()> {
        if sql.len() > self.max_bytes {
            return Err(SqlError::LimitExceeded(format!(
                "the SQL text is {} bytes, over the limit of {} (max_query_bytes; the server's \
                 --max-query-mb raises it)",
                sql.len(),
                self.max_bytes
            )));
        }
        Ok(())
    }

    /// Refuse a statement beyond the `max_statements`-th.
    pub(super) fn check_statements(&self, count: usize, pos: Pos) -> Result<()> {
        if count > self.max_statements {
            return Err(SqlError::LimitExceeded(format!(
                "more than {} statements in one request at line {}, column {} (max_statements; the \
                 server's --max-statements raises it)",
                self.max_statements, pos.line, pos.column
            )));
        }
        Ok(())
    }

    /// The error for an expression `depth` deep at `pos`.
    pub(super) fn too_deep(&self, depth: usize, pos: Pos) -> SqlError {
        SqlError::LimitExceeded(format!(
            "expression at line {}, column {} is {depth} or more levels deep, over the limit of {} \
             (max_expression_depth; the server's --max-expr-depth raises it, up to {HARD_MAX_DEPTH})",
            pos.line, pos.column, self.max_depth
        ))
    }

    /// Account for a complete expression that starts at `pos`: its depth against `max_depth`,
    /// and its nodes (added to the statement's `elements`) against `max_elements`.
    pub(super) fn check_expr(&self, e: &Expr, pos: Pos, elements: &mut usize) -> Result<()> {
        let (depth, nodes) = measure(e);
        if depth > self.max_depth {
            return Err(self.too_deep(depth, pos));
        }
        *elements = elements.saturating_add(nodes);
        if *elements > self.max_elements {
            return Err(SqlError::LimitExceeded(format!(
                "statement has more than {} expression elements at line {}, column {} \
                 (max_expression_elements; the server's --max-expr-elements raises it)",
                self.max_elements, pos.line, pos.column
            )));
        }
        Ok(())
    }
}

/// Depth and node count of `e`, walked with an explicit stack (no recursion, whatever the
/// depth). Subqueries count as one node: their own expressions are measured as they are
/// parsed. A packed `IN` list's items count as the literals they were written as.
pub fn measure(e: &Expr) -> (usize, usize) {
    let mut stack = vec![(e, 1usize)];
    let (mut depth, mut nodes) = (0usize, 0usize);
    while let Some((e, d)) = stack.pop() {
        depth = depth.max(d);
        nodes += 1;
        if let Expr::InValues(v) = e {
            depth = depth.max(d + 1);
            nodes += v.values.len();
        }
        for_each_child(e, &mut |c| stack.push((c, d + 1)));
    }
    (depth, nodes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{parse_script, parse_statements};

    fn chain(op: &str, n: usize) -> String {
        let mut s = String::from("SELECT 1 WHERE 1 = 1");
        for _ in 1..n {
            s.push_str(op);
            s.push_str("1 = 1");
        }
        s
    }

    #[test]
    fn depth_counts_left_deep_chains() {
        let limits = ParseLimits { max_depth: 50, ..ParseLimits::default() };
        let ok = chain(" AND ", 20);
        assert!(parse_script(&ok, &[], &limits, &|| Ok(())).is_ok());
        let deep = chain(" AND ", 60);
        let e = parse_script(&deep, &[], &limits, &|| Ok(())).expect_err("too deep");
        assert_eq!(e.code(), "LIMIT_EXCEEDED");
        assert!(e.to_string().contains("--max-expr-depth"), "{e}");
        // The default limit holds a 100k-term chain off cleanly too.
        let huge = chain(" OR ", 100_000);
        let e = parse_statements(&huge).expect_err("too deep");
        assert_eq!(e.code(), "LIMIT_EXCEEDED", "{e}");
    }

    #[test]
    fn elements_and_statements_are_counted() {
        let limits = ParseLimits { max_elements: 100, max_statements: 3, ..ParseLimits::default() };
        let list: Vec<String> = (0..200).map(|i| i.to_string()).collect();
        let sql = format!("SELECT 1 WHERE 2 IN ({})", list.join(","));
        let e = parse_script(&sql, &[], &limits, &|| Ok(())).expect_err("too many elements");
        assert!(e.to_string().contains("max_expression_elements"), "{e}");
        assert!(parse_script("SELECT 1; SELECT 2; SELECT 3", &[], &limits, &|| Ok(())).is_ok());
        let e = parse_script("SELECT 1; SELECT 2; SELECT 3; SELECT 4", &[], &limits, &|| Ok(())).expect_err("4");
        assert!(e.to_string().contains("max_statements"), "{e}");
        let small = ParseLimits { max_bytes: 10, ..ParseLimits::default() };
        let e = parse_script("SELECT 12345678", &[], &small, &|| Ok(())).expect_err("size");
        assert!(e.to_string().contains("max_query_bytes"), "{e}");
    }

    #[test]
    fn interrupt_stops_a_long_script() {
        let list: Vec<String> = (0..100_000).map(|i| i.to_string()).collect();
        let sql = format!("SELECT 1 WHERE 2 IN ({})", list.join(","));
        let e = parse_script(&sql, &[], &ParseLimits::default(), &|| Err(SqlError::Cancelled)).expect_err("stopped");
        assert_eq!(e, SqlError::Cancelled);
    }

    #[test]
    fn a_million_item_in_list_parses() {
        // Linear-time lexing and parsing: before, every token recounted its line's characters.
        let list: Vec<String> = (0..1_000_000).map(|i| i.to_string()).collect();
        let sql = format!("SELECT 1 WHERE 2 IN ({})", list.join(","));
        let stmts = parse_statements(&sql).expect("parses");
        assert_eq!(stmts.len(), 1);
        // Positions stay exact on one long line with multi-byte characters before them.
        let e = parse_statements("SELECT 'ééé', 1, 2, 3 @").expect_err("bad char");
        assert_eq!(e.pos().map(|p| (p.line, p.column)), Some((1, 23)));
    }
}
