//! Which cores the server's threads run on (`zeptodb serve --cpu-affinity`).
//!
//! Threads are grouped in four roles ([`Role`]), each given a set of cores:
//! - `query`: the query threads and the parallel helpers that aggregate and scan partitions;
//! - `ingest`: the doors' network threads (HTTP and ILP, PostgreSQL, Flight SQL, Kafka), where
//!   writes are decoded and applied;
//! - `fix`: the FIX door's threads; each busy-polling session reader takes one core of the set
//!   for itself, in turn;
//! - `wal`: the log's timed flusher, checkpoints and maintenance.
//!
//! A role without a set runs wherever the kernel puts it, but for one default: when the host
//! has isolated cores (`isolcpus=`, read from `/sys/devices/system/cpu/isolated`), the FIX
//! busy-polling readers go there, since no other thread will be scheduled on them and a
//! spinning reader then never shares its core. The plan is decided once, when the server
//! starts ([`install`]), before the threads it applies to start; each thread pins itself as it
//! starts ([`pin`], [`pin_own_core`]). Linux (glibc) only: elsewhere the plan is accepted and pins
//! nothing.

use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::OnceLock;

/// A group of threads that shares a set of cores.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// Query threads and the parallel helpers.
    Query,
    /// The doors' network threads.
    Ingest,
    /// The FIX door's threads.
    Fix,
    /// Log flusher, checkpoints, maintenance.
    Wal,
}

impl Role {
    const ALL: [Role; 4] = [Role::Query, Role::Ingest, Role::Fix, Role::Wal];

    fn name(self) -> &'static str {
        match self {
            Role::Query => "query",
            Role::Ingest => "ingest",
            Role::Fix => "fix",
            Role::Wal => "wal",
        }
    }
}

/// A non-empty set of core numbers, ascending.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CpuSet(Vec<usize>);

/// The most cores a set may name (the kernel's `cpu_set_t` holds 1024).
const MAX_CPUS: usize = 1024;

impl CpuSet {
    /// A set from the kernel's list syntax: `0-3,6,8-9`.
    pub fn parse(text: &str) -> Result<CpuSet, String> {
        let mut cpus = Vec::new();
        for item in text.trim().split(',').map(str::trim) {
            let (lo, hi) = item.split_once('-').unwrap_or((item, item));
            let num =
                |s: &str| s.trim().parse::<usize>().map_err(|_| format!("'{item}' is not a core or a range of cores"));
            let (lo, hi) = (num(lo)?, num(hi)?);
            if lo > hi || hi >= MAX_CPUS {
                return Err(format!("'{item}' is not a range of cores below {MAX_CPUS}"));
            }
            cpus.extend(lo..=hi);
        }
        CpuSet::from_cpus(cpus).ok_or_else(|| "no core named".to_string())
    }

    /// The set of `cpus` (`None` when empty).
    fn from_cpus(mut cpus: Vec<usize>) -> Option<CpuSet> {
        cpus.sort_unstable();
        cpus.dedup();
        (!cpus.is_empty()).then_some(CpuSet(cpus))
    }

    /// The cores, ascending.
    pub fn cpus(&self) -> &[usize] {
        &self.0
    }

    /// The cores this process may run on (its affinity and cgroup's cpuset as the kernel
    /// applies them); `None` where that cannot be read.
    pub fn allowed() -> Option<CpuSet> {
        sys::allowed()
    }

    /// The cores a plan may name: those this process runs on, and the isolated ones, which
    /// a process on a host booted with `isolcpus=` is not given by default but may pin a
    /// thread to. `None` when neither is known.
    pub fn permitted() -> Option<CpuSet> {
        let (allowed, isolated) = (CpuSet::allowed(), CpuSet::isolated());
        CpuSet::from_cpus(allowed.iter().chain(isolated.iter()).flat_map(|s| s.0.iter().copied()).collect())
    }

    /// The host's isolated cores (`isolcpus=`); `None` when there are none.
    pub fn isolated() -> Option<CpuSet> {
        let text = std::fs::read_to_string("/sys/devices/system/cpu/isolated").ok()?;
        CpuSet::parse(&text).ok()
    }

    /// The cores of `self` also in `other`.
    fn within(&self, other: &CpuSet) -> Option<CpuSet> {
        CpuSet::from_cpus(self.0.iter().copied().filter(|c| other.0.contains(c)).collect())
    }
}

impl fmt::Display for CpuSet {
    /// The list syntax [`CpuSet::parse`] reads, ranges joined: `0-3,6`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut i = 0;
        while i < self.0.len() {
            let start = self.0[i];
            while i + 1 < self.0.len() && self.0[i + 1] == self.0[i] + 1 {
                i += 1;
            }
            let sep = if start == self.0[0] { "" } else { "," };
            match self.0[i] {
                end if end == start => write!(f, "{sep}{start}")?,
                end => write!(f, "{sep}{start}-{end}")?,
            }
            i += 1;
        }
        Ok(())
    }
}

/// The cores of each role; a role without a set is not pinned.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Plan {
    sets: [Option<CpuSet>; 4],
    /// The FIX set came from the isolated cores, not from the operator.
    fix_isolated: bool,
}

impl Plan {
    /// The plan `--cpu-affinity` writes: `role=cores` items separated by spaces or `;`
    /// (`query=0-5 ingest=6 fix=7 wal=6`). Every core must be one this process may use
    /// (`allowed`, when known: [`CpuSet::permitted`]). Then the default: FIX on the isolated
    /// cores (`isolated`, those allowed) when the spec gives it none.
    pub fn parse(spec: &str, allowed: Option<&CpuSet>, isolated: Option<&CpuSet>) -> Result<Plan, String> {
        let mut plan = Plan::default();
        for item in spec.split([' ', ';', '\t', '\n']).filter(|s| !s.is_empty()) {
            let (role, cpus) = item.split_once('=').ok_or_else(|| format!("'{item}' is not role=cores"))?;
            let role = Role::ALL
                .into_iter()
                .find(|r| r.name() == role.trim())
                .ok_or_else(|| format!("'{role}' is not a role (query, ingest, fix, wal)"))?;
            let set = CpuSet::parse(cpus).map_err(|e| format!("{}: {e}", role.name()))?;
            if let Some(out) = allowed.and_then(|a| set.0.iter().find(|c| !a.0.contains(c))) {
                let allowed = allowed.map_or(String::new(), ToString::to_string);
                return Err(format!("{}: core {out} is not one this process may run on ({allowed})", role.name()));
            }
            if plan.sets[role as usize].replace(set).is_some() {
                return Err(format!("{}: given twice", role.name()));
            }
        }
        if plan.sets[Role::Fix as usize].is_none() {
            let usable = match (isolated, allowed) {
                (Some(i), Some(a)) => i.within(a),
                (i, _) => i.cloned(),
            };
            plan.fix_isolated = usable.is_some();
            plan.sets[Role::Fix as usize] = usable;
        }
        Ok(plan)
    }

    /// [`Plan::parse`] against this host: the cores this process may use
    /// ([`CpuSet::permitted`]) and its isolated ones.
    pub fn for_this_host(spec: &str) -> Result<Plan, String> {
        Plan::parse(spec, CpuSet::permitted().as_ref(), CpuSet::isolated().as_ref())
    }

    /// The cores of `role`, if it is pinned.
    pub fn get(&self, role: Role) -> Option<&CpuSet> {
        self.sets[role as usize].as_ref()
    }

    /// Whether nothing is pinned.
    pub fn is_empty(&self) -> bool {
        self.sets.iter().all(Option::is_none)
    }
}

impl fmt::Display for Plan {
    /// `query 0-5, fix 7 (isolated)`, or `none`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut first = true;
        for r in Role::ALL {
            if let Some(set) = self.get(r) {
                let isolated = if r == Role::Fix && self.fix_isolated { " (isolated)" } else { "" };
                write!(f, "{}{} {set}{isolated}", if first { "" } else { ", " }, r.name())?;
                first = false;
            }
        }
        if first {
            write!(f, "none")?;
        }
        Ok(())
    }
}

/// The process's plan, once installed.
static PLAN: OnceLock<Plan> = OnceLock::new();

/// Make `plan` the process's, before the threads it applies to start. A second call is
/// refused (threads already pinned by the first would keep its cores).
pub fn install(plan: Plan) -> Result<(), String> {
    PLAN.set(plan).map_err(|_| "the CPU affinity plan is already installed".to_string())
}

/// How many cores `role` is pinned to, if it is.
pub fn cores(role: Role) -> Option<usize> {
    PLAN.get().and_then(|p| p.get(role)).map(|s| s.cpus().len())
}

/// Pin the calling thread to its role's cores, if the plan gives the role any. A refusal (a
/// sandbox, a cgroup's cpuset without the core, a core gone offline since) is reported once
/// per role on stderr and the thread runs unpinned.
pub fn pin(role: Role) {
    if let Some(set) = PLAN.get().and_then(|p| p.get(role)) {
        apply(role, set.cpus());
    }
}

/// Pin the calling thread to one core of its role's set, the next in turn (a busy-polling
/// reader that should have a core to itself); as [`pin`] when the role has no set.
pub fn pin_own_core(role: Role) {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    if let Some(set) = PLAN.get().and_then(|p| p.get(role)) {
        let k = NEXT.fetch_add(1, Ordering::Relaxed) % set.cpus().len();
        apply(role, &set.cpus()[k..=k]);
    }
}

/// Pin the calling thread to `set`, outside any role (a benchmark's own client thread).
pub fn pin_thread(set: &CpuSet) -> std::io::Result<()> {
    sys::set_current(set.cpus())
}

fn apply(role: Role, cpus: &[usize]) {
    static WARNED: [AtomicBool; 4] = [const { AtomicBool::new(false) }; 4];
    if let Err(e) = sys::set_current(cpus) {
        if !WARNED[role as usize].swap(true, Ordering::Relaxed) {
            eprintln!("zeptodb: cannot pin {} threads to their cores: {e}", role.name());
        }
    }
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
mod sys {
    use super::{CpuSet, MAX_CPUS};

    pub fn allowed() -> Option<CpuSet> {
        // SAFETY: a zeroed cpu_set_t is an empty set; sched_getaffinity writes at most its size.
        let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
        let rc = unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) };
        if rc != 0 {
            return None;
        }
        // SAFETY: CPU_ISSET reads the set in bounds for every c below its capacity.
        CpuSet::from_cpus((0..MAX_CPUS).filter(|&c| unsafe { libc::CPU_ISSET(c, &set) }).collect())
    }

    /// Restrict the calling thread (pid 0 is the calling thread for sched_setaffinity).
    pub fn set_current(cpus: &[usize]) -> std::io::Result<()> {
        // SAFETY: as above; every core is below MAX_CPUS, the set's capacity (CpuSet::parse).
        let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
        for &c in cpus {
            debug_assert!(c < MAX_CPUS);
            unsafe { libc::CPU_SET(c, &mut set) };
        }
        let rc = unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) };
        if rc == 0 {
            Ok(())
        } else {
            Err(std::io::Error::last_os_error())
        }
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
mod sys {
    use super::CpuSet;

    pub fn allowed() -> Option<CpuSet> {
        None
    }

    pub fn set_current(_cpus: &[usize]) -> std::io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(s: &str) -> CpuSet {
        CpuSet::parse(s).expect("a set")
    }

    #[test]
    fn sets_read_and_print_the_kernel_list_syntax() {
        assert_eq!(set("0-3,6,8-9").cpus(), &[0, 1, 2, 3, 6, 8, 9]);
        assert_eq!(set(" 7 ").to_string(), "7");
        assert_eq!(set("9,8,0-2,2,5").to_string(), "0-2,5,8-9");
        for bad in ["", "a", "3-1", "1-", "-2", "1024", "0-5000"] {
            assert!(CpuSet::parse(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn plans_name_each_role_once_within_the_allowed_cores() {
        let allowed = set("0-7");
        let p = Plan::parse("query=0-5 ingest=6;wal=6", Some(&allowed), None).expect("a plan");
        assert_eq!(p.get(Role::Query), Some(&set("0-5")));
        assert_eq!(p.get(Role::Ingest), Some(&set("6")));
        assert_eq!(p.get(Role::Fix), None);
        assert_eq!(p.to_string(), "query 0-5, ingest 6, wal 6");
        let err = |spec: &str| Plan::parse(spec, Some(&allowed), None).expect_err(spec);
        assert!(err("query=9").contains("core 9 is not one this process may run on (0-7)"), "{}", err("query=9"));
        assert!(err("query=1 query=2").contains("given twice"));
        assert!(err("reader=1").contains("not a role"));
        assert!(err("query").contains("not role=cores"));
        assert!(err("fix=x").starts_with("fix: "));
        assert_eq!(Plan::parse("", Some(&allowed), None).expect("empty").to_string(), "none");
    }

    #[test]
    fn fix_goes_to_the_isolated_cores_unless_the_plan_says_otherwise() {
        let (allowed, isolated) = (set("0-7"), set("6-7,12"));
        let p = Plan::parse("query=0-5", Some(&allowed), Some(&isolated)).expect("a plan");
        assert_eq!(p.get(Role::Fix), Some(&set("6-7")), "only the isolated cores this process may use");
        assert_eq!(p.to_string(), "query 0-5, fix 6-7 (isolated)");
        let p = Plan::parse("fix=3", Some(&allowed), Some(&isolated)).expect("a plan");
        assert_eq!(p.to_string(), "fix 3");
        let p = Plan::parse("", Some(&allowed), Some(&set("12"))).expect("a plan");
        assert!(p.is_empty(), "isolated cores outside the allowed ones are not used");
    }

    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    #[test]
    fn a_thread_pins_itself_to_a_core_it_may_run_on() {
        let allowed = CpuSet::allowed().expect("the affinity of this process");
        let first = allowed.cpus()[0];
        std::thread::spawn(move || {
            sys::set_current(&[first]).expect("pinned");
            assert_eq!(CpuSet::allowed(), Some(CpuSet(vec![first])));
        })
        .join()
        .expect("the thread");
        assert_eq!(CpuSet::allowed(), Some(allowed), "only that thread was pinned");
    }
}
