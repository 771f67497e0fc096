//! Bound expressions: what the binder makes of an AST expression (columns by position, every
//! type resolved, implicit casts explicit) and the function catalog ([`functions`]) they call.
//!
//! They sit below both the planner, which builds and folds them, and the executor, which runs
//! them, so that neither has to import the other for them.

pub mod functions;
pub mod in_set;

use crate::parser::ast::{BinaryOp, Query};
use functions::ScalarFunc;
use in_set::InSet;
use zepto_storage::{DataType, Value};

/// How a subquery's rows become a value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SubqueryKind {
    /// A scalar subquery: its single value (NULL without rows; more than one row is an error).
    Scalar,
    /// `[NOT] EXISTS`: whether it has rows.
    Exists {
        /// `NOT EXISTS`.
        negated: bool,
    },
    /// `[NOT] IN`: whether its first column holds the left value (three-valued, as SQL's IN).
    In {
        /// `NOT IN`.
        negated: bool,
    },
}

/// A column of the enclosing row that a correlated subquery reads.
#[derive(Debug, Clone, PartialEq)]
pub struct OuterRef {
    /// The qualifier as written, if any.
    pub table: Option<String>,
    /// The column name.
    pub name: String,
    /// Position in the enclosing scope (the batch the expression is evaluated over).
    pub col: usize,
    /// The column's type.
    pub ty: DataType,
    /// For a column of arrays, the items' type: the value is substituted as such an array.
    pub array_item: Option<DataType>,
}

/// A subquery that references the enclosing row. Evaluated once per distinct tuple of outer
/// values (cached), by substituting them as literals and planning the query again: simple and
/// exact; decorrelation into joins is the faster plan for large inputs (future work).
#[derive(Clone)]
pub struct Correlated {
    /// The subquery as written, planned again per distinct tuple of outer values.
    pub query: Query,
    /// What the subquery's rows become.
    pub kind: SubqueryKind,
    /// The outer columns it reads.
    pub refs: Vec<OuterRef>,
    /// Type of the subquery's first column.
    pub sub_ty: DataType,
    /// Where (and with which table grants) to plan it again.
    pub catalog: crate::access::CatalogView,
}

impl std::fmt::Debug for Correlated {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Correlated").field("kind", &self.kind).field("refs", &self.refs).finish()
    }
}

impl PartialEq for Correlated {
    fn eq(&self, o: &Self) -> bool {
        self.query == o.query && self.kind == o.kind && self.refs == o.refs
    }
}

/// A bound expression: columns by position in the input batch, every type resolved, every cast
/// explicit.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub enum BExpr {
    /// Input column at this position, and its type.
    Col(usize, DataType),
    /// A constant and its type (a NULL literal carries the type it was cast or coerced to).
    Lit(Value, DataType),
    /// Arithmetic negation.
    Neg(Box<BExpr>),
    /// Logical NOT (three-valued).
    Not(Box<BExpr>),
    /// A binary operation on operands already cast to a common type where needed.
    Binary {
        /// The operator.
        op: BinaryOp,
        /// The left operand.
        left: Box<BExpr>,
        /// The right operand.
        right: Box<BExpr>,
        /// The result type.
        ty: DataType,
    },
    /// A type conversion.
    Cast {
        /// The value converted.
        expr: Box<BExpr>,
        /// The target type.
        to: DataType,
        /// `TRY_CAST`: NULL where the conversion fails, instead of an error.
        try_: bool,
    },
    /// A scalar function call.
    Func {
        /// The function.
        func: ScalarFunc,
        /// Arguments, coerced to the types the function takes.
        args: Vec<BExpr>,
        /// The result type.
        ty: DataType,
    },
    /// A searched CASE (a simple CASE is bound into this form).
    Case {
        /// Conditions and results, in order: the first true condition wins.
        whens: Vec<(BExpr, BExpr)>,
        /// The result when none is true; `None` is NULL.
        else_: Option<Box<BExpr>>,
        /// The result type.
        ty: DataType,
    },
    /// `expr [NOT] IN (list)`, three-valued.
    InList {
        /// The value looked for.
        expr: Box<BExpr>,
        /// The candidates, of the value's type.
        list: Vec<BExpr>,
        /// `NOT IN`.
        negated: bool,
    },
    /// `expr [NOT] IN (constants)` with [`in_set::HASH_FROM`] or more constants: a hash lookup
    /// per row, three-valued as [`BExpr::InList`].
    InSet {
        /// The value looked for.
        expr: Box<BExpr>,
        /// The constants, of the value's type.
        set: InSet,
        /// `NOT IN`.
        negated: bool,
    },
    /// `expr IS [NOT] NULL`.
    IsNull {
        /// The value tested.
        expr: Box<BExpr>,
        /// `IS NOT NULL`.
        negated: bool,
    },
    /// `expr [NOT] LIKE | ILIKE pattern`.
    Like {
        /// The string tested.
        expr: Box<BExpr>,
        /// The pattern (`%` any run, `_` one character).
        pattern: Box<BExpr>,
        /// `NOT LIKE`.
        negated: bool,
        /// `ILIKE`: ignore case.
        case_insensitive: bool,
    },
    /// Correlated subquery; `expr` is the left side of `IN`. Never sent to another node (a
    /// plan fragment holding one fails to encode).
    #[serde(skip)]
    Correlated {
        /// The subquery, with the outer columns it reads.
        sub: Box<Correlated>,
        /// The left side of `IN`; `None` for the other kinds.
        expr: Option<Box<BExpr>>,
    },
}

impl BExpr {
    /// The type of the expression's value.
    pub fn data_type(&self) -> DataType {
        match self {
            BExpr::Col(_, t) | BExpr::Lit(_, t) => *t,
            BExpr::Neg(e) => e.data_type(),
            BExpr::Not(_) | BExpr::InList { .. } | BExpr::InSet { .. } | BExpr::IsNull { .. } | BExpr::Like { .. } => {
                DataType::Bool
            }
            BExpr::Binary { ty, .. } | BExpr::Func { ty, .. } | BExpr::Case { ty, .. } => *ty,
            BExpr::Cast { to, .. } => *to,
            BExpr::Correlated { sub, .. } => match sub.kind {
                SubqueryKind::Scalar => sub.sub_ty,
                _ => DataType::Bool,
            },
        }
    }

    /// Whether the expression's value at a row depends on that row alone, and evaluating it
    /// batch by batch gives the same columns as over one batch: no correlated subquery
    /// (evaluated per distinct outer value of its batch) and no computed SYMBOL (each batch
    /// would code it in a dictionary of its own). `now()` is no obstacle: the binder made it
    /// the statement's time.
    pub fn is_row_local(&self) -> bool {
        matches!(self, BExpr::Col(..))
            || (self.data_type() != zepto_storage::DataType::Symbol
                && !self.any(&|x| matches!(x, BExpr::Correlated { .. })))
    }

    /// Visit every column reference.
    pub fn for_each_col(&self, f: &mut impl FnMut(usize)) {
        match self {
            BExpr::Col(i, _) => f(*i),
            BExpr::Lit(..) => {}
            BExpr::Neg(e) | BExpr::Not(e) => e.for_each_col(f),
            BExpr::Binary { left, right, .. } => {
                left.for_each_col(f);
                right.for_each_col(f);
            }
            BExpr::Cast { expr, .. } | BExpr::IsNull { expr, .. } | BExpr::InSet { expr, .. } => expr.for_each_col(f),
            BExpr::Func { args, .. } => args.iter().for_each(|a| a.for_each_col(f)),
            BExpr::Case { whens, else_, .. } => {
                for (w, t) in whens {
                    w.for_each_col(f);
                    t.for_each_col(f);
                }
                if let Some(e) = else_ {
                    e.for_each_col(f);
                }
            }
            BExpr::InList { expr, list, .. } => {
                expr.for_each_col(f);
                list.iter().for_each(|a| a.for_each_col(f));
            }
            BExpr::Like { expr, pattern, .. } => {
                expr.for_each_col(f);
                pattern.for_each_col(f);
            }
            BExpr::Correlated { sub, expr } => {
                sub.refs.iter().for_each(|r| f(r.col));
                if let Some(e) = expr {
                    e.for_each_col(f);
                }
            }
        }
    }

    /// Whether `f` holds for this expression or any expression inside it.
    pub fn any(&self, f: &impl Fn(&BExpr) -> bool) -> bool {
        if f(self) {
            return true;
        }
        match self {
            BExpr::Col(..) | BExpr::Lit(..) => false,
            BExpr::Neg(e) | BExpr::Not(e) => e.any(f),
            BExpr::Binary { left, right, .. } => left.any(f) || right.any(f),
            BExpr::Cast { expr, .. } | BExpr::IsNull { expr, .. } | BExpr::InSet { expr, .. } => expr.any(f),
            BExpr::Func { args, .. } => args.iter().any(|a| a.any(f)),
            BExpr::Case { whens, else_, .. } => {
                whens.iter().any(|(w, t)| w.any(f) || t.any(f)) || else_.as_deref().is_some_and(|e| e.any(f))
            }
            BExpr::InList { expr, list, .. } => expr.any(f) || list.iter().any(|a| a.any(f)),
            BExpr::Like { expr, pattern, .. } => expr.any(f) || pattern.any(f),
            BExpr::Correlated { expr, .. } => expr.as_deref().is_some_and(|e| e.any(f)),
        }
    }

    /// The AND-ed conjuncts of a predicate, appended to `out` (left before right).
    pub fn conjuncts(self, out: &mut Vec<BExpr>) {
        match self {
            BExpr::Binary { op: BinaryOp::And, left, right, .. } => {
                left.conjuncts(out);
                right.conjuncts(out);
            }
            e => out.push(e),
        }
    }

    /// The conjunction of `v` (right-nested, in order); `None` for no conjuncts.
    pub fn and_all(mut v: Vec<BExpr>) -> Option<BExpr> {
        let first = v.pop()?;
        Some(v.into_iter().rev().fold(first, |acc, e| BExpr::Binary {
            op: BinaryOp::And,
            left: Box::new(e),
            right: Box::new(acc),
            ty: DataType::Bool,
        }))
    }

    /// Rewrite column indices.
    pub fn map_cols(&mut self, f: &impl Fn(usize) -> usize) {
        match self {
            BExpr::Col(i, _) => *i = f(*i),
            BExpr::Lit(..) => {}
            BExpr::Neg(e) | BExpr::Not(e) => e.map_cols(f),
            BExpr::Binary { left, right, .. } => {
                left.map_cols(f);
                right.map_cols(f);
            }
            BExpr::Cast { expr, .. } | BExpr::IsNull { expr, .. } | BExpr::InSet { expr, .. } => expr.map_cols(f),
            BExpr::Func { args, .. } => args.iter_mut().for_each(|a| a.map_cols(f)),
            BExpr::Case { whens, else_, .. } => {
                for (w, t) in whens {
                    w.map_cols(f);
                    t.map_cols(f);
                }
                if let Some(e) = else_ {
                    e.map_cols(f);
                }
            }
            BExpr::InList { expr, list, .. } => {
                expr.map_cols(f);
                list.iter_mut().for_each(|a| a.map_cols(f));
            }
            BExpr::Like { expr, pattern, .. } => {
                expr.map_cols(f);
                pattern.map_cols(f);
            }
            BExpr::Correlated { sub, expr } => {
                sub.refs.iter_mut().for_each(|r| r.col = f(r.col));
                if let Some(e) = expr {
                    e.map_cols(f);
                }
            }
        }
    }
}

/// What a VARCHAR column holding PostgreSQL arrays holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ArrayOf {
    /// The items' type.
    pub item: DataType,
    /// The text is a vector type's (`int2vector`, `oidvector`: items separated by spaces),
    /// not `{...}` array text.
    pub spaced: bool,
}

impl ArrayOf {
    /// `{...}` arrays of `item`.
    pub fn of(item: DataType) -> ArrayOf {
        ArrayOf { item, spaced: false }
    }
}
