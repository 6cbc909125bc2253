//! Shared bits: fresh databases, random keys, statistics, machine load.

#[allow(unused_imports)]
use super::*;
pub(crate) fn unique(prefix: &str) -> String {
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default().as_nanos();
    format!("{prefix}_{}_{}", std::process::id(), nanos % 1_000_000_000)
}

/// A fresh database: a SQLite file in its own temp folder, or a new PostgreSQL schema.
pub(crate) struct FreshDb {
    pub(crate) url: String,
    pub(crate) dir: Option<PathBuf>,
    pub(crate) pg: Option<(String, String)>,
    pub(crate) keep: bool,
}

impl FreshDb {
    pub(crate) fn new(base: Option<&str>) -> AnyResult<FreshDb> {
        match base {
            None => {
                let dir = std::env::temp_dir().join(unique("rastrod_loadgen"));
                std::fs::create_dir_all(&dir)?;
                let url = format!("sqlite://{}", dir.join("rastrod.db").display());
                Ok(FreshDb { url, dir: Some(dir), pg: None, keep: false })
            }
            Some(base) if base.starts_with("postgres://") || base.starts_with("postgresql://") => {
                let schema = unique("loadgen");
                let mut conn = diesel::PgConnection::establish(base)?;
                conn.batch_execute(&format!("CREATE SCHEMA {schema}"))?;
                let sep = if base.contains('?') { '&' } else { '?' };
                let url = format!("{base}{sep}options=-csearch_path%3D{schema}");
                Ok(FreshDb { url, dir: None, pg: Some((base.to_string(), schema)), keep: false })
            }
            Some(other) => {
                Err(format!("--database-url {other}: expected postgres://... (omit it for a fresh SQLite file)").into())
            }
        }
    }

    pub(crate) fn existing(url: &str) -> FreshDb {
        FreshDb { url: url.to_string(), dir: None, pg: None, keep: true }
    }
}

impl Drop for FreshDb {
    fn drop(&mut self) {
        if self.keep {
            return;
        }
        if let Some(dir) = &self.dir {
            let _ = std::fs::remove_dir_all(dir);
        }
        if let Some((base, schema)) = &self.pg
            && let Ok(mut conn) = diesel::PgConnection::establish(base)
        {
            let _ = conn.batch_execute(&format!("DROP SCHEMA IF EXISTS {schema} CASCADE"));
        }
    }
}

pub(crate) fn random_hex(bytes: usize) -> AnyResult<String> {
    let mut b = vec![0u8; bytes];
    getrandom::fill(&mut b).map_err(|e| format!("random: {e}"))?;
    Ok(b.iter().map(|x| format!("{x:02x}")).collect())
}

/// A tiny deterministic generator: the same data on every run.
pub(crate) struct Lcg(pub(crate) u64);

impl Lcg {
    pub(crate) fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        self.0 >> 33
    }
    pub(crate) fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// Nearest-rank percentile of sorted samples.
pub(crate) fn pct<T: Copy + Default>(sorted: &[T], p: f64) -> T {
    if sorted.is_empty() {
        return T::default();
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

pub(crate) fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "?".into())
}

/// CPU seconds (user + system) a process has used so far, from /proc (Linux).
pub(crate) fn cpu_seconds(pid: &str) -> Option<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after = &stat[stat.rfind(')')? + 2..];
    let fields: Vec<&str> = after.split_whitespace().collect();
    // Fields 14 and 15 of stat (utime, stime) are 11 and 12 after the name; clock ticks of 1/100 s.
    let ticks: f64 = fields.get(11)?.parse::<f64>().ok()? + fields.get(12)?.parse::<f64>().ok()?;
    Some(ticks / 100.0)
}

/// The CPU seconds of the daemon's group-commit writer threads (`rastrod-writer`;
/// one on SQLite, `RASTRO_DATABASE_WRITERS` on PostgreSQL), summed.
pub(crate) fn writer_cpu_seconds(pid: &str) -> Option<f64> {
    let tasks = std::fs::read_dir(format!("/proc/{pid}/task")).ok()?;
    let mut total = None;
    for t in tasks.flatten() {
        let tid = t.file_name().to_string_lossy().into_owned();
        let comm = std::fs::read_to_string(format!("/proc/{pid}/task/{tid}/comm")).unwrap_or_default();
        if comm.trim() == "rastrod-writer" {
            total = Some(total.unwrap_or(0.0) + cpu_seconds(&format!("{pid}/task/{tid}"))?);
        }
    }
    total
}

/// Bytes the process has caused to be written to storage so far (Linux
/// `/proc/<pid>/io`, `write_bytes`): on SQLite the WAL's frames and the
/// checkpoints' copies into the database file, what a commit's dirtied pages
/// cost the disk. A PostgreSQL daemon writes nothing itself (the server does).
pub(crate) fn disk_written(pid: &str) -> Option<u64> {
    let io = std::fs::read_to_string(format!("/proc/{pid}/io")).ok()?;
    io.lines().find_map(|l| l.strip_prefix("write_bytes:")).and_then(|v| v.trim().parse().ok())
}

/// Nanoseconds on CPU of every thread of this process (Linux schedstat).
pub(crate) fn cpu_ns_self() -> u64 {
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else { return 0 };
    tasks.flatten().filter_map(|t| schedstat_ns(&t.path().join("schedstat"))).sum()
}

/// Nanoseconds on CPU of every `postgres` process of the machine (the server,
/// when it runs here): what a PostgreSQL report costs the server.
pub(crate) fn cpu_ns_postgres() -> u64 {
    let Ok(procs) = std::fs::read_dir("/proc") else { return 0 };
    procs
        .flatten()
        .filter(|p| std::fs::read_to_string(p.path().join("comm")).is_ok_and(|c| c.trim() == "postgres"))
        .filter_map(|p| schedstat_ns(&p.path().join("schedstat")))
        .sum()
}

pub(crate) fn schedstat_ns(path: &std::path::Path) -> Option<u64> {
    std::fs::read_to_string(path).ok()?.split_whitespace().next()?.parse().ok()
}

pub(crate) fn machine_line() -> String {
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    format!("machine: {cores} cores, load average {}", loadavg())
}

/// `rastrod operator add <name>` on the database, the password on its
/// standard input: the operator a scenario signs in as, made before the
/// daemon starts.
pub(crate) fn add_operator(binary: &std::path::Path, db_url: &str, name: &str, password: &str) -> AnyResult<()> {
    let mut add = std::process::Command::new(binary)
        .args(["operator", "add", name])
        .env("RASTRO_DATABASE_URL", db_url)
        .env("RASTRO_HOST_API_KEY", "loadgen-operator-setup")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .spawn()?;
    {
        use std::io::Write;
        add.stdin.take().ok_or("no stdin")?.write_all(format!("{password}\n").as_bytes())?;
    }
    if !add.wait()?.success() {
        return Err("rastrod operator add failed".into());
    }
    Ok(())
}
