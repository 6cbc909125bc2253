//! The command line.

#[allow(unused_imports)]
use super::*;

#[derive(Parser, Clone)]
#[command(name = "syncbench", about = "rastrod's account sync benchmark: backfill time, Graph calls, memory.")]
pub(crate) struct Cli {
    /// RASTRO_SYNC_MAX_CONCURRENT; a comma-separated list runs one fresh process per value.
    #[arg(long, default_value = "4", value_delimiter = ',')]
    pub(crate) concurrency: Vec<usize>,
    /// Linked ad accounts (10 per site).
    #[arg(long, default_value_t = 500)]
    pub(crate) accounts: usize,
    /// Ads per account, every one spending every day.
    #[arg(long, default_value_t = 50)]
    pub(crate) ads: usize,
    /// Hours of steady state walked in 45-minute steps after the backfill.
    #[arg(long, default_value_t = 24)]
    pub(crate) steady_hours: i64,
    /// Worker threads of the Graph simulator.
    #[arg(long, default_value_t = 1)]
    pub(crate) sim_workers: usize,
    /// Run against this database instead of a fresh SQLite file (postgres://... gets a fresh schema).
    #[arg(long)]
    pub(crate) database_url: Option<String>,
    /// Internal: run one concurrency in this process.
    #[arg(long, hide = true)]
    pub(crate) child: bool,
}

pub(crate) type AnyResult<T> = Result<T, Box<dyn std::error::Error + Send + Sync>>;
/// One child process per concurrency (each its own peak RSS), then a summary.
pub(crate) fn parent(cli: &Cli) -> AnyResult<()> {
    let exe = std::env::current_exe()?;
    let mut results: Vec<BTreeMap<String, String>> = Vec::new();
    for &n in &cli.concurrency {
        let mut cmd = Command::new(&exe);
        cmd.arg("--child")
            .arg("--concurrency")
            .arg(n.to_string())
            .arg("--accounts")
            .arg(cli.accounts.to_string())
            .arg("--ads")
            .arg(cli.ads.to_string())
            .arg("--steady-hours")
            .arg(cli.steady_hours.to_string())
            .arg("--sim-workers")
            .arg(cli.sim_workers.to_string());
        if let Some(url) = &cli.database_url {
            cmd.arg("--database-url").arg(url);
        }
        let mut child = cmd.stdout(Stdio::piped()).spawn()?;
        let out = child.stdout.take().ok_or("no stdout from the child")?;
        for line in BufReader::new(out).lines() {
            let line = line?;
            println!("{line}");
            if let Some(rest) = line.strip_prefix("RESULT ") {
                results.push(
                    rest.split_whitespace()
                        .filter_map(|kv| kv.split_once('='))
                        .map(|(k, v)| (k.to_string(), v.to_string()))
                        .collect(),
                );
            }
        }
        if !child.wait()?.success() {
            return Err(format!("the run at concurrency {n} failed").into());
        }
        println!();
    }
    println!("summary ({} accounts × {} ads, fake Graph answering at once)", cli.accounts, cli.ads);
    println!(
        "{:>11}  {:>11}  {:>14}  {:>16}  {:>13}  {:>13}",
        "concurrency", "backfill s", "calls/account", "calls/acct/day", "peak RSS MiB", "idle B/actor"
    );
    for r in &results {
        let g = |k: &str| r.get(k).map_or("?", String::as_str);
        println!(
            "{:>11}  {:>11}  {:>14}  {:>16}  {:>13}  {:>13}",
            g("concurrency"),
            g("backfill_s"),
            g("backfill_calls_per_account"),
            g("steady_calls_per_account_day"),
            g("peak_rss_mib"),
            g("idle_heap_bytes_per_actor")
        );
    }
    let best = results
        .iter()
        .filter_map(|r| Some((r.get("backfill_s")?.parse::<f64>().ok()?, r.get("concurrency")?.clone())))
        .min_by(|a, b| a.0.total_cmp(&b.0));
    if let Some((secs, n)) = best {
        println!("best: concurrency {n}, full backfill in {secs:.2} s (target ≤ 60 s)");
    }
    Ok(())
}
