//! PostgreSQL's types as `pg_type` lists them: the ones ZeptoDB's columns are sent as, and the
//! ones drivers look up by OID or name when they start (psycopg's and pgjdbc's type lookups,
//! SQLAlchemy's reflection). Each with its PostgreSQL OID, size and category, and its array
//! type; what a ZeptoDB column type is called here is [`super::pg_names`]'s `udt_name`.

use zepto_storage::DataType;

/// One base type: (name, OID, length (-1: variable), passed by value, category, array OID).
type Base = (&'static str, i32, i32, bool, &'static str, i32);

/// The base types, as PostgreSQL 16 defines them.
const BASES: &[Base] = &[
    ("bool", 16, 1, true, "B", 1000),
    ("bytea", 17, -1, false, "U", 1001),
    ("char", 18, 1, true, "Z", 1002),
    ("name", 19, 64, false, "S", 1003),
    ("int8", 20, 8, true, "N", 1016),
    ("int2", 21, 2, true, "N", 1005),
    ("int4", 23, 4, true, "N", 1007),
    ("regproc", 24, 4, true, "N", 1008),
    ("text", 25, -1, false, "S", 1009),
    ("oid", 26, 4, true, "N", 1028),
    ("json", 114, -1, false, "U", 199),
    ("float4", 700, 4, true, "N", 1021),
    ("float8", 701, 8, true, "N", 1022),
    ("unknown", 705, -2, false, "X", 0),
    ("bpchar", 1042, -1, false, "S", 1014),
    ("varchar", 1043, -1, false, "S", 1015),
    ("date", 1082, 4, true, "D", 1182),
    ("time", 1083, 8, true, "D", 1183),
    ("timestamp", 1114, 8, true, "D", 1115),
    ("timestamptz", 1184, 8, true, "D", 1185),
    ("interval", 1186, 16, false, "T", 1187),
    ("numeric", 1700, -1, false, "N", 1231),
    ("regclass", 2205, 4, true, "N", 2210),
    ("regtype", 2206, 4, true, "N", 2211),
    ("uuid", 2950, 16, false, "U", 2951),
    ("jsonb", 3802, -1, false, "U", 3807),
];

/// The preferred type of its category (what PostgreSQL resolves an unknown literal to).
const PREFERRED: &[&str] = &["bool", "text", "oid", "float8", "timestamptz", "interval"];

/// A type as one row of `pg_type`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PgType {
    /// `typname`.
    pub name: String,
    /// `oid`.
    pub oid: i32,
    /// `typlen`.
    pub len: i32,
    /// `typbyval`.
    pub by_value: bool,
    /// `typcategory` (`A` for arrays).
    pub category: &'static str,
    /// `typispreferred`.
    pub preferred: bool,
    /// `typelem`: an array's element type, else 0.
    pub element: i32,
    /// `typarray`: the type's array type, else 0.
    pub array: i32,
    /// `typinput`: the input function (the others are named after it).
    pub input: String,
}

/// Every type: each base type, then each array type.
pub fn all() -> Vec<PgType> {
    let bases = BASES.iter().map(|&(name, oid, len, by_value, category, array)| PgType {
        name: name.to_string(),
        oid,
        len,
        by_value,
        category,
        preferred: PREFERRED.contains(&name),
        element: 0,
        array,
        input: input_function(name),
    });
    let arrays = BASES.iter().filter(|b| b.5 != 0).map(|&(name, oid, _, _, _, array)| PgType {
        name: format!("_{name}"),
        oid: array,
        len: -1,
        by_value: false,
        category: "A",
        preferred: false,
        element: oid,
        array: 0,
        input: "array_in".to_string(),
    });
    bases.chain(arrays).collect()
}

/// The input function PostgreSQL names for base type `name` (`int8in`, `timestamp_in`).
fn input_function(name: &str) -> String {
    let underscored = ["date", "time", "timestamp", "timestamptz", "interval", "numeric", "uuid", "json", "jsonb"];
    if underscored.contains(&name) {
        format!("{name}_in")
    } else {
        format!("{name}in")
    }
}

/// The OID of the type a column of `dt` is sent as.
pub fn oid_of(dt: DataType) -> i32 {
    let name = super::pg_names(dt).udt_name;
    let base = BASES.iter().find(|b| b.0 == name).map(|b| b.1);
    base.or_else(|| BASES.iter().find(|b| format!("_{}", b.0) == name).map(|b| b.5)).unwrap_or(0)
}

/// The type with OID `oid`, as `format_type` names it (`double precision`, `real[]`), or
/// `None` for an OID that is no type here.
pub fn format_type(oid: i32) -> Option<String> {
    let t = all().into_iter().find(|t| t.oid == oid)?;
    let sql = |name: &str| match name {
        "bool" => "boolean".to_string(),
        "int2" => "smallint".to_string(),
        "int4" => "integer".to_string(),
        "int8" => "bigint".to_string(),
        "float4" => "real".to_string(),
        "float8" => "double precision".to_string(),
        "varchar" => "character varying".to_string(),
        "bpchar" => "character".to_string(),
        "timestamp" => "timestamp without time zone".to_string(),
        "timestamptz" => "timestamp with time zone".to_string(),
        "time" => "time without time zone".to_string(),
        "char" => "\"char\"".to_string(),
        other => other.to_string(),
    };
    match t.name.strip_prefix('_') {
        Some(element) if t.category == "A" => Some(format!("{}[]", sql(element))),
        _ => Some(sql(&t.name)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_column_type_is_listed_under_the_name_the_door_sends() {
        for dt in [
            DataType::Bool,
            DataType::Int32,
            DataType::Int64,
            DataType::Float32,
            DataType::Float64,
            DataType::Timestamp,
            DataType::Date,
            DataType::Interval,
            DataType::Vector(3),
            DataType::Varchar,
            DataType::Symbol,
        ] {
            let oid = oid_of(dt);
            assert_ne!(oid, 0, "{dt:?}");
            assert_eq!(format_type(oid).as_deref(), Some(super::super::pg_names(dt).format), "{dt:?}");
        }
        let types = all();
        let mut oids: Vec<i32> = types.iter().map(|t| t.oid).collect();
        oids.sort_unstable();
        oids.dedup();
        assert_eq!(oids.len(), types.len(), "one row per OID");
        assert_eq!(oid_of(DataType::Vector(4)), 1021, "float4[] as pgwire sends it");
        assert_eq!(format_type(1114).as_deref(), Some("timestamp without time zone"));
        assert_eq!(format_type(99_999), None);
    }
}
