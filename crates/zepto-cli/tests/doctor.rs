//! `zeptodb doctor` over kernel settings written into a tree of its own (`--root`): each
//! setting a tuning checklist flags is reported as a warning with its advice and makes the
//! exit status 1, and a tree with every setting as recommended passes with 0.

use std::path::Path;
use std::process::Command;

/// Write `files` (absolute host paths and contents) under `root`.
fn tree(root: &Path, files: &[(&str, &str)]) {
    for (path, text) in files {
        let p = root.join(path.trim_start_matches('/'));
        std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
        std::fs::write(p, text).expect("write");
    }
}

fn doctor(root: &Path, data: &Path) -> (i32, serde_json::Value) {
    let out = Command::new(env!("CARGO_BIN_EXE_zeptodb"))
        .args(["doctor", "--format", "json", "--root"])
        .arg(root)
        .arg("--data-dir")
        .arg(data)
        .output()
        .expect("run zeptodb doctor");
    let v =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)));
    (out.status.code().expect("exit code"), v)
}

fn status<'a>(v: &'a serde_json::Value, check: &str) -> (&'a str, &'a str) {
    let c = v["checks"]
        .as_array()
        .expect("checks")
        .iter()
        .find(|c| c["check"] == check)
        .unwrap_or_else(|| panic!("no check {check} in {v}"));
    (c["status"].as_str().expect("status"), c["advice"].as_str().expect("advice"))
}

/// A host's settings: THP mode, cpu0's governor, swappiness, overcommit, the nofile soft
/// limit, NUMA balancing (over two nodes), the clock source, the data mount's file system.
fn host(root: &Path, settings: [&str; 8]) {
    let [thp, gov, swap, overcommit, nofile, numa, clock, fs] = settings;
    tree(
        root,
        &[
            ("/sys/kernel/mm/transparent_hugepage/enabled", thp),
            ("/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages", "0"),
            ("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor", gov),
            ("/sys/devices/system/cpu/cpu1/cpufreq/scaling_governor", "performance"),
            ("/proc/sys/vm/swappiness", swap),
            ("/proc/sys/vm/overcommit_memory", overcommit),
            (
                "/proc/self/limits",
                &format!("Limit  Soft Limit  Hard Limit  Units\nMax open files  {nofile}  1048576  files\n"),
            ),
            ("/proc/sys/kernel/numa_balancing", numa),
            ("/sys/devices/system/node/node0/cpulist", "0"),
            ("/sys/devices/system/node/node1/cpulist", "1"),
            ("/sys/devices/system/cpu/isolated", "1"),
            ("/proc/cmdline", "BOOT_IMAGE=/vmlinuz isolcpus=1 nohz_full=1"),
            ("/sys/devices/system/clocksource/clocksource0/current_clocksource", clock),
            ("/proc/mounts", &format!("/dev/vda1 / ext4 rw 0 0\nsrv:/x /mnt/data {fs} rw 0 0\n")),
        ],
    );
}

#[test]
fn each_setting_off_the_checklist_is_a_warning_with_its_advice() {
    let root = tempdir("bad");
    host(&root, ["[always] madvise never", "powersave", "60", "2", "1024", "1", "hpet", "nfs4"]);
    let (code, v) = doctor(&root, Path::new("/mnt/data/zepto"));
    assert_eq!(code, 1, "{v}");
    assert_eq!(v["ok"], false);
    for (check, says) in [
        ("transparent huge pages", "madvise"),
        ("CPU frequency governor", "performance"),
        ("vm.swappiness", "swappiness=1"),
        ("vm.overcommit_memory", "overcommit_memory=0"),
        ("open files (nofile)", "65536"),
        ("NUMA balancing", "numa_balancing=0"),
        ("clock source", "tsc"),
        ("data directory file system", "local disk"),
    ] {
        let (s, advice) = status(&v, check);
        assert_eq!(s, "warn", "{check}: {v}");
        assert!(advice.contains(says), "{check}: {advice}");
    }
    assert_eq!(status(&v, "isolated cores").0, "ok");
    // THP off entirely: the server's huge page advice would be ignored.
    host(&root, ["always madvise [never]", "performance", "1", "0", "1048576", "0", "tsc", "ext4"]);
    let (_, v) = doctor(&root, Path::new("/mnt/data/zepto"));
    let (s, advice) = status(&v, "transparent huge pages");
    assert_eq!(s, "warn", "{v}");
    assert!(advice.contains("madvise") && advice.contains("--huge-pages"), "{advice}");
}

#[test]
fn a_host_tuned_as_recommended_passes() {
    let root = tempdir("good");
    host(&root, ["always [madvise] never", "performance", "1", "0", "1048576", "0", "tsc", "ext4"]);
    let data = tempdir("data");
    let (code, v) = doctor(&root, &data);
    // Free space and AVX2 are this machine's own: they may warn here, and nothing else may.
    let warned: Vec<&str> = v["checks"]
        .as_array()
        .expect("checks")
        .iter()
        .filter(|c| c["status"] == "warn")
        .filter_map(|c| c["check"].as_str())
        .collect();
    assert!(warned.iter().all(|c| ["data directory free space", "AVX2"].contains(c)), "{warned:?}");
    assert_eq!(code, i32::from(!warned.is_empty()), "{v}");
    assert_eq!(status(&v, "data directory file system").0, "ok");
}

fn tempdir(name: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("zepto-doctor-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("temp dir");
    d
}
