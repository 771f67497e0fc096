//! The function catalog: names → scalar functions and aggregates, with argument coercion and
//! result types. Semantics follow DuckDB unless SPEC §3 says otherwise.

use crate::error::{Pos, Result, SqlError};
use crate::parser::ast::BinaryOp;
use zepto_storage::vector::Metric;
use zepto_storage::DataType;

/// A built-in scalar function (names and aliases: [`scalar_by_name`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum ScalarFunc {
    /// `lower(s)`: lower case.
    Lower,
    /// `upper(s)`: upper case.
    Upper,
    /// `length(s)`: length in characters.
    Length,
    /// `substr(s, start[, len])`: 1-based substring.
    Substr,
    /// `concat(a, ...)`: strings joined, NULL arguments skipped (unlike `||`).
    Concat,
    /// `trim(s)`: whitespace removed from both ends.
    Trim,
    /// `ltrim(s)`: leading whitespace removed.
    LTrim,
    /// `rtrim(s)`: trailing whitespace removed.
    RTrim,
    /// `replace(s, from, to)`: every occurrence replaced.
    Replace,
    /// `starts_with(s, prefix)`.
    StartsWith,
    /// `like_escape(pattern, esc)`: a LIKE pattern written with escape character `esc` (SQL's
    /// `LIKE p ESCAPE 'c'`) rewritten with LIKE's own, the backslash; `esc` empty: no escape.
    LikeEscape,
    /// `regexp_matches(s, pattern[, options])`: whether the regular expression matches
    /// anywhere in `s` (`i` in `options`: ignoring case); PostgreSQL's `~`, `~*`.
    RegexpMatches,
    /// `kafka_partition(key, partitions)`: the partition Kafka's default partitioner (murmur2,
    /// as the Java client and librdkafka's `murmur2_random` compute it) gives a record keyed
    /// `key` in a topic of `partitions` partitions; NULL for a NULL key.
    KafkaPartition,
    /// `pg_size_pretty(bytes)`: a size as PostgreSQL writes it (`10239 bytes`, `977 kB`,
    /// `20 MB`: the unit that keeps the number under 20,480, halves rounded away from zero).
    SizePretty,
    /// `array_to_string(a, sep [, null_text])`: a PostgreSQL array's items joined by `sep`,
    /// NULL items skipped (or written as `null_text`).
    ArrayToString,
    /// `a[i]`: item `i` (from 1) of a PostgreSQL array as text; NULL past either end.
    ArraySubscript,
    /// `x op ANY (a)` (`any`) or `x op ALL (a)` over the items of array `a` (text) read as
    /// `x`'s type, three-valued: ANY of no items is false, ALL true.
    Quantified {
        /// The comparison.
        op: BinaryOp,
        /// ANY (else ALL).
        any: bool,
    },
    /// `array_upper(a, dim)` (`upper`; also `array_length(a, dim)`) and `array_lower(a, dim)`
    /// of a PostgreSQL array: its count of items and 1 for dimension 1, NULL for an empty array
    /// or another dimension; `cardinality(a)` (`dim: false`): the count, 0 when empty.
    ArrayBound {
        /// The upper bound (else the lower).
        upper: bool,
        /// Takes a dimension (else `cardinality`).
        dim: bool,
    },
    /// `string_to_array(s, sep [, null_text])`: `s` split at each `sep` (into characters when
    /// `sep` is NULL; whole when it is empty), items equal to `null_text` NULL.
    StringToArray,
    /// `parse_ident(s)`: a qualified name's parts (quoted parts as written, the others in
    /// lower case).
    ParseIdent,
    /// `quote_ident(s)`: `s` as an identifier: bare when it is a lower-case name and not a
    /// reserved word, else double-quoted.
    QuoteIdent,
    /// `ARRAY[a, b, ...]`: the items (of one type) as PostgreSQL's array text.
    ArrayValue,
    /// `a || b` of two arrays, `array_cat(a, b)`: a NULL side counts as empty.
    ArrayCat,
    /// `abs(x)`.
    Abs,
    /// `a & b`, `a | b`, `a # b` (`xor`), `a << n`, `a >> n` on integers (`bit_and_op` ...).
    Bitwise(Bitwise),
    /// `round(x[, digits])`.
    Round,
    /// `floor(x)`.
    Floor,
    /// `ceil(x)`.
    Ceil,
    /// `sqrt(x)`.
    Sqrt,
    /// `ln(x)`: natural logarithm.
    Ln,
    /// `log10(x)` (also `log`).
    Log10,
    /// `exp(x)`.
    Exp,
    /// `power(x, y)`.
    Power,
    /// `sign(x)`: -1, 0 or 1.
    Sign,
    /// `coalesce(a, ...)`: the first non-NULL argument.
    Coalesce,
    /// `nullif(a, b)`: NULL if `a = b`, else `a`.
    NullIf,
    /// `greatest(a, ...)`: the largest non-NULL argument.
    Greatest,
    /// `least(a, ...)`: the smallest non-NULL argument.
    Least,
    /// `date_trunc(unit, ts)`: the timestamp truncated to the unit.
    DateTrunc,
    /// `date_part(unit, ts)`: one field of the timestamp.
    DatePart,
    /// `epoch_ns(ts)`: nanoseconds since the epoch, as BIGINT.
    EpochNs,
    /// `epoch(ts)`: seconds since the epoch, as DOUBLE.
    Epoch,
    /// `now()` / `current_timestamp`: the statement's time (one value per statement).
    Now,
    /// `xbar(width, x)` / `time_bucket`: `x` rounded down to a multiple of `width` (nanoseconds for
    /// timestamps).
    Xbar,
    /// `month_bucket(n, ts)`: start of the calendar `n`-month bucket (SAMPLE BY nM / ny).
    MonthBucket,
    /// `array_cosine_similarity(a, b)` and the other distances between two `FLOAT[n]` vectors.
    ArrayDistance(zepto_storage::vector::Metric),
    /// `array_length(v)` (also `len(v)` of a vector): its dimension.
    ArrayLength,
    /// `json_build_object(k, v, ...)`: a JSON object of the pairs, as text.
    JsonBuildObject,
    /// `json_build_array(v, ...)`: a JSON array of the values, as text.
    JsonBuildArray,
    /// QuestDB's `dateadd(unit, n, ts)`: `ts` plus `n` calendar units.
    DateAdd,
    /// QuestDB's `datediff(unit, a, b)`: whole units between two timestamps.
    DateDiff,
    /// QuestDB's `timestamp_floor(period, ts)`: the start of the period holding `ts`.
    TimestampFloor,
    /// QuestDB's `timestamp_ceil(period, ts)`: the start of the next period.
    TimestampCeil,
    /// QuestDB's `to_timezone(ts, tz)`: the wall-clock time in zone `tz` of instant `ts`.
    ToTimezone,
    /// QuestDB's `to_utc(ts, tz)`: the instant of wall-clock time `ts` in zone `tz`.
    ToUtc,
    /// `to_timestamp(text, pattern)` (QuestDB's patterns), `to_timestamp(seconds)`.
    ToTimestamp,
}

/// A built-in aggregate function (names and aliases: [`agg_by_name`]).
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub enum AggFunc {
    /// `count(*)`: rows.
    CountStar,
    /// `count(x)`: non-NULL values.
    Count,
    /// `sum(x)`.
    Sum,
    /// `avg(x)`.
    Avg,
    /// `min(x)`.
    Min,
    /// `max(x)`.
    Max,
    /// `first(x)`: the value at the earliest designated timestamp (input order without one).
    First,
    /// `last(x)`: the value at the latest designated timestamp (input order without one).
    Last,
    /// `stddev_samp(x)` (also `stddev`).
    StddevSamp,
    /// `stddev_pop(x)`.
    StddevPop,
    /// `var_samp(x)` (also `variance`).
    VarSamp,
    /// `var_pop(x)`.
    VarPop,
    /// `median(x)`.
    Median,
    /// Discrete quantile at the given fraction.
    Quantile(f64),
    /// Interpolated percentile at the given fraction.
    PercentileCont(f64),
    /// `vwap(price, volume)`: volume-weighted average price.
    Vwap,
    /// Time-weighted average: each value weighted by the time until the next one.
    Twap,
    /// `bool_and(b)` (also `every`): true when every non-NULL value is true.
    BoolAnd,
    /// `bool_or(b)`: true when any non-NULL value is true.
    BoolOr,
    /// `string_agg(x, sep [ORDER BY k])`: the non-NULL values as text, joined by `sep`.
    StringAgg(AggOrder),
    /// `array_agg(x [ORDER BY k])`: the values (NULLs included) as PostgreSQL's array text,
    /// `{a,b,NULL}`; ZeptoDB has no array column type.
    ArrayAgg(AggOrder),
    /// `arg_min(x, v)` (also `min_by`, `argmin`): `x` at the row of the smallest `v` (last
    /// here: plan fragments number the variants).
    ArgMin,
    /// `arg_max(x, v)` (also `max_by`, `argmax`): `x` at the row of the largest `v`.
    ArgMax,
    /// A statistic of pairs `(y, x)`: `covar_pop(y, x)`, `corr(y, x)`, `regr_slope(y, x)`, ...
    Pair(PairStat),
    /// A shape statistic from the third and fourth central moments: `skewness(x)`,
    /// `kurtosis(x)`, `kurtosis_pop(x)`.
    Moment(MomentStat),
    /// `product(x)`: the non-NULL values multiplied (DOUBLE).
    Product,
    /// `geomean(x)` (also `geometric_mean`): the `n`-th root of the product of `n` positive
    /// values, as the exponential of their logarithms' mean.
    GeoMean,
    /// `bit_and(x)`, `bit_or(x)`, `bit_xor(x)`: the non-NULL integers folded bitwise.
    Bits(BitOp),
    /// `any_value(x)`: a non-NULL value of the group (its first in input order).
    AnyValue,
}

/// A bitwise fold.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum BitOp {
    /// `bit_and(x)`.
    And,
    /// `bit_or(x)`.
    Or,
    /// `bit_xor(x)`.
    Xor,
}

impl BitOp {
    /// `a` folded with `b`.
    pub fn apply(self, a: i64, b: i64) -> i64 {
        match self {
            BitOp::And => a & b,
            BitOp::Or => a | b,
            BitOp::Xor => a ^ b,
        }
    }
}

/// A statistic of a distribution's shape, DuckDB's definitions: each from the count and the
/// central moments `m2`, `m3`, `m4` (sums of the deviations' powers over the count).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum MomentStat {
    /// `skewness(x)`: the sample skewness, `sqrt(n (n - 1)) / (n - 2) * m3 / m2^1.5` (NULL
    /// under 3 values, NaN when they are all equal).
    Skewness,
    /// `kurtosis(x)`: the sample excess kurtosis, `(n - 1) ((n + 1) m4 / m2^2 - 3 (n - 1)) /
    /// ((n - 2) (n - 3))` (NULL under 4 values or when they are all equal).
    Kurtosis,
    /// `kurtosis_pop(x)`: the population excess kurtosis, `m4 / m2^2 - 3` (NULL when the
    /// values are all equal).
    KurtosisPop,
}

impl MomentStat {
    /// Every statistic, with its name.
    pub const ALL: [(MomentStat, &'static str); 3] = [
        (MomentStat::Skewness, "skewness"),
        (MomentStat::Kurtosis, "kurtosis"),
        (MomentStat::KurtosisPop, "kurtosis_pop"),
    ];

    /// Its SQL name.
    pub fn name(self) -> &'static str {
        MomentStat::ALL.iter().find(|(s, _)| *s == self).map_or("skewness", |&(_, n)| n)
    }
}

/// A statistic of the pairs `(y, x)` where both are non-NULL (PostgreSQL's and DuckDB's
/// aggregates of two variables; the dependent `y` first).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum PairStat {
    /// `covar_pop(y, x)`: the population covariance.
    CovarPop,
    /// `covar_samp(y, x)`: the sample covariance.
    CovarSamp,
    /// `corr(y, x)`: Pearson's correlation coefficient.
    Corr,
    /// `regr_slope(y, x)`: the least-squares line's slope (a beta).
    RegrSlope,
    /// `regr_intercept(y, x)`: the line's intercept.
    RegrIntercept,
    /// `regr_r2(y, x)`: the square of the correlation.
    RegrR2,
    /// `regr_count(y, x)`: the pairs.
    RegrCount,
    /// `regr_avgy(y, x)`: the mean of `y` over the pairs.
    RegrAvgY,
    /// `regr_avgx(y, x)`: the mean of `x` over the pairs.
    RegrAvgX,
    /// `regr_syy(y, x)`: the sum of squared deviations of `y`.
    RegrSyy,
    /// `regr_sxx(y, x)`: the sum of squared deviations of `x`.
    RegrSxx,
    /// `regr_sxy(y, x)`: the sum of the products of the deviations.
    RegrSxy,
}

impl PairStat {
    /// Every statistic, with its name.
    pub const ALL: [(PairStat, &'static str); 12] = [
        (PairStat::CovarPop, "covar_pop"),
        (PairStat::CovarSamp, "covar_samp"),
        (PairStat::Corr, "corr"),
        (PairStat::RegrSlope, "regr_slope"),
        (PairStat::RegrIntercept, "regr_intercept"),
        (PairStat::RegrR2, "regr_r2"),
        (PairStat::RegrCount, "regr_count"),
        (PairStat::RegrAvgY, "regr_avgy"),
        (PairStat::RegrAvgX, "regr_avgx"),
        (PairStat::RegrSyy, "regr_syy"),
        (PairStat::RegrSxx, "regr_sxx"),
        (PairStat::RegrSxy, "regr_sxy"),
    ];

    /// Its SQL name.
    pub fn name(self) -> &'static str {
        PairStat::ALL.iter().find(|(s, _)| *s == self).map_or("corr", |(_, n)| n)
    }
}

/// A bitwise operator on integers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum Bitwise {
    /// `&`.
    And,
    /// `|`.
    Or,
    /// `#` (PostgreSQL), `xor(a, b)` (DuckDB).
    Xor,
    /// `<<`.
    ShiftLeft,
    /// `>>` (arithmetic).
    ShiftRight,
}

impl Bitwise {
    /// `a op b`; a shift by a negative count or past the width gives 0 (or -1 for a negative
    /// `a` shifted right), never a panic.
    pub fn apply(self, a: i64, b: i64) -> i64 {
        let by = u32::try_from(b).ok().filter(|&n| n < 64);
        match self {
            Bitwise::And => a & b,
            Bitwise::Or => a | b,
            Bitwise::Xor => a ^ b,
            Bitwise::ShiftLeft => by.map_or(0, |n| a << n),
            Bitwise::ShiftRight => by.map_or(if a < 0 { -1 } else { 0 }, |n| a >> n),
        }
    }
}

/// The order `string_agg` and `array_agg` read a group's rows in, from an `ORDER BY k` inside
/// the call (the key is the call's order column); without one, the input's order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub struct AggOrder {
    /// `DESC`.
    pub desc: bool,
    /// NULL keys before the others (`NULLS FIRST`; the default is last, as in DuckDB).
    pub nulls_first: bool,
}

impl AggFunc {
    /// Whether partial results of this aggregate merge exactly (its accumulator has a partial
    /// state): what lets the planner aggregate row groups, partitions or nodes apart and merge.
    /// The holistic ones (median, quantiles, twap) need whole groups.
    pub fn mergeable(self) -> bool {
        !matches!(
            self,
            AggFunc::Median
                | AggFunc::Quantile(_)
                | AggFunc::PercentileCont(_)
                | AggFunc::Twap
                | AggFunc::StringAgg(_)
                | AggFunc::ArrayAgg(_)
        )
    }

    /// Whether the order rows arrive in cannot change the answer (beyond a float sum's last
    /// bits): an `ORDER BY` in the call is then accepted and has nothing to do.
    pub fn order_insensitive(self) -> bool {
        matches!(
            self,
            AggFunc::Count
                | AggFunc::CountStar
                | AggFunc::Sum
                | AggFunc::Avg
                | AggFunc::Min
                | AggFunc::Max
                | AggFunc::ArgMin
                | AggFunc::ArgMax
                | AggFunc::BoolAnd
                | AggFunc::BoolOr
                | AggFunc::Pair(_)
                | AggFunc::Moment(_)
                | AggFunc::Product
                | AggFunc::GeoMean
                | AggFunc::Bits(_)
        )
    }

    /// Whether the aggregate reads its rows in an order an `ORDER BY` in the call gives.
    pub fn ordered(self) -> bool {
        matches!(self, AggFunc::StringAgg(_) | AggFunc::ArrayAgg(_))
    }

    /// How many columns its partial state has (0 when it has none): the layout partial
    /// aggregates send and merges read. Every partial run checks its accumulator agrees.
    pub fn state_width(self) -> usize {
        match self {
            AggFunc::CountStar | AggFunc::Count | AggFunc::Min | AggFunc::Max | AggFunc::BoolAnd | AggFunc::BoolOr => 1,
            AggFunc::Sum
            | AggFunc::Avg
            | AggFunc::First
            | AggFunc::Last
            | AggFunc::ArgMin
            | AggFunc::ArgMax
            | AggFunc::Vwap => 2,
            AggFunc::StddevSamp | AggFunc::StddevPop | AggFunc::VarSamp | AggFunc::VarPop => 3,
            AggFunc::Pair(_) => 6,
            AggFunc::Moment(_) => 5,
            AggFunc::Product | AggFunc::GeoMean => 3,
            AggFunc::Bits(_) => 2,
            AggFunc::AnyValue => 1,
            AggFunc::Median
            | AggFunc::Quantile(_)
            | AggFunc::PercentileCont(_)
            | AggFunc::Twap
            | AggFunc::StringAgg(_)
            | AggFunc::ArrayAgg(_) => 0,
        }
    }
}

/// The aggregate named `name` (lower case; aliases included), if any. Quantiles start at 0.5 and
/// get their fraction from the call.
pub fn agg_by_name(name: &str) -> Option<AggFunc> {
    Some(match name {
        "count" | "count_distinct" | "approx_count_distinct" | "uniq" => AggFunc::Count,
        // DuckDB's count_if(c): a sum of the condition as 0/1 (HUGEINT; NULL with no row).
        "count_if" | "countif" => AggFunc::Sum,
        "sum" => AggFunc::Sum,
        "avg" | "mean" => AggFunc::Avg,
        "min" => AggFunc::Min,
        "max" => AggFunc::Max,
        "first" => AggFunc::First,
        "last" => AggFunc::Last,
        "arg_min" | "argmin" | "min_by" => AggFunc::ArgMin,
        "arg_max" | "argmax" | "max_by" => AggFunc::ArgMax,
        "stddev" | "stddev_samp" => AggFunc::StddevSamp,
        "stddev_pop" => AggFunc::StddevPop,
        "variance" | "var_samp" => AggFunc::VarSamp,
        "var_pop" => AggFunc::VarPop,
        "median" => AggFunc::Median,
        "quantile" | "quantile_disc" => AggFunc::Quantile(0.5),
        "percentile_cont" | "quantile_cont" => AggFunc::PercentileCont(0.5),
        "percentile_disc" => AggFunc::Quantile(0.5),
        "vwap" => AggFunc::Vwap,
        "twap" => AggFunc::Twap,
        "bool_and" | "every" => AggFunc::BoolAnd,
        "bool_or" => AggFunc::BoolOr,
        "string_agg" | "group_concat" | "listagg" => AggFunc::StringAgg(AggOrder::default()),
        "array_agg" => AggFunc::ArrayAgg(AggOrder::default()),
        "product" => AggFunc::Product,
        "geomean" | "geometric_mean" => AggFunc::GeoMean,
        "bit_and" => AggFunc::Bits(BitOp::And),
        "bit_or" => AggFunc::Bits(BitOp::Or),
        "bit_xor" => AggFunc::Bits(BitOp::Xor),
        "any_value" => AggFunc::AnyValue,
        _ => {
            let moment = MomentStat::ALL.iter().find(|(_, n)| *n == name).map(|&(s, _)| AggFunc::Moment(s));
            return moment.or_else(|| PairStat::ALL.iter().find(|(_, n)| *n == name).map(|&(s, _)| AggFunc::Pair(s)));
        }
    })
}

/// Whether `name` (lower case) is an aggregate function.
pub fn is_aggregate(name: &str) -> bool {
    agg_by_name(name).is_some()
}

/// Functions that exist only as window functions. Written without `OVER` they still are
/// window functions, over the kdb-style default window (see `plan::window`).
pub fn is_window_only(name: &str) -> bool {
    matches!(
        name,
        "row_number"
            | "rank"
            | "dense_rank"
            | "percent_rank"
            | "cume_dist"
            | "ntile"
            | "lag"
            | "lead"
            | "first_value"
            | "last_value"
            | "nth_value"
            | "ema"
            | "deltas"
            | "ratios"
            | "mavg"
            | "msum"
            | "mmin"
            | "mmax"
            | "mdev"
            | "mcount"
    )
}

/// Result type of an aggregate over arguments of the given types.
pub fn agg_type(f: AggFunc, args: &[DataType], pos: Pos) -> Result<DataType> {
    let bad = |what: &str| Err(SqlError::plan(what, Some(pos)));
    let a0 = args.first().copied().unwrap_or(DataType::Null);
    Ok(match f {
        AggFunc::CountStar | AggFunc::Count => DataType::Int64,
        AggFunc::Sum => match a0 {
            // PostgreSQL's types: a sum of BIGINT is exact past 2^63 (its numeric, DuckDB's HUGEINT).
            DataType::Int64 | DataType::Int128 => DataType::Int128,
            DataType::Int32 | DataType::Bool | DataType::Null => DataType::Int64,
            t if t.is_float() => DataType::Float64,
            DataType::Interval => DataType::Interval,
            t => return bad(&format!("sum() is not defined for {t}")),
        },
        AggFunc::Avg
        | AggFunc::StddevSamp
        | AggFunc::StddevPop
        | AggFunc::VarSamp
        | AggFunc::VarPop
        | AggFunc::Moment(_)
        | AggFunc::Product
        | AggFunc::GeoMean => {
            if !(a0.is_numeric() || a0 == DataType::Null) {
                return bad(&format!("{}() needs a numeric argument, got {a0}", agg_name(f)));
            }
            DataType::Float64
        }
        AggFunc::Median | AggFunc::PercentileCont(_) => match a0 {
            t if t.is_numeric() || t == DataType::Null => DataType::Float64,
            DataType::Timestamp => DataType::Timestamp,
            t => return bad(&format!("{}() needs a numeric argument, got {t}", agg_name(f))),
        },
        AggFunc::Min | AggFunc::Max | AggFunc::First | AggFunc::Last | AggFunc::Quantile(_) | AggFunc::AnyValue => a0,
        AggFunc::Bits(_) => match a0 {
            DataType::Int32 | DataType::Int64 => a0,
            DataType::Null => DataType::Int64,
            t => return bad(&format!("{}() needs an INTEGER or BIGINT argument, got {t}", agg_name(f))),
        },
        AggFunc::ArgMin | AggFunc::ArgMax => match args.get(1) {
            Some(DataType::Vector(_)) => {
                return bad(&format!("{}(x, v): v must be ordered, not a vector", agg_name(f)))
            }
            _ => a0,
        },
        AggFunc::BoolAnd | AggFunc::BoolOr => match a0 {
            DataType::Bool | DataType::Null => DataType::Bool,
            t => return bad(&format!("{}() needs a BOOLEAN argument, got {t}", agg_name(f))),
        },
        AggFunc::StringAgg(_) => match args.get(1) {
            None | Some(DataType::Varchar | DataType::Symbol | DataType::Null) => DataType::Varchar,
            Some(t) => return bad(&format!("string_agg(x, separator): the separator is text, got {t}")),
        },
        AggFunc::ArrayAgg(_) => DataType::Varchar,
        AggFunc::Twap => {
            let t = args.get(1).copied().unwrap_or(DataType::Timestamp);
            if !(a0.is_numeric() || a0 == DataType::Null) || !(t == DataType::Timestamp || t.is_integer()) {
                return bad("twap(x [, ts]) needs a numeric value and a timestamp");
            }
            DataType::Float64
        }
        AggFunc::Vwap => {
            if args.len() != 2 || !args.iter().all(|t| t.is_numeric() || *t == DataType::Null) {
                return bad("vwap(price, size) needs two numeric arguments");
            }
            DataType::Float64
        }
        AggFunc::Pair(s) => {
            if args.len() != 2 || !args.iter().all(|t| t.is_numeric() || *t == DataType::Null) {
                return bad(&format!("{}(y, x) needs two numeric arguments", s.name()));
            }
            if s == PairStat::RegrCount {
                DataType::Int64
            } else {
                DataType::Float64
            }
        }
    })
}

/// The canonical name of an aggregate (`count_star` for `count(*)`).
pub fn agg_name(f: AggFunc) -> &'static str {
    match f {
        AggFunc::CountStar => "count_star",
        AggFunc::Count => "count",
        AggFunc::Sum => "sum",
        AggFunc::Avg => "avg",
        AggFunc::Min => "min",
        AggFunc::Max => "max",
        AggFunc::First => "first",
        AggFunc::Last => "last",
        AggFunc::ArgMin => "arg_min",
        AggFunc::ArgMax => "arg_max",
        AggFunc::StddevSamp => "stddev_samp",
        AggFunc::StddevPop => "stddev_pop",
        AggFunc::VarSamp => "var_samp",
        AggFunc::VarPop => "var_pop",
        AggFunc::Median => "median",
        AggFunc::Quantile(_) => "quantile",
        AggFunc::PercentileCont(_) => "percentile_cont",
        AggFunc::Vwap => "vwap",
        AggFunc::Twap => "twap",
        AggFunc::BoolAnd => "bool_and",
        AggFunc::BoolOr => "bool_or",
        AggFunc::StringAgg(_) => "string_agg",
        AggFunc::ArrayAgg(_) => "array_agg",
        AggFunc::Pair(s) => s.name(),
        AggFunc::Moment(s) => s.name(),
        AggFunc::Product => "product",
        AggFunc::GeoMean => "geomean",
        AggFunc::Bits(BitOp::And) => "bit_and",
        AggFunc::Bits(BitOp::Or) => "bit_or",
        AggFunc::Bits(BitOp::Xor) => "bit_xor",
        AggFunc::AnyValue => "any_value",
    }
}

/// Number of arguments an aggregate takes (min, max).
pub fn agg_arity(f: AggFunc) -> (usize, usize) {
    match f {
        AggFunc::CountStar => (0, 0),
        AggFunc::Vwap | AggFunc::ArgMin | AggFunc::ArgMax | AggFunc::Pair(_) => (2, 2),
        AggFunc::Twap => (1, 2),
        AggFunc::Quantile(_) => (2, 2),
        AggFunc::StringAgg(_) => (1, 2),
        _ => (1, 1),
    }
}

/// The scalar function named `name` (lower case; aliases included), if any.
pub fn scalar_by_name(name: &str) -> Option<ScalarFunc> {
    Some(match name {
        "lower" | "lcase" => ScalarFunc::Lower,
        "upper" | "ucase" => ScalarFunc::Upper,
        "length" | "len" | "char_length" | "character_length" | "strlen" => ScalarFunc::Length,
        "substr" | "substring" => ScalarFunc::Substr,
        "concat" => ScalarFunc::Concat,
        "trim" => ScalarFunc::Trim,
        "ltrim" => ScalarFunc::LTrim,
        "rtrim" => ScalarFunc::RTrim,
        "replace" => ScalarFunc::Replace,
        "starts_with" | "prefix" => ScalarFunc::StartsWith,
        "regexp_matches" => ScalarFunc::RegexpMatches,
        "like_escape" => ScalarFunc::LikeEscape,
        "abs" => ScalarFunc::Abs,
        "round" => ScalarFunc::Round,
        "floor" => ScalarFunc::Floor,
        "ceil" | "ceiling" => ScalarFunc::Ceil,
        "sqrt" => ScalarFunc::Sqrt,
        "ln" => ScalarFunc::Ln,
        "log10" | "log" => ScalarFunc::Log10,
        "exp" => ScalarFunc::Exp,
        "power" | "pow" => ScalarFunc::Power,
        "bit_and_op" => ScalarFunc::Bitwise(Bitwise::And),
        "bit_or_op" => ScalarFunc::Bitwise(Bitwise::Or),
        "xor" | "bit_xor_op" => ScalarFunc::Bitwise(Bitwise::Xor),
        "shift_left_op" => ScalarFunc::Bitwise(Bitwise::ShiftLeft),
        "shift_right_op" => ScalarFunc::Bitwise(Bitwise::ShiftRight),
        "sign" => ScalarFunc::Sign,
        "coalesce" | "ifnull" => ScalarFunc::Coalesce,
        "nullif" => ScalarFunc::NullIf,
        "greatest" => ScalarFunc::Greatest,
        "least" => ScalarFunc::Least,
        "date_trunc" | "datetrunc" => ScalarFunc::DateTrunc,
        "date_part" | "datepart" => ScalarFunc::DatePart,
        "epoch_ns" => ScalarFunc::EpochNs,
        "epoch" => ScalarFunc::Epoch,
        "now" | "current_timestamp" => ScalarFunc::Now,
        "xbar" | "time_bucket" => ScalarFunc::Xbar,
        "month_bucket" => ScalarFunc::MonthBucket,
        "array_cosine_similarity" => ScalarFunc::ArrayDistance(Metric::CosineSimilarity),
        "array_cosine_distance" => ScalarFunc::ArrayDistance(Metric::CosineDistance),
        "array_distance" => ScalarFunc::ArrayDistance(Metric::L2),
        "array_inner_product" | "array_dot_product" => ScalarFunc::ArrayDistance(Metric::InnerProduct),
        "array_negative_inner_product" | "array_negative_dot_product" => {
            ScalarFunc::ArrayDistance(Metric::NegativeInnerProduct)
        }
        "array_length" => ScalarFunc::ArrayLength,
        "kafka_partition" => ScalarFunc::KafkaPartition,
        "pg_size_pretty" => ScalarFunc::SizePretty,
        "array_to_string" => ScalarFunc::ArrayToString,
        "array_subscript" => ScalarFunc::ArraySubscript,
        "array_value" => ScalarFunc::ArrayValue,
        "string_to_array" => ScalarFunc::StringToArray,
        "parse_ident" => ScalarFunc::ParseIdent,
        "quote_ident" => ScalarFunc::QuoteIdent,
        "array_upper" => ScalarFunc::ArrayBound { upper: true, dim: true },
        "array_lower" => ScalarFunc::ArrayBound { upper: false, dim: true },
        "cardinality" => ScalarFunc::ArrayBound { upper: true, dim: false },
        "array_cat" => ScalarFunc::ArrayCat,
        "json_build_object" | "jsonb_build_object" => ScalarFunc::JsonBuildObject,
        "json_build_array" | "jsonb_build_array" => ScalarFunc::JsonBuildArray,
        "dateadd" => ScalarFunc::DateAdd,
        "datediff" => ScalarFunc::DateDiff,
        "timestamp_floor" => ScalarFunc::TimestampFloor,
        "timestamp_ceil" => ScalarFunc::TimestampCeil,
        "to_timestamp" => ScalarFunc::ToTimestamp,
        "to_timezone" => ScalarFunc::ToTimezone,
        "to_utc" => ScalarFunc::ToUtc,
        "systimestamp" | "sysdate" => ScalarFunc::Now,
        _ => return None,
    })
}

/// The families scalar functions are bound and evaluated by (one function per family in the
/// binder and one in the evaluator).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Family {
    /// Strings in (`lower`, `substr`, `concat`, ...).
    String,
    /// Numbers in (`abs`, `round`, `sqrt`, `power`, ...).
    Math,
    /// Any type in, chosen among (`coalesce`, `greatest`, `least`, `nullif`).
    Conditional,
    /// Times and dates (`date_trunc`, `date_part`, `epoch`, `now`, `xbar`, ...).
    Temporal,
    /// `FLOAT[n]` vectors in (`array_distance`, `array_cosine_similarity`, ...).
    Vector,
    /// Any values in, JSON text out (`json_build_object`, `json_build_array`).
    Json,
    /// PostgreSQL arrays in (`array_to_string`, `a[i]`, `x = ANY (a)`, `ARRAY[...]`, ...).
    Array,
    /// QuestDB's calendar units and patterns (`dateadd`, `datediff`, `timestamp_floor`,
    /// `timestamp_ceil`, `to_timestamp`).
    Calendar,
}

impl ScalarFunc {
    /// The family that binds and evaluates this function.
    pub fn family(self) -> Family {
        use ScalarFunc as F;
        match self {
            F::ArrayToString
            | F::ArraySubscript
            | F::ArrayValue
            | F::ArrayCat
            | F::Quantified { .. }
            | F::ArrayBound { .. }
            | F::StringToArray
            | F::ParseIdent
            | F::QuoteIdent => Family::Array,
            F::Lower
            | F::Upper
            | F::Trim
            | F::LTrim
            | F::RTrim
            | F::Replace
            | F::StartsWith
            | F::RegexpMatches
            | F::LikeEscape
            | F::KafkaPartition
            | F::SizePretty
            | F::Length
            | F::Concat
            | F::Substr => Family::String,
            F::Abs
            | F::Floor
            | F::Ceil
            | F::Sign
            | F::Round
            | F::Sqrt
            | F::Ln
            | F::Log10
            | F::Exp
            | F::Power
            | F::Bitwise(_) => Family::Math,
            F::Coalesce | F::Greatest | F::Least | F::NullIf => Family::Conditional,
            F::DateTrunc | F::DatePart | F::EpochNs | F::MonthBucket | F::Epoch | F::Now | F::Xbar => Family::Temporal,
            F::ArrayDistance(_) | F::ArrayLength => Family::Vector,
            F::JsonBuildObject | F::JsonBuildArray => Family::Json,
            F::DateAdd
            | F::DateDiff
            | F::TimestampFloor
            | F::TimestampCeil
            | F::ToTimestamp
            | F::ToTimezone
            | F::ToUtc => Family::Calendar,
        }
    }
}

/// Arity bounds of a scalar function.
pub fn scalar_arity(f: ScalarFunc) -> (usize, usize) {
    use ScalarFunc::*;
    match f {
        Now => (0, 0),
        Lower | Upper | Length | Abs | Floor | Ceil | Sqrt | Ln | Log10 | Exp | Sign | EpochNs | Epoch
        | ArrayLength | SizePretty => (1, 1),
        ArrayDistance(_) | ArraySubscript | Bitwise(_) | ArrayCat => (2, 2),
        ArrayValue => (0, usize::MAX),
        StringToArray => (2, 3),
        ParseIdent => (1, 2),
        QuoteIdent => (1, 1),
        Quantified { .. } | ArrayBound { dim: true, .. } => (2, 2),
        ArrayBound { dim: false, .. } => (1, 1),
        ArrayToString => (2, 3),
        Trim | LTrim | RTrim => (1, 2),
        RegexpMatches => (2, 3),
        Round => (1, 2),
        Substr => (2, 3),
        Replace => (3, 3),
        StartsWith | Power | NullIf | DateTrunc | DatePart | Xbar | MonthBucket | KafkaPartition | LikeEscape => (2, 2),
        Concat | Coalesce | Greatest | Least => (1, usize::MAX),
        JsonBuildObject | JsonBuildArray => (0, usize::MAX),
        DateAdd | DateDiff => (3, 3),
        TimestampFloor | TimestampCeil | ToTimezone | ToUtc => (2, 2),
        ToTimestamp => (1, 2),
    }
}
