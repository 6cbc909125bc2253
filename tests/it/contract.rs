//! The OpenAPI document against the server: a bounded property-based run of
//! schemathesis (PyPI; `.ci/run` installs the pinned version) over
//! `/openapi.json` with every check on, a fixed seed and bounded examples.
//! It must find no server error and no contract failure. Where schemathesis
//! is not installed the test says it skipped (or fails: `skip_or_fail`). It is
//! in the slow tier (`slow_tests!`).
//!
//! `tests/schemathesis.toml` holds the run's settings and the few per-operation
//! allowances for rules JSON Schema cannot state (each with its reason).

use std::process::Command;
use std::time::Duration;

use crate::common::*;

/// Examples per operation and the run's wall-clock bound.
const MAX_EXAMPLES: &str = "10";
const TIME_BOUND: Duration = Duration::from_secs(300);

fn schemathesis() -> Option<String> {
    let bin = std::env::var("RASTRO_SCHEMATHESIS").unwrap_or_else(|_| "schemathesis".into());
    let ok = Command::new(&bin).arg("--version").output().is_ok_and(|o| o.status.success());
    ok.then_some(bin)
}

// rule: LEAD-10
async fn the_openapi_document_holds_against_the_server() {
    slow_tier("runs schemathesis");
    let Some(bin) = schemathesis() else {
        skip_or_fail(
            "schemathesis, which checks /openapi.json against the server, is not installed",
            "python3 -m pip install schemathesis==4.32.5 (the version .ci/run pins)",
        );
        return;
    };
    let app = crate::common::fake_meta_builder(Backend::Sqlite).start().await.unwrap();
    app.site("s1").await;
    // The site of the document's example calls, with a visit on their day, so
    // the examples answer real rows and their answers meet their schemas.
    crate::analytics::site(&app, rastrod::http::openapi_functions::EXAMPLE_SITE, false).await;
    assert_eq!(T0 - T0 % 86_400_000, rastrod::http::openapi_functions::EXAMPLE_DAY, "the examples' day is the clock's");
    let visit = vec![crate::analytics::pageview("1", "/produto/a"), crate::analytics::pageview("2", "/checkout")];
    crate::analytics::track(&app, "loja", "v_example01", visit).await;
    crate::analytics::drain(&app).await;
    let config = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/schemathesis.toml");
    let report = std::env::temp_dir().join(format!("rastrod-schemathesis-{}", std::process::id()));
    std::fs::create_dir_all(&report).unwrap();
    let log = report.join("output.txt");
    let mut child = Command::new(bin)
        .args(["--no-color", "--config-file", config, "run", &format!("{}/openapi.json", app.base)])
        .args(["--checks", "all", "--seed", "20261201", "--max-examples", MAX_EXAMPLES, "--workers", "1"])
        .args(["--no-shrink", "-H", &format!("Authorization: Bearer {HOST_KEY}")])
        .arg("--report-dir")
        .arg(&report)
        // Its cache folder goes there too, not into the repository.
        .current_dir(&report)
        .stdout(std::fs::File::create(&log).unwrap())
        .stderr(std::process::Stdio::inherit())
        .spawn()
        .expect("starting schemathesis");
    // The server runs on this thread: wait for the child without blocking it.
    let started = std::time::Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > TIME_BOUND {
            let _ = child.kill();
            panic!("schemathesis ran past its time bound of {TIME_BOUND:?}");
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    let text = std::fs::read_to_string(&log).unwrap_or_default();
    let _ = std::fs::remove_dir_all(&report);
    assert!(status.success(), "schemathesis found failures:\n{text}");
    eprintln!("{}", text.lines().rev().take(12).collect::<Vec<_>>().into_iter().rev().collect::<Vec<_>>().join("\n"));
    app.finish().await;
}

crate::slow_tests!(the_openapi_document_holds_against_the_server);
