//! A fresh database.

#[allow(unused_imports)]
use super::*;

pub(crate) fn unique(prefix: &str) -> String {
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default().as_nanos();
    format!("{prefix}_{}_{}", std::process::id(), nanos % 1_000_000_000)
}

pub(crate) struct FreshDb {
    pub(crate) url: String,
    pub(crate) dir: PathBuf,
    pub(crate) pg: Option<(String, String)>,
}

impl FreshDb {
    pub(crate) fn new(base: Option<&str>) -> AnyResult<FreshDb> {
        let dir = std::env::temp_dir().join(unique("rastrod_syncbench"));
        std::fs::create_dir_all(&dir)?;
        match base {
            None => {
                let url = format!("sqlite://{}", dir.join("rastrod.db").display());
                Ok(FreshDb { url, dir, pg: None })
            }
            Some(base) if base.starts_with("postgres://") || base.starts_with("postgresql://") => {
                let schema = unique("syncbench");
                let mut conn = diesel::PgConnection::establish(base)?;
                conn.batch_execute(&format!("CREATE SCHEMA {schema}"))?;
                let sep = if base.contains('?') { '&' } else { '?' };
                let url = format!("{base}{sep}options=-csearch_path%3D{schema}");
                Ok(FreshDb { url, dir, pg: Some((base.to_string(), schema)) })
            }
            Some(other) => {
                Err(format!("--database-url {other}: expected postgres://... (omit it for a fresh SQLite file)").into())
            }
        }
    }
}

impl Drop for FreshDb {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
        if let Some((base, schema)) = &self.pg
            && let Ok(mut conn) = diesel::PgConnection::establish(base)
        {
            let _ = conn.batch_execute(&format!("DROP SCHEMA IF EXISTS {schema} CASCADE"));
        }
    }
}
