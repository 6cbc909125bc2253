//! federation: dashboards polling metaStatus through the federated API.

#[allow(unused_imports)]
use super::*;
pub(crate) const FED_ISSUER: &str = "https://loadgen.invalid/federation";
pub(crate) const FED_AUDIENCE: &str = "https://loadgen.invalid/product";

/// A file removed on drop (the JWKS the daemon reads).
pub(crate) struct TempFile(PathBuf);

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

pub(crate) fn b64url(bytes: &[u8]) -> String {
    use base64::Engine;
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

/// An ES256 (P-256) key pair: the signer of the dashboards' tokens and its public JWK.
pub(crate) fn es256_key(kid: &str) -> AnyResult<(jsonwebtoken::EncodingKey, serde_json::Value)> {
    use aws_lc_rs::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, KeyPair};
    let rng = aws_lc_rs::rand::SystemRandom::new();
    let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng)
        .map_err(|e| format!("generating the signing key: {e}"))?;
    let pair = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, pkcs8.as_ref())
        .map_err(|e| format!("reading the signing key: {e}"))?;
    // The uncompressed point: 0x04 || x (32 bytes) || y (32 bytes).
    let point = pair.public_key().as_ref();
    let jwk = serde_json::json!({
        "kty": "EC", "crv": "P-256", "x": b64url(&point[1..33]), "y": b64url(&point[33..65]),
        "kid": kid, "use": "sig", "alg": "ES256",
    });
    Ok((jsonwebtoken::EncodingKey::from_ec_der(pkcs8.as_ref()), jwk))
}

pub(crate) fn dash_site(d: usize, s: usize) -> String {
    format!("dash-{d:04}-site-{s:02}")
}

/// Every answer of a setup phase had the expected status.
pub(crate) fn all_ok(p: &PhaseResult, what: &str) -> AnyResult<()> {
    let bad: usize = p.statuses.iter().filter(|(s, _)| !(200..300).contains(*s)).map(|(_, n)| n).sum();
    if bad > 0 {
        return Err(format!("{what}: {bad} failed, first: {}", p.first_bad.as_deref().unwrap_or("?")).into());
    }
    Ok(())
}

/// The daemon's /metrics page, over a fresh connection.
pub(crate) async fn metrics_page(addr: &str, key: &str) -> AnyResult<String> {
    let mut c = Conn::open(addr).await?;
    Ok(String::from_utf8_lossy(&c.roundtrip(&request("GET", "/metrics", addr, key, None)).await?.body).into_owned())
}

/// The daemon on a fresh database with the federated API on, trusting a
/// fresh ES256 key (its JWKS in a temp file kept while this lives).
pub(crate) struct Federated {
    pub(crate) daemon: Daemon,
    pub(crate) signer: jsonwebtoken::EncodingKey,
    pub(crate) kid: String,
    pub(crate) backend: &'static str,
    pub(crate) _jwks: TempFile,
}

pub(crate) fn federated_daemon(args: &DaemonArgs, extra_env: &[(&str, String)]) -> AnyResult<Federated> {
    let binary = args.binary()?;
    let kid = format!("loadgen-{}", random_hex(4)?);
    let (signer, jwk) = es256_key(&kid)?;
    let jwks = TempFile(std::env::temp_dir().join(format!("{}.jwks.json", unique("rastrod_loadgen"))));
    std::fs::write(&jwks.0, serde_json::json!({ "keys": [jwk] }).to_string())?;
    let db = FreshDb::new(args.database_url.as_deref())?;
    let backend = if db.pg.is_some() { "PostgreSQL (fresh schema)" } else { "SQLite (fresh file)" };
    let mut env = vec![
        ("RASTRO_FEDERATION_ISSUER", FED_ISSUER.to_string()),
        ("RASTRO_FEDERATION_AUDIENCE", FED_AUDIENCE.to_string()),
        ("RASTRO_FEDERATION_JWKS", jwks.0.display().to_string()),
    ];
    env.extend(extra_env.iter().cloned());
    let daemon = Daemon::start(binary, db, &env)?;
    Ok(Federated { daemon, signer, kid, backend, _jwks: jwks })
}

pub(crate) fn federation(a: FederationArgs) -> AnyResult<()> {
    if a.dashboards == 0 || a.requests == 0 || !(1..=10).contains(&a.sites_per_dashboard) {
        return Err("--dashboards and --requests must be positive, --sites-per-dashboard 1-10".into());
    }
    let Federated { mut daemon, signer, kid, backend, _jwks: jwks } = federated_daemon(&a.daemon, &[])?;
    let rt = a.daemon.client_runtime()?;
    let outcome = rt.block_on(async {
        let (addr, key, pid) = (daemon.addr.clone(), daemon.key.clone(), daemon.pid());
        wait_ready(&addr, &key).await?;
        println!("{}", machine_line());
        let (dashboards, per) = (a.dashboards, a.sites_per_dashboard);
        println!(
            "daemon pid {pid} on {addr}, {backend}; {dashboards} dashboards × {per} sites, one keep-alive connection each, \
             {} client thread(s), {} requests per phase",
            a.daemon.client_threads, a.requests
        );

        // Setup over the host API: the sites, one owner per dashboard, then a grant per dashboard.
        let t = Instant::now();
        let setup_conns = dashboards.min(32);
        let create = {
            let (addr, key) = (addr.clone(), key.clone());
            Arc::new(move |_c: usize, i: usize| {
                let (d, s) = (i / per, i % per);
                let body = format!(
                    r#"{{"siteId":"{}","name":"Dashboard {d} site {s}","currency":"BRL","timezone":"America/Sao_Paulo","ownerId":"owner-{d:04}"}}"#,
                    dash_site(d, s)
                );
                request("POST", "/v1/sites", &addr, &key, Some(&body))
            })
        };
        let sites = phase("sites", &addr, setup_conns, dashboards * per, &[201], &pid, create).await?;
        all_ok(&sites, "creating the sites")?;
        let grant = {
            let (addr, key) = (addr.clone(), key.clone());
            Arc::new(move |_c: usize, d: usize| {
                let sites: Vec<String> = (0..per).map(|s| dash_site(d, s)).collect();
                let body = serde_json::json!({
                    "organizationId": format!("org-{d:04}"), "ownerId": format!("owner-{d:04}"), "siteIds": sites,
                });
                request("PUT", &format!("/v1/federation/grants/dash-{d:04}"), &addr, &key, Some(&body.to_string()))
            })
        };
        let grants = phase("grants", &addr, setup_conns, dashboards, &[201], &pid, grant).await?;
        all_ok(&grants, "provisioning the grants")?;

        // One token per dashboard (ES256, an hour), and its metaStatus request over its own sites.
        let now_ms =
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_err(|e| e.to_string())?.as_millis()
                as i64;
        let mut header = jsonwebtoken::Header::new(jsonwebtoken::Algorithm::ES256);
        header.kid = Some(kid.clone());
        let mut requests = Vec::with_capacity(dashboards);
        for d in 0..dashboards {
            let claims = serde_json::json!({
                "iss": FED_ISSUER, "aud": FED_AUDIENCE, "sub": format!("user-{d:04}"),
                "iat": now_ms / 1000, "exp": now_ms / 1000 + 3600,
                "rastro_connection_id": format!("dash-{d:04}"), "rastro_organization_id": format!("org-{d:04}"),
                "rastro_permissions": ["analytics:read"],
            });
            let token = jsonwebtoken::encode(&header, &claims, &signer).map_err(|e| format!("signing: {e}"))?;
            let sites: Vec<String> = (0..per).map(|s| dash_site(d, s)).collect();
            let body = serde_json::json!({ "siteIds": sites, "now": now_ms }).to_string();
            requests.push(request("POST", "/federation/metaStatus", &addr, &token, Some(&body)));
        }
        println!(
            "setup: {} sites and {dashboards} grants over the host API in {:.1} s",
            dashboards * per,
            t.elapsed().as_secs_f64()
        );
        let requests = Arc::new(requests);
        let poll = {
            let r = requests.clone();
            Arc::new(move |c: usize, _i: usize| r[c].clone())
        };
        // Every dashboard at least once: each token verified (then cached until its exp).
        let warm = phase("warmup", &addr, dashboards, a.warmup.max(dashboards), &[200], &pid, poll.clone()).await?;
        all_ok(&warm, "warming up metaStatus")?;

        let metrics0 = metrics_page(&addr, &key).await?;
        let meta = phase("metaStatus", &addr, dashboards, a.requests, &[200], &pid, poll).await?;
        let metrics1 = metrics_page(&addr, &key).await?;
        let ping = ping_maker(&addr, &key);
        let png = phase("ping", &addr, dashboards, a.requests, &[200], &pid, ping).await?;

        println!();
        meta.print();
        png.print();
        let errors = a.requests - meta.statuses.get(&200).copied().unwrap_or(0);
        if errors > 0 {
            println!(
                "metaStatus errors: {errors} answers were not 200; the first: {}",
                meta.first_bad.as_deref().unwrap_or("?")
            );
        }
        let ratio = meta.rate() / png.rate();
        let p99_ms = pct(&meta.lat_us, 99.0) as f64 / 1000.0;
        let verdict = |ok: bool| if ok { "met" } else { "MISSED" };
        println!(
            "ratio metaStatus/ping = {:.1} %  (target ≥ 50 %: {}); metaStatus p99 {p99_ms:.2} ms (target ≤ 20 ms: {})",
            ratio * 100.0,
            verdict(ratio >= 0.5),
            verdict(p99_ms <= 20.0),
        );
        let queries = metric(&metrics1, "rastrod_db_queries_total").zip(metric(&metrics0, "rastrod_db_queries_total"));
        match queries {
            Some((q1, q0)) => {
                let (q, secs) = (q1 - q0, meta.elapsed.as_secs_f64());
                println!(
                    "DB during metaStatus: {q:.0} statements = {:.0} queries/s vs {:.0} req/s \
                     ({:.3} queries per request)",
                    q / secs,
                    meta.rate(),
                    q / a.requests as f64
                );
            }
            None => println!("DB during metaStatus: ? (no rastrod_db_queries_total on /metrics)"),
        }
        println!("{}", machine_line());
        Ok::<_, Box<dyn std::error::Error + Send + Sync>>(())
    });
    daemon.stop();
    drop(jwks);
    outcome
}
