//! The host checks `zeptodb doctor` runs, one function each. Every check reads the kernel's
//! settings from files under a root (`/` on a real host; a test builds a tree of its own), and
//! says what it found, whether that is fine, and what to change and why when it is not.

use std::path::{Path, PathBuf};

/// How a finding stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    /// As recommended.
    Ok,
    /// Worth changing: `zeptodb doctor` exits 1.
    Warn,
    /// Reported, nothing to change (or nothing ZeptoDB uses yet).
    Info,
}

impl Status {
    pub fn name(self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::Warn => "warn",
            Status::Info => "info",
        }
    }
}

/// One check's result.
#[derive(Debug, Clone)]
pub struct Finding {
    pub check: &'static str,
    pub status: Status,
    /// What was found, as the host says it.
    pub value: String,
    /// What to do and why (empty when nothing is to be done).
    pub advice: String,
}

fn finding(check: &'static str, status: Status, value: impl Into<String>, advice: impl Into<String>) -> Finding {
    Finding { check, status, value: value.into(), advice: advice.into() }
}

/// Where the kernel's files are read from.
pub struct Host {
    root: PathBuf,
}

impl Host {
    pub fn new(root: impl Into<PathBuf>) -> Host {
        Host { root: root.into() }
    }

    /// The trimmed text of `path` (absolute, as on a host) under the root.
    fn read(&self, path: &str) -> Option<String> {
        std::fs::read_to_string(self.root.join(path.trim_start_matches('/'))).ok().map(|s| s.trim().to_string())
    }

    fn entries(&self, dir: &str) -> Vec<String> {
        let Ok(rd) = std::fs::read_dir(self.root.join(dir.trim_start_matches('/'))) else { return Vec::new() };
        let mut names: Vec<String> = rd.flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect();
        names.sort();
        names
    }
}

/// The bracketed choice of a sysfs selector (`always [madvise] never` gives `madvise`).
fn selected(s: &str) -> Option<&str> {
    s.split_whitespace().find_map(|w| w.strip_prefix('[')?.strip_suffix(']'))
}

pub fn transparent_huge_pages(h: &Host) -> Finding {
    let check = "transparent huge pages";
    let Some(mode) = h.read("/sys/kernel/mm/transparent_hugepage/enabled") else {
        return finding(check, Status::Info, "not exposed", "");
    };
    match selected(&mode).unwrap_or(&mode) {
        "always" => finding(
            check,
            Status::Warn,
            "always",
            "set madvise (echo madvise > /sys/kernel/mm/transparent_hugepage/enabled): with always, \
             khugepaged compacts memory behind every allocation, which shows as latency spikes",
        ),
        "never" => finding(
            check,
            Status::Warn,
            "never",
            "set madvise: the server advises 2 MiB pages for blocks of 32 MiB and up (--huge-pages); \
             with never they get 4 KiB pages, and a GROUP BY over 10M-row partitions measured 2.3x slower \
             (docs/operations.md, Huge pages)",
        ),
        m => finding(check, Status::Ok, m, ""),
    }
}

pub fn reserved_huge_pages(h: &Host) -> Finding {
    let check = "reserved huge pages";
    let Some(n) = h.read(&format!("{}/nr_hugepages", zepto_storage::hugetlb::POOL_DIR)) else {
        return finding(check, Status::Info, "not exposed", "");
    };
    match n.parse::<u64>() {
        Ok(0) => finding(
            check,
            Status::Info,
            "0",
            format!(
                "none reserved: where transparent huge pages are off, reserve 2 MiB pages \
                 ({}/nr_hugepages) and serve with --huge-pages reserved (docs/operations.md, Huge pages)",
                zepto_storage::hugetlb::POOL_DIR
            ),
        ),
        Ok(pages) => finding(
            check,
            Status::Info,
            format!("{pages} ({} MiB)", pages * 2),
            "serve with --huge-pages reserved to map blocks of 32 MiB and up on them",
        ),
        Err(_) => finding(check, Status::Info, n, ""),
    }
}

pub fn cpu_governor(h: &Host) -> Finding {
    let check = "CPU frequency governor";
    let govs: Vec<String> = h
        .entries("/sys/devices/system/cpu")
        .iter()
        .filter(|c| c.strip_prefix("cpu").is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit())))
        .filter_map(|c| h.read(&format!("/sys/devices/system/cpu/{c}/cpufreq/scaling_governor")))
        .collect();
    let Some(first) = govs.first() else {
        return finding(check, Status::Info, "not exposed (a virtual machine sets it on its host)", "");
    };
    if govs.iter().all(|g| g == "performance") {
        return finding(check, Status::Ok, "performance", "");
    }
    let other = govs.iter().find(|g| *g != "performance").unwrap_or(first);
    finding(
        check,
        Status::Warn,
        other.clone(),
        "set performance (cpupower frequency-set -g performance): other governors ramp the clock up \
         only after load arrives, which a short query or a burst of ticks pays for",
    )
}

pub fn swappiness(h: &Host) -> Finding {
    let check = "vm.swappiness";
    match h.read("/proc/sys/vm/swappiness").and_then(|s| s.parse::<u32>().ok()) {
        None => finding(check, Status::Info, "not exposed", ""),
        Some(v) if v <= 10 => finding(check, Status::Ok, v.to_string(), ""),
        Some(v) => finding(
            check,
            Status::Warn,
            v.to_string(),
            "set 1 to 10 (sysctl vm.swappiness=1): tables live in memory, and a swapped-out column \
             turns a scan into disk reads",
        ),
    }
}

pub fn overcommit(h: &Host) -> Finding {
    let check = "vm.overcommit_memory";
    match h.read("/proc/sys/vm/overcommit_memory").as_deref() {
        None => finding(check, Status::Info, "not exposed", ""),
        Some("2") => finding(
            check,
            Status::Warn,
            "2",
            "set 0 (sysctl vm.overcommit_memory=0): strict accounting refuses a large column's \
             growth while memory is still free; ZeptoDB bounds its own use (--memory-budget-mb, \
             per-query limits)",
        ),
        Some(v) => finding(check, Status::Ok, v, ""),
    }
}

/// The soft and hard open-file limits of this process, from `/proc/self/limits`'s form.
fn nofile(h: &Host) -> Option<(String, String)> {
    let limits = h.read("/proc/self/limits")?;
    let line = limits.lines().find(|l| l.starts_with("Max open files"))?;
    let mut words = line.trim_start_matches("Max open files").split_whitespace();
    Some((words.next()?.to_string(), words.next()?.to_string()))
}

pub fn open_files(h: &Host) -> Finding {
    let check = "open files (nofile)";
    let Some((soft, hard)) = nofile(h) else { return finding(check, Status::Info, "not exposed", "") };
    let enough = soft == "unlimited" || soft.parse::<u64>().is_ok_and(|n| n >= 65_536);
    let value = format!("{soft} (hard {hard}) in this shell; the unit sets its own");
    if enough {
        return finding(check, Status::Ok, value, "");
    }
    finding(
        check,
        Status::Warn,
        value,
        "raise to 65536 or more (LimitNOFILE= in the unit, ulimit -n): every connection, log \
         segment and history file holds a descriptor",
    )
}

pub fn numa_balancing(h: &Host) -> Finding {
    let check = "NUMA balancing";
    let nodes = h.entries("/sys/devices/system/node").iter().filter(|n| n.starts_with("node")).count();
    let on = h.read("/proc/sys/kernel/numa_balancing");
    match (on.as_deref(), nodes) {
        (Some("0") | None, _) => finding(check, Status::Ok, format!("off, {nodes} node(s)"), ""),
        (Some(_), n) if n <= 1 => finding(check, Status::Ok, "on, one node (nothing to move)", ""),
        (Some(v), n) => finding(
            check,
            Status::Warn,
            format!("{v}, {n} nodes"),
            "set 0 (sysctl kernel.numa_balancing=0) and pin the server to one node: the kernel \
             unmaps pages to find where they are used, a fault on the next access to each",
        ),
    }
}

pub fn isolated_cores(h: &Host) -> Finding {
    let check = "isolated cores";
    let isolated = h.read("/sys/devices/system/cpu/isolated").unwrap_or_default();
    let cmdline = h.read("/proc/cmdline").unwrap_or_default();
    let nohz = cmdline.split_whitespace().find_map(|w| w.strip_prefix("nohz_full=")).unwrap_or("");
    if isolated.is_empty() {
        return finding(
            check,
            Status::Info,
            "none",
            "for the lowest FIX latency, boot with isolcpus= and nohz_full= for one core: the server \
             then puts its busy-polling FIX readers there (--cpu-affinity), where nothing preempts them",
        );
    }
    finding(
        check,
        Status::Ok,
        format!("isolcpus {isolated}, nohz_full {}", if nohz.is_empty() { "-" } else { nohz }),
        "the server puts its busy-polling FIX readers on the isolated cores unless --cpu-affinity says fix=",
    )
}

pub fn clock_source(h: &Host) -> Finding {
    let check = "clock source";
    match h.read("/sys/devices/system/clocksource/clocksource0/current_clocksource") {
        None => finding(check, Status::Info, "not exposed", ""),
        Some(c) if matches!(c.as_str(), "tsc" | "kvm-clock" | "arch_sys_counter") => finding(check, Status::Ok, c, ""),
        Some(c) => finding(
            check,
            Status::Warn,
            c,
            "use tsc where the CPU has a stable one (clocksource=tsc on the kernel command line): \
             reading the time then leaves user space, and every timestamped row and query reads it",
        ),
    }
}

/// The mount (point, file system type) that holds `dir`, from the root's `/proc/mounts`.
fn mount_of(h: &Host, dir: &Path) -> Option<(String, String)> {
    let mounts = h.read("/proc/mounts")?;
    mounts
        .lines()
        .filter_map(|l| {
            let mut w = l.split_whitespace();
            let (_, point, fs) = (w.next()?, w.next()?, w.next()?);
            dir.starts_with(point).then(|| (point.to_string(), fs.to_string()))
        })
        .max_by_key(|(p, _)| p.len())
}

pub fn data_filesystem(h: &Host, dir: &Path) -> Finding {
    let check = "data directory file system";
    let Some((point, fs)) = mount_of(h, dir) else {
        return finding(check, Status::Info, format!("{}: mount not found", dir.display()), "");
    };
    let value = format!("{fs} on {point}");
    match fs.as_str() {
        "tmpfs" | "ramfs" => {
            finding(check, Status::Warn, value, "a memory file system loses every table at reboot: use a disk")
        }
        "nfs" | "nfs4" | "cifs" | "smb3" | "fuse.sshfs" => finding(
            check,
            Status::Warn,
            value,
            "use a local disk: a network file system's fsync may return before the data is \
             stable, and the write-ahead log's promise rests on it",
        ),
        _ => finding(check, Status::Ok, value, ""),
    }
}

/// Free and total bytes of the file system holding `dir` (or, while it does not exist yet, its
/// deepest existing ancestor).
fn space(dir: &Path) -> Option<(u64, u64)> {
    use std::os::unix::ffi::OsStrExt;
    let dir = dir.ancestors().find(|p| p.exists())?;
    let c = std::ffi::CString::new(dir.as_os_str().as_bytes()).ok()?;
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: `c` is a NUL-terminated path and `st` a statvfs the call fills.
    if unsafe { libc::statvfs(c.as_ptr(), &mut st) } != 0 {
        return None;
    }
    let unit = st.f_frsize as u64;
    Some((st.f_bavail as u64 * unit, st.f_blocks as u64 * unit))
}

pub fn free_space(dir: &Path) -> Finding {
    let check = "data directory free space";
    let Some((free, total)) = space(dir) else {
        return finding(check, Status::Info, format!("{}: not found", dir.display()), "");
    };
    let gib = |b: u64| b as f64 / (1u64 << 30) as f64;
    let value = format!("{:.1} GiB free of {:.1} GiB", gib(free), gib(total));
    if free < 1 << 30 || free.saturating_mul(10) < total {
        return finding(
            check,
            Status::Warn,
            value,
            "keep at least 10% and 1 GiB free: a checkpoint writes a table's new file beside the \
             old one before it removes it, and a full disk stops every write",
        );
    }
    finding(check, Status::Ok, value, "")
}

pub fn avx2() -> Finding {
    let check = "AVX2";
    #[cfg(target_arch = "x86_64")]
    let has = std::arch::is_x86_feature_detected!("avx2");
    #[cfg(not(target_arch = "x86_64"))]
    let has = false;
    if has {
        return finding(check, Status::Ok, "yes", "");
    }
    finding(
        check,
        Status::Warn,
        "no",
        "vector distances run scalar (several times slower), and aggregate and join kernels on narrower lanes, on a CPU without AVX2",
    )
}

#[cfg(test)]
mod tests {
    use super::selected;

    #[test]
    fn the_bracketed_choice_is_the_selected_one() {
        assert_eq!(selected("always [madvise] never"), Some("madvise"));
        assert_eq!(selected("[always] madvise never"), Some("always"));
        assert_eq!(selected("madvise"), None);
    }
}
