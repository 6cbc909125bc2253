//! `docs/rules.md` against the code: every rule id the sources cite is listed
//! there, and every rule listed there is named by a test. The citation grammar
//! is the one the top of `docs/rules.md` states; `citations` implements it.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Where citations are looked for, relative to the repository.
const CITING: &[&str] = &["src", "tests", "assets", "tracker/src"];
/// This file: its ids are the grammar's examples, not citations.
const SELF: &str = "tests/it/rules_doc.rs";
/// The file kinds read there.
const KINDS: &[&str] = &["rs", "js", "mjs", "toml"];

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy();
        if path.is_dir() {
            // Installed packages are not ours.
            if name != "node_modules" {
                files(&path, out);
            }
        } else if path.extension().is_some_and(|e| KINDS.contains(&e.to_string_lossy().as_ref())) {
            out.push(path);
        }
    }
}

/// The line without its backtick spans: code in backticks is never a citation.
fn outside_backticks(line: &str) -> String {
    let parts: Vec<&str> = line.split('`').collect();
    let mut out = String::with_capacity(line.len());
    for (i, part) in parts.iter().enumerate() {
        // Odd parts sit between two backticks, unless the last one is unpaired.
        let code = i % 2 == 1 && i + 1 < parts.len();
        out.push_str(if code { " " } else { part });
    }
    out
}

/// An id `FAMILY-NN` starting at `at`, standing on its own: (family, number, end).
fn id_at(b: &[u8], at: usize) -> Option<(&str, u32, usize)> {
    let joined = |c: u8| c.is_ascii_alphanumeric() || c == b'_' || c == b'-';
    if at > 0 && joined(b[at - 1]) {
        return None;
    }
    let letters = b[at..].iter().take_while(|c| c.is_ascii_uppercase()).count();
    let dash = at + letters;
    if !(2..=6).contains(&letters) || b.get(dash) != Some(&b'-') {
        return None;
    }
    let digits = b.get(dash + 1..dash + 3)?;
    let end = dash + 3;
    if !digits.iter().all(u8::is_ascii_digit) || b.get(end).is_some_and(|c| c.is_ascii_alphanumeric()) {
        return None;
    }
    let family = std::str::from_utf8(&b[at..dash]).unwrap();
    let n = std::str::from_utf8(digits).unwrap().parse().unwrap();
    Some((family, n, end))
}

/// The rule ids a line cites, ranges (`X-01 to X-03`, `X-01..X-03`) and
/// slashes (`X-03/04`) spelled out.
fn citations(line: &str) -> Vec<String> {
    let text = outside_backticks(line);
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let Some((family, first, end)) = id_at(b, i) else {
            i += 1;
            continue;
        };
        let mut last = first;
        let mut next = end;
        for joiner in [" to ", "..", "–"] {
            if text[end..].starts_with(joiner)
                && let Some((f, n, e)) = id_at(b, end + joiner.len())
                && f == family
                && n > first
            {
                (last, next) = (n, e);
            }
        }
        out.extend((first..=last).map(|n| format!("{family}-{n:02}")));
        if b.get(end) == Some(&b'/')
            && let Some(d) = b.get(end + 1..end + 3)
            && d.iter().all(u8::is_ascii_digit)
            && !b.get(end + 3).is_some_and(|c| c.is_ascii_alphanumeric())
        {
            let n: u32 = std::str::from_utf8(d).unwrap().parse().unwrap();
            out.push(format!("{family}-{n:02}"));
            next = end + 3;
        }
        i = next;
    }
    out
}

/// For each line of a Rust file under `src/`, whether it is inside a
/// `#[cfg(test)]` module (rustfmt closes a module at its own indentation).
fn in_test_modules(source: &str) -> Vec<bool> {
    let mut out = Vec::new();
    let mut closing: Option<String> = None;
    let mut after_cfg_test = false;
    for line in source.lines() {
        let t = line.trim();
        match &closing {
            Some(end) => {
                out.push(true);
                if line == end {
                    closing = None;
                }
                continue;
            }
            None if t == "#[cfg(test)]" => after_cfg_test = true,
            None if after_cfg_test && t.starts_with("mod ") && t.ends_with('{') => {
                let indent = &line[..line.len() - line.trim_start().len()];
                closing = Some(format!("{indent}}}"));
                after_cfg_test = false;
                out.push(true);
                continue;
            }
            None if !t.starts_with("#[") => after_cfg_test = false,
            None => {}
        }
        out.push(false);
    }
    out
}

struct Scan {
    /// Each cited id and the first place citing it.
    cited: BTreeMap<String, String>,
    /// The ids a test names.
    tested: BTreeSet<String>,
}

fn scan() -> Scan {
    let root = root();
    let mut paths = Vec::new();
    for dir in CITING {
        files(&root.join(dir), &mut paths);
    }
    paths.sort();
    let mut scan = Scan { cited: BTreeMap::new(), tested: BTreeSet::new() };
    for path in paths {
        let rel = path.strip_prefix(&root).unwrap().to_string_lossy().into_owned();
        if rel == SELF {
            continue;
        }
        let source = std::fs::read_to_string(&path).unwrap();
        let test_file = rel.starts_with("tests/");
        let test_lines =
            if rel.starts_with("src/") && rel.ends_with(".rs") { in_test_modules(&source) } else { Vec::new() };
        for (n, line) in source.lines().enumerate() {
            let is_test = test_file || test_lines.get(n).copied().unwrap_or(false);
            for id in citations(line) {
                scan.cited.entry(id.clone()).or_insert_with(|| format!("{rel}:{}", n + 1));
                if is_test {
                    scan.tested.insert(id);
                }
            }
        }
    }
    scan
}

/// The ids `docs/rules.md` lists (`- ID what it guarantees`), each checked to
/// stand under its family's heading and to be listed once.
fn listed() -> BTreeSet<String> {
    let doc = std::fs::read_to_string(root().join("docs/rules.md")).expect("docs/rules.md");
    let mut ids = BTreeSet::new();
    let mut heading = String::new();
    for line in doc.lines() {
        if let Some(h) = line.strip_prefix("## ") {
            heading = h.split(':').next().unwrap().to_string();
            continue;
        }
        let Some(item) = line.strip_prefix("- ") else { continue };
        let Some((family, _, end)) = id_at(item.as_bytes(), 0) else { continue };
        let id = &item[..end];
        assert_eq!(family, heading, "docs/rules.md lists {id} under the heading {heading:?}");
        assert!(item[end..].trim().len() > 10, "docs/rules.md lists {id} without saying what it guarantees");
        assert!(ids.insert(id.to_string()), "docs/rules.md lists {id} twice");
    }
    ids
}

#[test]
fn the_citation_grammar() {
    assert_eq!(citations("// rule: TRK-20"), ["TRK-20"]);
    assert_eq!(citations("// rule: CAPI-08, CAPI-11, FAKE-06"), ["CAPI-08", "CAPI-11", "FAKE-06"]);
    assert_eq!(citations("keyed by site (rules OVR-13, PPL-05)."), ["OVR-13", "PPL-05"]);
    assert_eq!(citations("(rules ARPT-11 to ARPT-13) and"), ["ARPT-11", "ARPT-12", "ARPT-13"]);
    assert_eq!(citations("rules TRK-04..TRK-06."), ["TRK-04", "TRK-05", "TRK-06"]);
    assert_eq!(citations("is ignored (BOARD-03/04)."), ["BOARD-03", "BOARD-04"]);
    // Not citations: inside backticks, glued to other text, or not of the shape.
    assert!(citations("deflate blocks, `CRC-32`, Adler-32").is_empty());
    assert!(citations("\"fbclid-SECRET-CLICK-42\" X-1 ABCDEFG-12 TRK-123 TRK-12a").is_empty());
    // A range into another family is two ids, not a range.
    assert_eq!(citations("TRK-01 to SES-03"), ["TRK-01", "SES-03"]);
}

#[test]
fn cfg_test_modules_are_found() {
    let source = "fn a() {} // X\n#[cfg(test)]\nmod tests {\n    fn b() {\n    }\n}\nfn c() {}\n";
    assert_eq!(in_test_modules(source), [false, false, true, true, true, true, false]);
}

#[test]
fn every_cited_rule_is_listed_and_every_listed_rule_is_tested() {
    let scan = scan();
    let listed = listed();
    let unlisted: Vec<String> = scan
        .cited
        .iter()
        .filter(|(id, _)| !listed.contains(*id))
        .map(|(id, place)| format!("{id} (cited at {place})"))
        .collect();
    let untested: Vec<&String> = listed.iter().filter(|id| !scan.tested.contains(*id)).collect();
    assert!(
        unlisted.is_empty() && untested.is_empty(),
        "docs/rules.md and the sources disagree.\n\
         Cited but not listed in docs/rules.md (add a line for each): {unlisted:?}\n\
         Listed but named by no test (a citation in tests/ or a #[cfg(test)] module): {untested:?}"
    );
}
