//! The Graph simulator.

#[allow(unused_imports)]
use super::*;

pub(crate) const FIRST_ACCOUNT: u64 = 1_000_000_001;
pub(crate) const ENDPOINTS: [&str; 3] = ["adspixels", "insights", "ads"];

pub(crate) struct Sim {
    pub(crate) base_url: String,
    pub(crate) accounts: usize,
    pub(crate) ads: usize,
    /// Per account: adspixels, insights, ads.
    pub(crate) counts: Vec<[AtomicU64; 3]>,
    pub(crate) me: AtomicU64,
    pub(crate) adaccounts: AtomicU64,
    pub(crate) other: AtomicU64,
    pub(crate) insight_rows: AtomicU64,
}

impl Sim {
    pub(crate) fn account_index(&self, node: &str) -> Option<usize> {
        let n: u64 = node.strip_prefix("act_")?.parse().ok()?;
        let i = usize::try_from(n.checked_sub(FIRST_ACCOUNT)?).ok()?;
        (i < self.accounts).then_some(i)
    }

    /// (per-account calls of each endpoint summed over accounts, the account-less calls).
    pub(crate) fn totals(&self) -> ([u64; 3], u64) {
        let mut t = [0u64; 3];
        for c in &self.counts {
            for (k, v) in c.iter().enumerate() {
                t[k] += v.load(Ordering::Relaxed);
            }
        }
        let rest = self.me.load(Ordering::Relaxed)
            + self.adaccounts.load(Ordering::Relaxed)
            + self.other.load(Ordering::Relaxed);
        (t, rest)
    }

    pub(crate) fn max_per_account(&self) -> u64 {
        self.counts.iter().map(|c| c.iter().map(|v| v.load(Ordering::Relaxed)).sum::<u64>()).max().unwrap_or(0)
    }
}

pub(crate) fn json_ok(body: String) -> HttpResponse {
    HttpResponse::Ok().content_type("application/json").body(body)
}

pub(crate) fn graph_error(code: i64, message: &str) -> HttpResponse {
    HttpResponse::BadRequest().content_type("application/json").body(
        serde_json::json!({"error": {"message": message, "type": "OAuthException", "code": code, "fbtrace_id": "bench"}})
            .to_string(),
    )
}

pub(crate) async fn sim_me(sim: web::Data<Sim>) -> HttpResponse {
    sim.me.fetch_add(1, Ordering::Relaxed);
    json_ok(r#"{"id":"10001","name":"Bench Owner"}"#.to_string())
}

#[derive(Deserialize)]
pub(crate) struct PageQuery {
    pub(crate) limit: Option<usize>,
    pub(crate) after: Option<String>,
    pub(crate) time_range: Option<String>,
}

#[derive(Deserialize)]
pub(crate) struct TimeRange {
    pub(crate) since: String,
    pub(crate) until: String,
}

impl TimeRange {
    pub(crate) fn dates(&self) -> Option<(NaiveDate, NaiveDate)> {
        let d = |s: &str| NaiveDate::parse_from_str(s, "%Y-%m-%d").ok();
        Some((d(&self.since)?, d(&self.until)?))
    }
}

pub(crate) async fn sim_edge(
    sim: web::Data<Sim>,
    path: web::Path<(String, String)>,
    q: web::Query<PageQuery>,
    req: HttpRequest,
) -> HttpResponse {
    let (node, edge) = path.into_inner();
    if req.headers().get("authorization").is_none() {
        sim.other.fetch_add(1, Ordering::Relaxed);
        return graph_error(190, "no token");
    }
    if node == "me" && edge == "adaccounts" {
        sim.adaccounts.fetch_add(1, Ordering::Relaxed);
        return ad_accounts(&sim, &q);
    }
    let Some(i) = sim.account_index(&node) else {
        sim.other.fetch_add(1, Ordering::Relaxed);
        return graph_error(100, "unknown object");
    };
    let Some(k) = ENDPOINTS.iter().position(|e| *e == edge) else {
        sim.other.fetch_add(1, Ordering::Relaxed);
        return graph_error(100, "unknown edge");
    };
    sim.counts[i][k].fetch_add(1, Ordering::Relaxed);
    let acct = FIRST_ACCOUNT + i as u64;
    match edge.as_str() {
        "adspixels" => json_ok(r#"{"data":[]}"#.to_string()),
        "ads" => json_ok(ads(acct, sim.ads)),
        _ => {
            let Some(range) = q.time_range.as_deref().and_then(|r| serde_json::from_str::<TimeRange>(r).ok()?.dates())
            else {
                return graph_error(100, "time_range is required");
            };
            let (body, rows) = insights(acct, sim.ads, range.0, range.1);
            sim.insight_rows.fetch_add(rows, Ordering::Relaxed);
            json_ok(body)
        }
    }
}

pub(crate) fn ad_accounts(sim: &Sim, q: &PageQuery) -> HttpResponse {
    let limit = q.limit.unwrap_or(25).clamp(1, 100);
    let start = q.after.as_deref().and_then(|a| a.parse::<usize>().ok()).unwrap_or(0).min(sim.accounts);
    let end = (start + limit).min(sim.accounts);
    let data: Vec<serde_json::Value> = (start..end)
        .map(|i| {
            let n = FIRST_ACCOUNT + i as u64;
            serde_json::json!({
                "id": format!("act_{n}"),
                "account_id": n.to_string(),
                "name": format!("Bench account {}", i + 1),
                "currency": "BRL",
                "timezone_name": "America/Sao_Paulo",
                "account_status": 1
            })
        })
        .collect();
    let mut paging = serde_json::json!({"cursors": {"before": start.to_string(), "after": end.to_string()}});
    if end < sim.accounts {
        paging["next"] = serde_json::Value::String(format!(
            "{}/v25.0/me/adaccounts?fields=id%2Caccount_id%2Cname%2Ccurrency%2Ctimezone_name%2Caccount_status&limit={limit}&after={end}",
            sim.base_url
        ));
    }
    json_ok(serde_json::json!({"data": data, "paging": paging}).to_string())
}

/// Ad `a` of account `acct`: its id, adset and campaign (10 ads an adset, 5 adsets a campaign).
pub(crate) fn ad_ids(acct: u64, a: usize) -> (String, String, String) {
    (format!("{acct}0{a:04}"), format!("{acct}1{:04}", a / 10), format!("{acct}2{:04}", a / 50))
}

pub(crate) fn insights(acct: u64, ads: usize, since: NaiveDate, until: NaiveDate) -> (String, u64) {
    let mut out = String::with_capacity(360 * ads * 31);
    out.push_str(r#"{"data":["#);
    let mut rows = 0u64;
    let mut day = since;
    while day <= until {
        let d = day.format("%Y-%m-%d").to_string();
        for a in 0..ads {
            let (ad, adset, campaign) = ad_ids(acct, a);
            if rows > 0 {
                out.push(',');
            }
            let _ = write!(
                out,
                r#"{{"ad_id":"{ad}","ad_name":"Ad {a}","adset_id":"{adset}","adset_name":"Adset {}","campaign_id":"{campaign}","campaign_name":"Campaign {}","spend":"12.34","impressions":"1000","clicks":"37","date_start":"{d}","date_stop":"{d}"}}"#,
                a / 10,
                a / 50
            );
            rows += 1;
        }
        day = match day.succ_opt() {
            Some(next) => next,
            None => break,
        };
    }
    out.push_str(r#"],"paging":{"cursors":{"before":"0","after":"0"}}}"#);
    (out, rows)
}

pub(crate) fn ads(acct: u64, ads: usize) -> String {
    let mut out = String::with_capacity(220 * ads);
    out.push_str(r#"{"data":["#);
    for a in 0..ads {
        let (ad, adset, campaign) = ad_ids(acct, a);
        if a > 0 {
            out.push(',');
        }
        let _ = write!(
            out,
            r#"{{"id":"{ad}","name":"Ad {a}","effective_status":"ACTIVE","adset_id":"{adset}","campaign_id":"{campaign}","creative":{{"id":"{ad}9","object_type":"VIDEO"}}}}"#
        );
    }
    out.push_str(r#"],"paging":{"cursors":{"before":"0","after":"0"}}}"#);
    out
}

pub(crate) async fn start_sim(accounts: usize, ads: usize, workers: usize) -> AnyResult<web::Data<Sim>> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    let base_url = format!("http://{}", listener.local_addr()?);
    let sim = web::Data::new(Sim {
        base_url,
        accounts,
        ads,
        counts: (0..accounts).map(|_| Default::default()).collect(),
        me: AtomicU64::new(0),
        adaccounts: AtomicU64::new(0),
        other: AtomicU64::new(0),
        insight_rows: AtomicU64::new(0),
    });
    let data = sim.clone();
    let server = HttpServer::new(move || {
        App::new()
            .app_data(data.clone())
            .route("/v25.0/me", web::get().to(sim_me))
            .route("/v25.0/{node}/{edge}", web::get().to(sim_edge))
    })
    .workers(workers.max(1))
    .disable_signals()
    .listen(listener)?
    .run();
    actix_web::rt::spawn(server);
    Ok(sim)
}
