//! Logs through `tracing`: human text by default, JSON with `--log-format json`
//! or `RASTRO_LOG_FORMAT=json`; the filter from `RASTRO_LOG`.

use tracing_subscriber::EnvFilter;

use crate::config::LogFormat;

pub fn init(filter: &str, format: LogFormat) {
    let filter = EnvFilter::try_new(filter).unwrap_or_else(|_| EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt().with_env_filter(filter).with_target(false);
    let _ = match format {
        LogFormat::Json => builder.json().flatten_event(true).try_init(),
        LogFormat::Text => builder.try_init(),
    };
}
