//! `--huge-pages reserved`: the server maps its large blocks (32 MiB and up) on the host's
//! reserved huge page pool when it has free pages, and falls back to the allocator, counted on
//! `/metrics`, when it has none; the answers are the same either way. Run here with and
//! without pages reserved (as root: `echo 64 > /sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages`).

mod common;

use common::*;

/// The number a sysfs file holds, if there is one.
fn number(path: &str) -> Option<u64> {
    std::fs::read_to_string(path).ok()?.trim().parse().ok()
}

#[test]
fn large_blocks_go_on_reserved_huge_pages_or_fall_back_counted() {
    let pool = zepto_storage::hugetlb::POOL_DIR;
    let reserved = number(&format!("{pool}/nr_hugepages"));
    let free = number(&format!("{pool}/free_hugepages")).unwrap_or(0);
    let s = Server::start(&["--huge-pages", "reserved"]);
    if reserved == Some(0) {
        assert!(s.startup.iter().any(|l| l.contains("no 2 MiB huge pages are reserved")), "{:?}", s.startup);
    }
    // A table of one partition of 6M rows: its columns grow past 32 MiB (moved onto the pool
    // as they do), and a query over it allocates columns that large at once.
    sql(&s.addr, "CREATE TABLE t (x BIGINT, y DOUBLE)");
    let r = post(&s.addr, "/", "INSERT INTO t SELECT x, x * 0.5 FROM range(6000000) r(x)");
    assert_eq!(r.status, 200, "{}", r.text());
    let got = sql(&s.addr, "SELECT count(*), sum(x), sum(y) FROM t WHERE x % 7 = 0")["data"][0].clone();
    let n = 6_000_000u64.div_ceil(7);
    let sum = 7 * (n - 1) * n / 2;
    assert_eq!(got[0].as_u64(), Some(n));
    assert_eq!(got[1].as_u64(), Some(sum));
    assert_eq!(got[2].as_f64(), Some(sum as f64 * 0.5));
    let (blocks, fallbacks) =
        (metric(&s.addr, "zepto_huge_pages_reserved_blocks"), metric(&s.addr, "zepto_huge_pages_reserved_fallbacks"));
    let m = get(&s.addr, "/metrics").text();
    assert!(blocks + fallbacks >= 2, "every large block is counted one way or the other: {m}");
    if free >= 64 {
        assert!(blocks >= 1 && metric(&s.addr, "zepto_huge_pages_reserved_bytes") > 0, "{free} free pages: {m}");
    }
    if free == 0 {
        assert_eq!(blocks, 0, "{m}");
    }
    sql(&s.addr, "DROP TABLE t");
    assert!(s.stop().success(), "SIGTERM ends the server cleanly");
}
