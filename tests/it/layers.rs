//! The module map holds: no file of `src/` imports a file that (directly or
//! through others) imports it back, and no lower layer imports a higher one
//! (the list below). Imports are read from the sources (`crate::`, `super::`
//! and `self::` paths, `use` groups one level deep), each resolved to the
//! longest module path that is a file; test modules are left out.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// (importing module prefix, imported module prefix): never allowed.
const FORBIDDEN: &[(&str, &str)] = &[
    ("federation", "http"),
    ("state", "http"),
    ("config", "service"),
    ("crypto", "config"),
    ("meta::fake", "service"),
    ("http", "store"),
    ("http", "meta::fake"),
    ("service", "http"),
    ("service", "state"),
    ("service", "actors"),
    ("service", "federation"),
    ("service", "server"),
    ("store", "service"),
    ("store", "http"),
    ("db", "service"),
    ("service::sites", "service::leads"),
    ("service::sites", "service::meta"),
    ("service::sites", "service::analytics"),
];

type Module = Vec<String>;

fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            if path.file_name().is_some_and(|n| n != "bin") {
                sources(&path, out);
            }
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// A file's module path (`service/api/mod.rs` is `service::api`).
fn module_of(src: &Path, file: &Path) -> Module {
    let rel = file.strip_prefix(src).unwrap().with_extension("");
    let mut parts: Module = rel.iter().map(|p| p.to_string_lossy().into_owned()).collect();
    if matches!(parts.last().map(String::as_str), Some("mod" | "lib" | "main")) {
        parts.pop();
    }
    parts
}

/// The file's code without comments and without its test module.
fn code(text: &str) -> String {
    let text = text.split("#[cfg(test)]\nmod tests").next().unwrap_or_default();
    text.lines().map(|l| l.split("//").next().unwrap_or_default()).collect::<Vec<_>>().join("\n")
}

/// Every path the code names from `crate::`, `super::` or `self::`, as
/// segments after the anchor's module.
fn paths(code: &str, module: &Module) -> Vec<Module> {
    let mut out = Vec::new();
    let bytes = code.as_bytes();
    for anchor in ["crate::", "super::", "self::"] {
        let mut from = 0;
        while let Some(found) = code[from..].find(anchor) {
            let at = from + found;
            from = at + anchor.len();
            let before = if at == 0 { b' ' } else { bytes[at - 1] };
            if before.is_ascii_alphanumeric() || before == b'_' || before == b':' {
                continue;
            }
            let rest = &code[at + anchor.len()..];
            let len = rest.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == ':')).unwrap_or(rest.len());
            let mut path: Module = rest[..len].split("::").filter(|s| !s.is_empty()).map(str::to_string).collect();
            let mut start = match anchor {
                "crate::" => Vec::new(),
                "super::" => module[..module.len().saturating_sub(1)].to_vec(),
                _ => module.clone(),
            };
            while path.first().is_some_and(|s| s == "super") {
                path.remove(0);
                start.pop();
            }
            let head: Module = start.into_iter().chain(path).collect();
            if rest[len..].starts_with('{') {
                let group = &rest[len + 1..rest[len..].find('}').map_or(rest.len(), |e| len + e)];
                for item in group.split(',') {
                    let item = item.split(" as ").next().unwrap_or_default().trim();
                    if item.is_empty() || item == "self" {
                        continue;
                    }
                    let segments = item.split("::").map(|s| s.trim_matches(|c| c == '{' || c == ' ').to_string());
                    out.push(head.iter().cloned().chain(segments).collect());
                }
            }
            out.push(head);
        }
    }
    out
}

fn graph() -> BTreeMap<Module, BTreeSet<Module>> {
    let src = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    sources(&src, &mut files);
    let modules: BTreeMap<Module, PathBuf> = files.iter().map(|f| (module_of(&src, f), f.clone())).collect();
    let mut edges = BTreeMap::new();
    for (module, file) in &modules {
        let text = code(&std::fs::read_to_string(file).unwrap());
        let mut deps = BTreeSet::new();
        for path in paths(&text, module) {
            let target = (1..=path.len()).rev().map(|n| path[..n].to_vec()).find(|p| modules.contains_key(p));
            if let Some(t) = target.filter(|t| t != module) {
                deps.insert(t);
            }
        }
        edges.insert(module.clone(), deps);
    }
    edges
}

fn name(m: &Module) -> String {
    m.join("::")
}

fn under(m: &Module, prefix: &str) -> bool {
    let p: Vec<&str> = prefix.split("::").collect();
    m.len() >= p.len() && m.iter().zip(&p).all(|(a, b)| a == b)
}

#[test]
fn no_lower_layer_imports_a_higher_one() {
    let mut wrong = Vec::new();
    for (from, deps) in graph() {
        for to in deps {
            for (a, b) in FORBIDDEN {
                if under(&from, a) && under(&to, b) {
                    wrong.push(format!("{} -> {} ({a} must not import {b})", name(&from), name(&to)));
                }
            }
        }
    }
    assert!(wrong.is_empty(), "imports against the layers:\n{}", wrong.join("\n"));
}

#[test]
fn no_file_imports_itself_through_others() {
    let edges = graph();
    // Tarjan's strongly connected components, iteratively small enough to recurse.
    struct T<'a> {
        edges: &'a BTreeMap<Module, BTreeSet<Module>>,
        index: BTreeMap<&'a Module, usize>,
        low: BTreeMap<&'a Module, usize>,
        stack: Vec<&'a Module>,
        on: BTreeSet<&'a Module>,
        cycles: Vec<Vec<String>>,
    }
    impl<'a> T<'a> {
        fn visit(&mut self, v: &'a Module) {
            let n = self.index.len();
            self.index.insert(v, n);
            self.low.insert(v, n);
            self.stack.push(v);
            self.on.insert(v);
            for w in &self.edges[v] {
                if !self.index.contains_key(w) {
                    self.visit(w);
                    let lw = self.low[w];
                    let lv = self.low.get_mut(v).unwrap();
                    *lv = (*lv).min(lw);
                } else if self.on.contains(w) {
                    let iw = self.index[w];
                    let lv = self.low.get_mut(v).unwrap();
                    *lv = (*lv).min(iw);
                }
            }
            if self.low[v] == self.index[v] {
                let mut component = Vec::new();
                while let Some(w) = self.stack.pop() {
                    self.on.remove(w);
                    component.push(name(w));
                    if w == v {
                        break;
                    }
                }
                if component.len() > 1 {
                    component.sort();
                    self.cycles.push(component);
                }
            }
        }
    }
    let mut t = T {
        edges: &edges,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on: BTreeSet::new(),
        cycles: Vec::new(),
    };
    for v in edges.keys() {
        if !t.index.contains_key(v) {
            t.visit(v);
        }
    }
    // Each cycle with the imports that close it, so the fix is plain.
    let listed: Vec<String> = t
        .cycles
        .iter()
        .map(|c| {
            let inside: Vec<String> = edges
                .iter()
                .filter(|(from, _)| c.contains(&name(from)))
                .flat_map(|(from, deps)| {
                    deps.iter()
                        .filter(|d| c.contains(&name(d)))
                        .map(move |d| format!("  {} -> {}", name(from), name(d)))
                })
                .collect();
            format!("{}\n{}", c.join(" <-> "), inside.join("\n"))
        })
        .collect();
    assert!(listed.is_empty(), "files that import each other:\n{}", listed.join("\n"));
}

#[test]
fn the_checker_sees_an_import_and_a_cycle() {
    // The reader itself: a `use` group and a `super::` path resolve to files.
    let m: Module = vec!["service".into(), "api".into(), "dispatch".into()];
    let found = paths("use super::caller::Caller;\nuse crate::service::{leads, meta::api};", &m);
    assert!(found.contains(&vec!["service".to_string(), "api".into(), "caller".into(), "Caller".into()]));
    assert!(found.contains(&vec!["service".to_string(), "meta".into(), "api".into()]));
    let g = graph();
    let api = vec!["service".to_string(), "api".into(), "dispatch".into()];
    assert!(g[&api].contains(&vec!["service".to_string(), "api".into(), "caller".into()]), "{:?}", g[&api]);
}
