//! The default mapping: W, X and 8 messages become rows of quotes, trades and executions,
//! stored with the session's sequence numbers as one batch; a bad message adds nothing.

use zepto_fix::map::{last_state, Batch, SessionState, TableNames};
use zepto_fix::parse::parse;
use zepto_storage::{Catalog, Table, Value};

fn fix(body: &str) -> Vec<u8> {
    let body = body.replace('|', "\x01");
    let mut m = format!("8=FIX.4.4\x019={}\x01{body}", body.len()).into_bytes();
    let sum = m.iter().fold(0u8, |s, &b| s.wrapping_add(b));
    m.extend_from_slice(format!("10={sum:03}\x01").as_bytes());
    m
}

/// Every row of a table as text, `|`-separated, sorted.
fn rows(t: &Table) -> Vec<String> {
    let mut out = Vec::new();
    for p in t.partitions() {
        for i in 0..p.len() {
            let r: Vec<String> = p
                .columns()
                .iter()
                .map(|c| match c.get(i) {
                    Value::Str(s) => s,
                    v => v.to_string(),
                })
                .collect();
            out.push(r.join("|"));
        }
    }
    out.sort();
    out
}

#[test]
fn market_data_and_executions_become_rows() {
    let catalog = Catalog::new();
    let mut batch = Batch::default();
    let w = fix("35=W|49=FEED|56=ZEPTO|34=12|52=20240102-09:30:00.5|262=r1|55=EURUSD|268=3|\
                 269=0|270=1.25|271=100|273=09:30:00.25|269=1|270=1.5|271=200|269=2|270=1.375|271=50|272=20240101|273=00:00:01|");
    let x = fix("35=X|49=FEED|56=ZEPTO|34=13|52=20240102-09:30:01|268=2|279=0|269=0|55=GBPUSD|270=2|271=7|\
                 279=2|269=4|55=GBPUSD|270=9|");
    let e = fix("35=8|49=FEED|56=ZEPTO|34=14|52=20240102-09:30:02|11=C1|37=O1|17=E1|150=F|39=2|55=IBM|54=2|\
                 31=101.5|32=100|14=100|6=101.5|60=20240102-09:30:01.999|");
    assert_eq!(batch.add(&parse(&w).expect("W")).expect("W maps"), 3);
    assert_eq!(batch.add(&parse(&x).expect("X")).expect("X maps"), 1, "entry type 4 is skipped");
    assert_eq!(batch.add(&parse(&e).expect("8")).expect("8 maps"), 1);
    // A bad price in the second entry: nothing of the message is added.
    let bad =
        fix("35=X|49=FEED|56=ZEPTO|34=15|52=20240102-09:30:03|268=2|279=0|269=0|55=A|270=1|279=0|269=1|55=A|270=x|");
    let err = batch.add(&parse(&bad).expect("frame")).expect_err("bad price");
    assert_eq!(err.to_string(), "byte 111, tag 270: not a number");
    let no_sym = fix("35=8|49=FEED|56=ZEPTO|34=16|52=20240102-09:30:03|37=O|17=E|150=0|39=0|54=1|");
    assert!(batch.add(&parse(&no_sym).expect("frame")).expect_err("no 55").to_string().contains("tag 55"));
    assert_eq!(batch.rows(), 5);
    let state = SessionState { name: "ZEPTO-FEED".into(), in_seq: 16, out_seq: 3, at: 1 };
    assert_eq!(batch.apply(&catalog, Some(&state)).expect("apply"), 5);
    assert_eq!(batch.rows(), 0);
    let q = catalog.snapshot("quotes").expect("quotes");
    assert_eq!(
        rows(&q),
        [
            "EURUSD|2024-01-02 09:30:00.250000000|bid|1.25|100.0|NULL|2024-01-02 09:30:00.500000000|r1|12",
            "EURUSD|2024-01-02 09:30:00.500000000|offer|1.5|200.0|NULL|2024-01-02 09:30:00.500000000|r1|12",
            "GBPUSD|2024-01-02 09:30:01.000000000|bid|2.0|7.0|new|2024-01-02 09:30:01.000000000|NULL|13",
        ]
    );
    let t = catalog.snapshot("trades").expect("trades");
    assert_eq!(
        rows(&t),
        ["EURUSD|2024-01-01 00:00:01.000000000|NULL|1.375|50.0|NULL|2024-01-02 09:30:00.500000000|r1|12"]
    );
    let x = catalog.snapshot("executions").expect("executions");
    assert_eq!(
        rows(&x),
        ["IBM|2024-01-02 09:30:01.999000000|C1|O1|E1|F|2|sell|101.5|100.0|100.0|101.5|2024-01-02 09:30:02.000000000|14"]
    );
    assert_eq!(q.ts_col(), Some(1));
    assert_eq!(q.key_col(), Some(0));
    let names = TableNames::default();
    assert_eq!(last_state(&catalog, &names, "ZEPTO-FEED"), Some(state));
    assert_eq!(last_state(&catalog, &names, "OTHER"), None);
    // A table of the same name with other columns: the batch is refused whole.
    let mut b2 = Batch::new(TableNames { trades: "t2".into(), ..TableNames::default() });
    catalog
        .create(
            Table::new(
                "t2",
                zepto_storage::Schema {
                    columns: vec![zepto_storage::ColumnDef {
                        name: "x".into(),
                        data_type: zepto_storage::DataType::Int64,
                    }],
                },
                &Default::default(),
            )
            .expect("t2"),
            false,
        )
        .expect("create");
    b2.add(&parse(&w).expect("W")).expect("maps");
    assert!(b2.apply(&catalog, None).expect_err("schema").to_string().contains("other columns"));
    assert_eq!(rows(&catalog.snapshot("quotes").expect("quotes")).len(), 3, "no quote of the refused batch");
}

#[test]
fn tables_and_columns_can_be_renamed() {
    let catalog = Catalog::new();
    let names = TableNames {
        quotes: "fx_quotes".into(),
        sessions: "fix_state".into(),
        columns: vec![("sym".into(), "symbol".into()), ("timestamp".into(), "ts".into())],
        ..TableNames::default()
    };
    names.check().expect("good renames");
    let mut batch = Batch::new(names.clone());
    let x = fix("35=X|49=FEED|56=ZEPTO|34=2|52=20240102-09:30:01|268=1|279=0|269=0|55=GBPUSD|270=2|271=7|");
    assert_eq!(batch.add(&parse(&x).expect("X")).expect("X maps"), 1);
    let state = SessionState { name: "ZEPTO-FEED".into(), in_seq: 2, out_seq: 1, at: 5 };
    assert_eq!(batch.apply(&catalog, Some(&state)).expect("apply"), 1);
    let q = catalog.snapshot("fx_quotes").expect("renamed table");
    assert_eq!(q.schema().columns[0].name, "symbol");
    assert_eq!(q.key_col(), Some(0), "the renamed symbol is the partition key");
    assert_eq!(q.ts_col().map(|c| q.schema().columns[c].name.as_str()), Some("ts"));
    assert!(!catalog.exists("quotes"));
    assert_eq!(last_state(&catalog, &names, "ZEPTO-FEED").map(|s| s.in_seq), Some(2));

    for bad in [
        TableNames { columns: vec![("nope".into(), "x".into())], ..TableNames::default() },
        TableNames { columns: vec![("price".into(), "size".into())], ..TableNames::default() },
        TableNames { trades: "QUOTES".into(), ..TableNames::default() },
        TableNames { columns: vec![("sym".into(), String::new())], ..TableNames::default() },
    ] {
        assert!(bad.check().is_err(), "{bad:?}");
    }
}

#[test]
fn tags_added_as_columns_are_read_from_the_entry_else_the_message() {
    use zepto_fix::extra::{ExtraTag, Role};
    use zepto_storage::DataType;
    let tag = |role, tag, column: &str, data_type| ExtraTag { role, tag, column: column.into(), data_type };
    let names = TableNames {
        tags: vec![
            tag(Role::Quotes, 276, "quote_condition", DataType::Symbol),
            tag(Role::Quotes, 336, "session_id", DataType::Varchar),
            tag(Role::Trades, 346, "orders", DataType::Int64),
            tag(Role::Executions, 1, "account", DataType::Varchar),
            tag(Role::Executions, 60, "transact_time", DataType::Timestamp),
            tag(Role::Executions, 1057, "aggressor", DataType::Bool),
        ],
        ..TableNames::default()
    };
    names.check().expect("valid tags");
    let catalog = Catalog::new();
    let mut batch = Batch::new(names.clone());
    // 336 at message level applies to every entry; 276 is the entry's own; 346 is a trade's.
    let w = fix("35=W|49=FEED|56=ZEPTO|34=2|52=20240102-09:30:00|336=DAY|55=EURUSD|268=3|\
                 269=0|270=1.25|276=A|269=1|270=1.5|269=2|270=1.375|346=7|");
    let e = fix("35=8|49=FEED|56=ZEPTO|34=3|52=20240102-09:30:02|1=ACC1|37=O1|17=E1|150=F|39=2|55=IBM|54=1|\
                 60=20240102-09:30:01.5|1057=Y|");
    assert_eq!(batch.add(&parse(&w).expect("W")).expect("W maps"), 3);
    assert_eq!(batch.add(&parse(&e).expect("8")).expect("8 maps"), 1);
    // A value of the wrong type rejects the whole message.
    let bad = fix("35=W|49=FEED|56=ZEPTO|34=4|52=20240102-09:30:00|55=X|268=2|269=2|270=1|346=7|269=2|270=2|346=x|");
    let err = batch.add(&parse(&bad).expect("frame")).expect_err("bad 346");
    assert!(err.to_string().contains("tag 346: not an integer"), "{err}");
    assert_eq!(batch.rows(), 4);
    batch.apply(&catalog, None).expect("apply");
    let q = catalog.snapshot("quotes").expect("quotes");
    let cols: Vec<&str> = q.schema().columns.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(cols[9..], ["quote_condition", "session_id"]);
    let quotes = rows(&q);
    assert!(quotes[0].ends_with("|A|DAY") && quotes[1].ends_with("|NULL|DAY"), "{quotes:?}");
    let trades = rows(&catalog.snapshot("trades").expect("trades"));
    assert!(trades.len() == 1 && trades[0].ends_with("|7"), "{trades:?}");
    let ex = rows(&catalog.snapshot("executions").expect("executions"));
    assert!(ex[0].ends_with("|ACC1|2024-01-02 09:30:01.500000000|true"), "{ex:?}");

    // A table made before a tag was added gains its column; the earlier rows read NULL.
    let more = TableNames {
        tags: [names.tags.clone(), vec![tag(Role::Trades, 277, "cond", DataType::Symbol)]].concat(),
        ..names
    };
    let mut batch = Batch::new(more);
    let w = fix("35=W|49=FEED|56=ZEPTO|34=5|52=20240102-09:30:05|55=EURUSD|268=1|269=2|270=2|277=X|");
    batch.add(&parse(&w).expect("W")).expect("maps");
    batch.apply(&catalog, None).expect("apply");
    let trades = rows(&catalog.snapshot("trades").expect("trades"));
    assert_eq!(trades.len(), 2);
    assert!(
        trades.iter().any(|r| r.ends_with("|NULL|X")) && trades.iter().any(|r| r.ends_with("|7|NULL")),
        "{trades:?}"
    );
}

#[test]
fn added_tags_are_checked() {
    use zepto_fix::extra::{ExtraTag, Role};
    use zepto_storage::DataType;
    let with = |column: &str, data_type| TableNames {
        tags: vec![ExtraTag { role: Role::Quotes, tag: 276, column: column.into(), data_type }],
        ..TableNames::default()
    };
    assert!(with("cond", DataType::Symbol).check().is_ok());
    assert!(with("price", DataType::Symbol).check().expect_err("clash").contains("'price'"));
    assert!(with("cond", DataType::Date).check().expect_err("type").contains("a type of"));
    assert!(with("", DataType::Symbol).check().is_err());
}
