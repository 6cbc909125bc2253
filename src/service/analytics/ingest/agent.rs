//! The User-Agent: bot or not, and the browser, OS and device class behind
//! closed vocabularies (TRK-18, TRK-19, TRK-34). The raw string is never stored.
//!
//! Woothee (a maintained, regex-free port of Project Woothee's dataset)
//! names the browser, OS and category; a few markers it predates (Edge's
//! `Edg/`, Samsung Internet, Instagram's and Facebook's in-app browsers,
//! iPadOS) are read first. Bots are our own must-be list plus woothee's
//! crawler detection.

use std::collections::HashMap;
use std::sync::Mutex;

use serde::Serialize;

/// Substrings that make a User-Agent a bot (§3.5's must-be list, and the
/// headless browsers and link-preview fetchers beside them).
const BOT_MARKERS: &[&str] = &[
    "curl/",
    "Wget/",
    "python-requests/",
    "python-urllib",
    "aiohttp/",
    "Go-http-client/",
    "okhttp/",
    "axios/",
    "node-fetch",
    "HeadlessChrome",
    "PhantomJS",
    "Googlebot",
    "bingbot",
    "facebookexternalhit",
    "facebookcatalog",
    "WhatsApp/",
    "TelegramBot",
    "Slackbot",
    "Twitterbot",
    "LinkedInBot",
    "Discordbot",
    "Applebot",
    "YandexBot",
    "DuckDuckBot",
    "Baiduspider",
    "AhrefsBot",
    "SemrushBot",
    "MJ12bot",
    "PetalBot",
    "GPTBot",
    "ClaudeBot",
    "bot/",
    "spider",
    "crawler",
    "Lighthouse",
];

/// Empty, on the list, or a crawler by woothee.
pub fn is_bot(ua: &str) -> bool {
    let ua = ua.trim();
    if ua.is_empty() {
        return true;
    }
    let lower = ua.to_ascii_lowercase();
    BOT_MARKERS.iter().any(|m| lower.contains(&m.to_ascii_lowercase())) || woothee::is_crawler(ua)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Device {
    Mobile,
    Tablet,
    Desktop,
}

impl Device {
    pub fn as_str(self) -> &'static str {
        match self {
            Device::Mobile => "mobile",
            Device::Tablet => "tablet",
            Device::Desktop => "desktop",
        }
    }

    pub fn parse(s: &str) -> Option<Device> {
        match s {
            "mobile" => Some(Device::Mobile),
            "tablet" => Some(Device::Tablet),
            "desktop" => Some(Device::Desktop),
            _ => None,
        }
    }
}

/// The closed vocabularies of §3.5.
pub const BROWSERS: &[&str] =
    &["Chrome", "Safari", "Firefox", "Edge", "Opera", "Samsung Internet", "Facebook", "Instagram"];
pub const OSES: &[&str] = &["Android", "iOS", "Windows", "macOS", "Linux", "ChromeOS"];

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Agent {
    pub browser: Option<&'static str>,
    pub os: Option<&'static str>,
    pub device: Option<Device>,
}

fn browser_of(ua: &str, parsed: Option<&woothee::parser::WootheeResult<'_>>) -> Option<&'static str> {
    if ua.contains("Instagram") {
        return Some("Instagram");
    }
    if ua.contains("FBAN/") || ua.contains("FBAV/") || ua.contains("FB_IAB") {
        return Some("Facebook");
    }
    if ua.contains("SamsungBrowser/") {
        return Some("Samsung Internet");
    }
    if ua.contains("Edg/") || ua.contains("EdgA/") || ua.contains("EdgiOS/") || ua.contains("Edge/") {
        return Some("Edge");
    }
    if ua.contains("OPR/") || ua.contains("Opera") {
        return Some("Opera");
    }
    if ua.contains("Firefox/") || ua.contains("FxiOS/") {
        return Some("Firefox");
    }
    if ua.contains("CriOS/") {
        return Some("Chrome");
    }
    match parsed.map(|p| p.name) {
        Some("Chrome") => Some("Chrome"),
        Some("Safari") => Some("Safari"),
        Some("Firefox") => Some("Firefox"),
        Some("Edge") => Some("Edge"),
        Some("Opera") => Some("Opera"),
        _ if ua.contains("Chrome/") => Some("Chrome"),
        _ if ua.contains("Safari/") && ua.contains("Version/") => Some("Safari"),
        _ => None,
    }
}

fn os_of(ua: &str, parsed: Option<&woothee::parser::WootheeResult<'_>>) -> Option<&'static str> {
    if ua.contains("Android") {
        return Some("Android");
    }
    if ua.contains("iPhone") || ua.contains("iPad") || ua.contains("iPod") {
        return Some("iOS");
    }
    if ua.contains("CrOS") {
        return Some("ChromeOS");
    }
    if ua.contains("Windows") {
        return Some("Windows");
    }
    if ua.contains("Macintosh") || ua.contains("Mac OS X") {
        return Some("macOS");
    }
    if ua.contains("Linux") || ua.contains("X11") {
        return Some("Linux");
    }
    match parsed.map(|p| p.os) {
        Some(os) if os.starts_with("Windows") => Some("Windows"),
        Some("Mac OSX") => Some("macOS"),
        Some("Linux") => Some("Linux"),
        _ => None,
    }
}

fn device_of(ua: &str, os: Option<&str>, parsed: Option<&woothee::parser::WootheeResult<'_>>) -> Option<Device> {
    if ua.contains("iPad") || ua.contains("Tablet") || (ua.contains("Android") && !ua.contains("Mobile")) {
        return Some(Device::Tablet);
    }
    if ua.contains("Mobi") || ua.contains("iPhone") || ua.contains("iPod") {
        return Some(Device::Mobile);
    }
    // iPadOS in desktop mode says Macintosh: it counts as desktop (§3.5).
    match (os, parsed.map(|p| p.category)) {
        (Some("Windows" | "macOS" | "Linux" | "ChromeOS"), _) => Some(Device::Desktop),
        (_, Some("pc")) => Some(Device::Desktop),
        (_, Some("smartphone" | "mobilephone")) => Some(Device::Mobile),
        _ => None,
    }
}

/// Browser, OS and device class of a (non-bot) User-Agent.
pub fn classify(ua: &str) -> Agent {
    let parser = woothee::parser::Parser::new();
    let parsed = parser.parse(ua);
    let os = os_of(ua, parsed.as_ref());
    Agent { browser: browser_of(ua, parsed.as_ref()), os, device: device_of(ua, os, parsed.as_ref()) }
}

/// User-Agents this process has classified. A browser sends the same string
/// with every request and a site's visitors share a few hundred, so each is
/// parsed once (Plausible keeps such a cache too). Bounded: past
/// [`MAX_SEEN`] strings the map starts over, and a string longer than
/// [`MAX_SEEN_LEN`] is classified every time rather than kept. Memory only:
/// nothing here is logged or counted.
#[derive(Default)]
pub struct Seen {
    agents: Mutex<HashMap<Box<str>, Option<Agent>>>,
}

const MAX_SEEN: usize = 4096;
const MAX_SEEN_LEN: usize = 512;

impl Seen {
    /// None for a bot ([`is_bot`]); otherwise [`classify`]'s answer.
    pub fn of(&self, ua: &str) -> Option<Agent> {
        let lock = || self.agents.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(a) = lock().get(ua) {
            return a.clone();
        }
        let agent = (!is_bot(ua)).then(|| classify(ua));
        if ua.len() <= MAX_SEEN_LEN {
            let mut agents = lock();
            if agents.len() >= MAX_SEEN {
                agents.clear();
            }
            agents.insert(ua.into(), agent.clone());
        }
        agent
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.agents.lock().unwrap().len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CHROME_WIN: &str = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36";
    const CHROME_ANDROID: &str = "Mozilla/5.0 (Linux; Android 10; K) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Mobile Safari/537.36";
    const SAFARI_MAC: &str = "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.1 Safari/605.1.15";
    const SAFARI_IPHONE: &str = "Mozilla/5.0 (iPhone; CPU iPhone OS 18_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.1 Mobile/15E148 Safari/604.1";
    const FIREFOX_LINUX: &str = "Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0";
    const FIREFOX_ANDROID: &str = "Mozilla/5.0 (Android 14; Mobile; rv:133.0) Gecko/133.0 Firefox/133.0";
    const EDGE_WIN: &str = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36 Edg/131.0.2903.70";
    const SAMSUNG: &str = "Mozilla/5.0 (Linux; Android 14; SAMSUNG SM-S921B) AppleWebKit/537.36 (KHTML, like Gecko) SamsungBrowser/27.0 Chrome/125.0.0.0 Mobile Safari/537.36";
    const IPAD: &str = "Mozilla/5.0 (iPad; CPU OS 18_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.1 Mobile/15E148 Safari/604.1";
    const INSTAGRAM: &str = "Mozilla/5.0 (iPhone; CPU iPhone OS 18_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Mobile/15E148 Instagram 357.0.0.25.101 (iPhone15,2; iOS 18_1; pt_BR; pt; scale=3.00; 1179x2556; 659312405)";

    // rule: TRK-18
    #[test]
    fn the_must_be_list_is_bots() {
        for ua in [
            "",
            "curl/8.5.0",
            "Wget/1.21.4",
            "python-requests/2.32.3",
            "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) HeadlessChrome/131.0.0.0 Safari/537.36",
            "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)",
            "Mozilla/5.0 (compatible; bingbot/2.0; +http://www.bing.com/bingbot.htm)",
            "facebookexternalhit/1.1 (+http://www.facebook.com/externalhit_uatext.php)",
            "WhatsApp/2.23.20.0",
            "TelegramBot (like TwitterBot)",
            "Slackbot-LinkExpanding 1.0 (+https://api.slack.com/robots)",
            "Twitterbot/1.0",
            "LinkedInBot/1.0 (compatible; Mozilla/5.0; Apache-HttpClient +http://www.linkedin.com)",
            "Mozilla/5.0 (compatible; Discordbot/2.0; +https://discordapp.com)",
        ] {
            assert!(is_bot(ua), "{ua:?} must be a bot");
        }
    }

    // rule: TRK-19
    #[test]
    fn the_must_not_list_is_people() {
        for ua in [
            CHROME_WIN,
            CHROME_ANDROID,
            SAFARI_MAC,
            SAFARI_IPHONE,
            FIREFOX_LINUX,
            FIREFOX_ANDROID,
            EDGE_WIN,
            SAMSUNG,
            IPAD,
        ] {
            assert!(!is_bot(ua), "{ua} is a person");
        }
    }

    // rule: TRK-34
    #[test]
    fn browsers_oses_and_devices_come_from_closed_lists() {
        let cases = [
            (CHROME_WIN, Some("Chrome"), Some("Windows"), Some(Device::Desktop)),
            (CHROME_ANDROID, Some("Chrome"), Some("Android"), Some(Device::Mobile)),
            (SAFARI_MAC, Some("Safari"), Some("macOS"), Some(Device::Desktop)),
            (SAFARI_IPHONE, Some("Safari"), Some("iOS"), Some(Device::Mobile)),
            (FIREFOX_LINUX, Some("Firefox"), Some("Linux"), Some(Device::Desktop)),
            (EDGE_WIN, Some("Edge"), Some("Windows"), Some(Device::Desktop)),
            (SAMSUNG, Some("Samsung Internet"), Some("Android"), Some(Device::Mobile)),
            (IPAD, Some("Safari"), Some("iOS"), Some(Device::Tablet)),
            (INSTAGRAM, Some("Instagram"), Some("iOS"), Some(Device::Mobile)),
            ("SomethingElse/1.0", None, None, None),
        ];
        for (ua, browser, os, device) in cases {
            let a = classify(ua);
            assert_eq!((a.browser, a.os, a.device), (browser, os, device), "{ua}");
            assert!(a.browser.is_none_or(|b| BROWSERS.contains(&b)));
            assert!(a.os.is_none_or(|o| OSES.contains(&o)));
        }
    }

    // rule: TRK-18, TRK-34
    #[test]
    fn a_seen_agent_answers_as_a_fresh_classification_and_the_cache_stays_bounded() {
        let seen = Seen::default();
        for ua in [CHROME_WIN, SAMSUNG, IPAD, INSTAGRAM, "curl/8.5.0", "", "Twitterbot/1.0"] {
            let want = (!is_bot(ua)).then(|| classify(ua));
            assert_eq!(seen.of(ua), want, "{ua:?} first");
            assert_eq!(seen.of(ua), want, "{ua:?} again, from the cache");
        }
        assert_eq!(seen.len(), 7);
        let long = format!("{CHROME_WIN} {}", "x".repeat(MAX_SEEN_LEN));
        assert_eq!(seen.of(&long), Some(classify(&long)));
        assert_eq!(seen.len(), 7, "a string past the length bound is not kept");
        for i in 0..MAX_SEEN + 10 {
            seen.of(&format!("Mozilla/5.0 Probe/{i}"));
        }
        assert!(seen.len() <= MAX_SEEN, "{}", seen.len());
    }
}
