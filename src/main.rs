//! The `rastrod` command: serve, migrate, demo, fake-graph.

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
    /// Serve with the fake Graph API and the seeded sample: the demo sites and
    /// leads (idempotent), the sample agency connected, linked and synced, and
    /// a few visitors kept live on the sites while it serves.
    Demo {
        /// Seed the sites and leads only, without the agency.
        #[arg(long)]
        no_agency: bool,
    },
    /// Print a fresh RASTRO_SECRETS_KEY (32 random bytes, base64).
    Keygen,
    /// Dashboard operators (who may sign in to the page under `/`).
    Operator {
        #[command(subcommand)]
        command: OperatorCommand,
    },
    /// Run the fake Meta Graph API alone (demos and tests only, never for a customer).
    FakeGraph {
        /// address:port to serve the fake on.
        #[arg(long, env = "RASTRO_FAKE_GRAPH_LISTEN", default_value = "127.0.0.1:8090")]
        listen: String,
    },
}

#[derive(Subcommand)]
enum OperatorCommand {
    /// Create an operator, or replace one's password, rights and owner. The
    /// password is asked for (or read from the first line of stdin).
    Add {
        /// The sign-in name (letters, digits, . _ - @).
        name: String,
        /// May change things (connect Meta, link, map events); without it, read only.
        #[arg(long)]
        configure: bool,
        /// The Meta owner key the operator acts for (the agency's).
        #[arg(long, default_value = rastrod::service::operators::DEFAULT_OWNER_KEY)]
        owner_key: String,
    },
}

/// mimalloc instead of glibc's malloc: a profile of the writer thread under
/// the tracker's load had a fifth of its time in glibc's malloc and free
/// (the statements' texts, binds and rows of every batch are short-lived
/// allocations of all sizes, and `malloc_consolidate` ran on them).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    let cli = Cli::parse();
    if matches!(cli.command, Command::Keygen) {
        return match rastrod::ids::secrets_key() {
            Ok(key) => {
                println!("{key}");
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("rastrod: {e}");
                ExitCode::FAILURE
            }
        };
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
                server::start(config, Arc::new(SystemClock), listener).await?.until_signal().await
            }
            Command::Keygen => Ok(()),
            Command::Operator { command: OperatorCommand::Add { name, configure, owner_key } } => {
                let password = read_password()?;
                let db = db::Db::open(&config.database_url, 1, 1, 1)?;
                let graph_url = config.meta_graph_url.clone();
                let cx =
                    rastrod::service::context::Context::new(db, Arc::new(SystemClock), Arc::new(config), &graph_url)?;
                let input = rastrod::service::operators::AddOperator {
                    name: name.clone(),
                    password,
                    can_configure: configure,
                    owner_key,
                };
                let created = rastrod::service::operators::add(&cx, SystemClock.now_ms(), input).await;
                cx.close();
                let verb = if created? { "created" } else { "updated (its sessions were signed out)" };
                let rights = if configure { "may configure" } else { "read only" };
                println!("operator {name} {verb}; {rights}");
                Ok(())
            }
            Command::Demo { no_agency } => {
                if config.host_api_keys.is_empty() {
                    let key = rastrod::ids::token()?;
                    println!("demo host key (RASTRO_HOST_API_KEY was not set): {key}");
                    config.host_api_keys = vec![Secret::new(key)];
                }
                // The demo always runs on the fake Graph API, never on Meta, with Lead Ads on.
                config.meta_fake = true;
                config.federation_meta_leads = true;
                if config.secrets_key.is_none() {
                    config.secrets_key = Some(demo::secrets_key(&config.data_dir)?);
                }
                let listener = server::bind(&config)?;
                // Seeded before the actors and the server start, as if the sample were there from a previous run.
                let listen = config.listen.clone();
                let seed = async |state: &rastrod::state::AppState| {
                    let now = SystemClock.now_ms();
                    let seeded = demo::run(state, now, !no_agency).await?;
                    tracing::info!(leads = seeded.leads, "demo seeded");
                    tracing::info!(events = seeded.events, "demo web analytics seeded (90 days)");
                    if !no_agency {
                        tracing::info!("demo agency connected, linked and synced; Loja X's pixel set");
                    }
                    if let Some(forms) = seeded.forms {
                        tracing::info!(
                            forms,
                            "demo Page linked with its forms and handler; form leads waiting at Meta"
                        );
                    }
                    let password = demo::operator(&state.cx, now).await?;
                    println!(
                        "dashboard: http://{listen}/  operator: {}  password: {}",
                        demo::DEMO_OPERATOR,
                        password.expose()
                    );
                    Ok(())
                };
                let server = server::start_with(config, Arc::new(SystemClock), listener, seed).await?;
                // A few visitors stay live on the demo sites while it serves (a
                // round every 15 s on the system clock), stopped with the daemon.
                let traffic = actix_web::rt::spawn(demo::traffic::run(server.state.cx.clone()));
                let outcome = server.until_signal().await;
                traffic.abort();
                outcome
            }
            Command::FakeGraph { listen } => run_fake_graph(&listen).await,
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

/// Serves the fake Graph until SIGINT or SIGTERM.
async fn run_fake_graph(listen: &str) -> rastrod::error::Result<()> {
    use rastrod::meta::fake;
    let io = |e: std::io::Error| rastrod::error::Error::unavailable(format!("fake graph on {listen}: {e}"));
    let graph = fake::start(listen).await.map_err(io)?;
    eprintln!("rastrod: WARNING: {}", fake::NEVER_FOR_CUSTOMERS);
    println!("fake Graph API listening on {} (version {})", graph.base_url, fake::GRAPH_VERSION);
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).map_err(io)?;
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term.recv() => {}
    }
    tracing::info!("fake graph: stopping");
    graph.stop().await;
    Ok(())
}

/// The new operator's password: asked on the terminal without echo, or the
/// first line of stdin when it is not a terminal (scripts, CI).
fn read_password() -> rastrod::error::Result<Secret> {
    use std::io::{BufRead, IsTerminal, Write};
    let stdin = std::io::stdin();
    let tty = stdin.is_terminal();
    let echo = |on: bool| {
        let _ = std::process::Command::new("stty").arg(if on { "echo" } else { "-echo" }).status();
    };
    if tty {
        eprint!("password: ");
        let _ = std::io::stderr().flush();
        echo(false);
    }
    let mut line = String::new();
    let read = stdin.lock().read_line(&mut line);
    if tty {
        echo(true);
        eprintln!();
    }
    read.map_err(|e| rastrod::error::Error::invalid(format!("reading the password: {e}")))?;
    let password = Secret::new(line.trim_end_matches(['\r', '\n']));
    rastrod::service::operators::password::check(&password)?;
    Ok(password)
}
