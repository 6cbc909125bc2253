//! A tiny WebDriver client over reqwest, enough to drive Debian's chromium
//! through chromedriver: sessions, navigation, elements, scripts, windows and
//! screenshots. `Browser::start` answers None (and says so) when chromium or
//! chromedriver is missing, so the browser tests skip on a bare machine, unless
//! `RASTRO_TEST_REQUIRE_ALL=1` makes them fail (`common::skip_or_fail`).

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

const ELEMENT: &str = "element-6066-11e4-a52e-4f735466cecf";

fn which(candidates: &[&str]) -> Option<String> {
    candidates.iter().find(|p| std::path::Path::new(p).exists()).map(|p| p.to_string())
}

pub struct Browser {
    driver: Child,
    base: String,
    session: String,
    http: reqwest::Client,
}

#[derive(Clone)]
pub struct Element(String);

impl Browser {
    /// Starts chromedriver and a headless chromium session, or None with a note.
    pub async fn start() -> Option<Browser> {
        Browser::start_with(&[]).await
    }

    /// `start` with more chromium switches (the tracker's tests hide the
    /// automation markers and give a desktop user agent).
    pub async fn start_with(extra: &[&str]) -> Option<Browser> {
        Browser::start_with_prefs(extra, json!({})).await
    }

    /// `start_with` and Chrome's preferences (`prefs`), such as JavaScript
    /// blocked on every page.
    pub async fn start_with_prefs(extra: &[&str], prefs: Value) -> Option<Browser> {
        crate::common::slow_tier("starts a browser");
        let chromium = which(&["/usr/bin/chromium", "/usr/bin/chromium-browser"]);
        let driver = which(&["/usr/bin/chromedriver", "/usr/lib/chromium/chromedriver"]);
        let (Some(chromium), Some(driver)) = (chromium, driver) else {
            crate::common::skip_or_fail(
                "chromium and chromedriver, which the browser tests drive, are not installed",
                "apt-get install chromium chromium-driver",
            );
            return None;
        };
        let port = crate::common::free_port();
        let child = Command::new(driver)
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("starting chromedriver");
        let base = format!("http://127.0.0.1:{port}");
        let http = reqwest::Client::new();
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if let Ok(r) = http.get(format!("{base}/status")).send().await
                && r.status().is_success()
            {
                break;
            }
            assert!(Instant::now() < deadline, "chromedriver did not come up");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let mut args = vec![
            "--headless=new",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--window-size=1280,1000",
            "--lang=pt-BR",
            "--disable-popup-blocking",
        ];
        args.extend_from_slice(extra);
        let caps = json!({"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "goog:chromeOptions": {"binary": chromium, "args": args, "excludeSwitches": ["enable-automation"], "prefs": prefs}
        }}});
        let res: Value = http.post(format!("{base}/session")).json(&caps).send().await.unwrap().json().await.unwrap();
        let session = res["value"]["sessionId"].as_str().unwrap_or_else(|| panic!("no session: {res}")).to_string();
        let mut b = Browser { driver: child, base, session, http };
        b.base = format!("{}/session/{}", b.base, b.session);
        Some(b)
    }

    async fn cmd(&self, method: &str, path: &str, body: Option<Value>) -> Value {
        let url = format!("{}{path}", self.base);
        let req = match method {
            "GET" => self.http.get(url),
            "DELETE" => self.http.delete(url),
            _ => self.http.post(url).json(&body.unwrap_or(json!({}))),
        };
        let v: Value = req.send().await.unwrap().json().await.unwrap();
        if let Some(err) = v["value"]["error"].as_str() {
            panic!("webdriver {method} {path}: {err}: {}", v["value"]["message"]);
        }
        v["value"].clone()
    }

    pub async fn goto(&self, url: &str) {
        self.cmd("POST", "/url", Some(json!({"url": url}))).await;
    }

    /// The page's address now.
    pub async fn url(&self) -> String {
        self.cmd("GET", "/url", None).await.as_str().unwrap_or_default().to_string()
    }

    /// The browser's Back button.
    pub async fn back(&self) {
        self.cmd("POST", "/back", None).await;
    }

    /// Reloads the page.
    pub async fn refresh(&self) {
        self.cmd("POST", "/refresh", None).await;
    }

    /// The window's size in CSS pixels (a phone is 390 × 844).
    pub async fn resize(&self, width: u32, height: u32) {
        self.cmd("POST", "/window/rect", Some(json!({"width": width, "height": height}))).await;
    }

    /// `prefers-color-scheme` as the page sees it, through Chrome's DevTools protocol.
    pub async fn color_scheme(&self, dark: bool) {
        let scheme = if dark { "dark" } else { "light" };
        let params = json!({"features": [{"name": "prefers-color-scheme", "value": scheme}]});
        self.cmd("POST", "/goog/cdp/execute", Some(json!({"cmd": "Emulation.setEmulatedMedia", "params": params})))
            .await;
    }

    /// A command of Chrome's DevTools protocol, on the current page.
    pub async fn cdp(&self, cmd: &str, params: Value) -> Value {
        self.cmd("POST", "/goog/cdp/execute", Some(json!({"cmd": cmd, "params": params}))).await
    }

    /// A finger's tap on `css`: a touch pointer down and up on the
    /// element's centre, which the page gets as touch events and a click.
    pub async fn tap(&self, css: &str) {
        let e = self.find(css).await;
        let finger = json!({"type": "pointer", "id": "finger", "parameters": {"pointerType": "touch"}, "actions": [
            {"type": "pointerMove", "duration": 0, "origin": {ELEMENT: e.0}, "x": 0, "y": 0},
            {"type": "pointerDown", "button": 0},
            {"type": "pause", "duration": 40},
            {"type": "pointerUp", "button": 0},
        ]});
        self.cmd("POST", "/actions", Some(json!({"actions": [finger]}))).await;
        self.cmd("DELETE", "/actions", None).await;
    }

    pub async fn find(&self, css: &str) -> Element {
        self.wait_for(css).await;
        let v = self.cmd("POST", "/element", Some(json!({"using": "css selector", "value": css}))).await;
        Element(v[ELEMENT].as_str().unwrap().to_string())
    }

    pub async fn click(&self, css: &str) {
        let e = self.find(css).await;
        self.cmd("POST", &format!("/element/{}/click", e.0), None).await;
    }

    pub async fn type_into(&self, css: &str, text: &str) {
        let e = self.find(css).await;
        self.cmd("POST", &format!("/element/{}/clear", e.0), None).await;
        self.cmd("POST", &format!("/element/{}/value", e.0), Some(json!({"text": text}))).await;
    }

    /// Keys sent to a focusable element as they are (WebDriver's key codes
    /// for the arrows, Home and End), without clearing it first.
    pub async fn keys(&self, css: &str, text: &str) {
        let e = self.find(css).await;
        self.cmd("POST", &format!("/element/{}/value", e.0), Some(json!({"text": text}))).await;
    }

    pub async fn select(&self, css: &str, value: &str) {
        self.wait_for(css).await;
        let script = "var s=document.querySelector(arguments[0]);s.value=arguments[1];\
                      s.dispatchEvent(new Event('change',{bubbles:true}));return s.value;";
        let v = self.js(script, json!([css, value])).await;
        assert_eq!(v, json!(value), "{css} has no option {value}");
    }

    pub async fn js(&self, script: &str, args: Value) -> Value {
        self.cmd("POST", "/execute/sync", Some(json!({"script": script, "args": args}))).await
    }

    pub async fn js_async(&self, script: &str, args: Value) -> Value {
        self.cmd("POST", "/execute/async", Some(json!({"script": script, "args": args}))).await
    }

    pub async fn text(&self, css: &str) -> String {
        self.wait_for(css).await;
        let v = self.js("return document.querySelector(arguments[0]).textContent.trim();", json!([css])).await;
        v.as_str().unwrap_or("").to_string()
    }

    /// Waits (bounded, 15 s) until `css` matches an element: the page renders after its fetches answer.
    pub async fn wait_for(&self, css: &str) {
        self.wait_until(&format!("{css} to appear"), "return !!document.querySelector(arguments[0]);", json!([css]))
            .await;
    }

    pub async fn wait_until(&self, what: &str, script: &str, args: Value) {
        let deadline = Instant::now() + Duration::from_secs(15);
        loop {
            if self.js(script, args.clone()).await == json!(true) {
                return;
            }
            if Instant::now() > deadline {
                let page = self.js("return document.body.innerText;", json!([])).await;
                panic!("timed out waiting for {what}; the page reads:\n{}", page.as_str().unwrap_or(""));
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    pub async fn windows(&self) -> Vec<String> {
        let v = self.cmd("GET", "/window/handles", None).await;
        v.as_array().unwrap().iter().map(|h| h.as_str().unwrap().to_string()).collect()
    }

    pub async fn window(&self) -> String {
        self.cmd("GET", "/window", None).await.as_str().unwrap().to_string()
    }

    pub async fn switch_to(&self, handle: &str) {
        self.cmd("POST", "/window", Some(json!({"handle": handle}))).await;
    }

    pub async fn screenshot(&self, path: &std::path::Path) {
        use base64::Engine;
        let v = self.cmd("GET", "/screenshot", None).await;
        let png = base64::engine::general_purpose::STANDARD.decode(v.as_str().unwrap()).unwrap();
        std::fs::write(path, png).unwrap();
    }

    /// Runs axe-core (from tests/browser/node_modules, pinned by its lockfile)
    /// on the page; answers the serious and critical violations, or None when
    /// axe-core is not installed (`npm ci --prefix tests/browser`).
    pub async fn axe(&self) -> Option<Vec<String>> {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/browser/node_modules/axe-core/axe.min.js");
        let Ok(source) = std::fs::read_to_string(path) else {
            crate::common::skip_or_fail(
                "axe-core, which checks each screen's accessibility, is not installed",
                "npm ci --prefix tests/browser --ignore-scripts",
            );
            return None;
        };
        self.js(&format!("{source}\n;return true;"), json!([])).await;
        let script = "var done=arguments[arguments.length-1];\
            axe.run(document,{resultTypes:['violations']}).then(function(r){done(r.violations\
            .filter(function(v){return v.impact==='serious'||v.impact==='critical';})\
            .map(function(v){return v.id+': '+v.help+' ('+v.nodes.map(function(n){return n.target.join(' ');}).join(', ')+')';}));})\
            .catch(function(e){done(['axe failed: '+e]);});";
        let v = self.js_async(script, json!([])).await;
        Some(v.as_array().unwrap().iter().map(|s| s.as_str().unwrap_or("").to_string()).collect())
    }

    pub async fn quit(mut self) {
        let _ = self.http.delete(self.base.clone()).send().await;
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = self.driver.kill();
    }
}
