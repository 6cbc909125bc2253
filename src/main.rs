//! The `rastrod` command: serve, migrate, demo.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use clap::{Parser, Subcommand};
use rastrod::clock::{Clock, SystemClock};
use rastrod::config::{Config, LogFormat, Secret};
use rastrod::{db, demo, server, telemetry};

#[derive(Parser)]
#[command(name = "rastrod", version, about = "Puts ad spend next to leads.")]
struct Cli {
    /// Optional TOML file (see config/rastrod.toml); RASTRO_* variables win over it.
    #[arg(long, global = true, env = "RASTRO_CONFIG")]
    config: Option<PathBuf>,
    /// Log format: text or json (overrides RASTRO_LOG_FORMAT).
    #[arg(long, global = true, value_parser = ["text", "json"])]
    log_format: Option<String>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the daemon.
    Serve,
    /// Run the pending database migrations and exit.
    Migrate,
    /// Seed the demo sites and leads (idempotent), then serve.
    Demo,
    /// Print a fresh RASTRO_SECRETS_KEY (32 random bytes, base64).
    Keygen,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    if matches!(cli.command, Command::Keygen) {
        println!("{}", rastrod::crypto::generate_key());
        return ExitCode::SUCCESS;
    }
    let mut config = match Config::load(cli.config.as_deref()) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("rastrod: configuration error: {e}");
            return ExitCode::from(2);
        }
    };
    if let Some(f) = &cli.log_format {
        config.log_format = if f == "json" { LogFormat::Json } else { LogFormat::Text };
    }
    telemetry::init(&config.log, config.log_format);
    let outcome = actix_web::rt::System::new().block_on(async move {
        match cli.command {
            Command::Migrate => {
                db::Db::open(&config.database_url, 1, 1, 1)?.close();
                tracing::info!("migrations are up to date");
                Ok(())
            }
            Command::Serve => {
                let listener = server::bind(&config)?;
                let state = server::open_state(config, Arc::new(SystemClock))?;
                server::run(state, listener).await
            }
            Command::Keygen => Ok(()),
            Command::Demo => {
                if config.host_api_keys.is_empty() {
                    let key = random_key()?;
                    println!("demo host key (RASTRO_HOST_API_KEY was not set): {key}");
                    config.host_api_keys = vec![Secret::new(key)];
                }
                let listener = server::bind(&config)?;
                let state = server::open_state(config, Arc::new(SystemClock))?;
                let written = demo::seed(&state.db, SystemClock.now_ms()).await?;
                tracing::info!(leads = written, "demo seeded");
                server::run(state, listener).await
            }
        }
    });
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("rastrod: {e}");
            ExitCode::FAILURE
        }
    }
}

fn random_key() -> rastrod::error::Result<String> {
    let mut bytes = [0u8; 24];
    getrandom::fill(&mut bytes).map_err(rastrod::error::Error::internal)?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}
