//! The layers of src/ import one way only: kernels (pure arithmetic) <- ompi
//! (the boundary with Open MPI)
//! <- shm (the transport) <- coll (collectives over it) <- hier (hierarchy and
//! network algorithms) <- dispatch.  And no two modules import each other,
//! directly or around a circle.  Read from the source text, so a new import
//! against the grain fails here, with the offending file named.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Layers, lowest first; a module may import its own layer and lower ones.
const LAYERS: [&str; 6] = ["kernels", "ompi", "shm", "coll", "hier", "dispatch"];

/// Module path of a source file: "shm/queue.rs" -> "shm::queue".
fn module_of(rel: &Path) -> String {
    let s = rel.with_extension("").to_string_lossy().replace('/', "::");
    s.trim_end_matches("::mod").to_owned()
}

fn sources(dir: &Path, root: &Path, out: &mut Vec<(String, String)>) {
    for entry in std::fs::read_dir(dir).expect("src is readable") {
        let path = entry.expect("dir entry").path();
        if path.is_dir() {
            sources(&path, root, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            let rel = path.strip_prefix(root).expect("below src");
            out.push((
                module_of(rel),
                std::fs::read_to_string(&path).expect("utf-8"),
            ));
        }
    }
}

/// The crate modules a file names (`crate::a::b`, `crate::a::{b, c}`),
/// resolved to the longest known module path.
fn imports(text: &str, known: &BTreeSet<String>) -> BTreeSet<String> {
    // Comments (doc links included) are not imports.
    let code: String = text
        .lines()
        .map(|l| l.split("//").next().unwrap_or(""))
        .collect::<Vec<_>>()
        .join("\n");
    let text = code.as_str();
    let mut out = BTreeSet::new();
    for (i, _) in text.match_indices("crate::") {
        let rest = &text[i + "crate::".len()..];
        let end = rest
            .find(|c: char| {
                !(c.is_alphanumeric() || c == '_' || c == ':' || c == '{' || c == ',' || c == ' ')
            })
            .unwrap_or(rest.len());
        let path = &rest[..end];
        let (prefix, group) = match path.split_once('{') {
            Some((p, g)) => (p.trim_end_matches("::"), Some(g)),
            None => (path.trim_end_matches("::"), None),
        };
        let mut candidates = vec![prefix.to_owned()];
        if let Some(g) = group {
            for item in g.split(',') {
                let item = item.trim().split(" as ").next().unwrap_or("").trim();
                if !item.is_empty() && item != "self" {
                    candidates.push(format!("{prefix}::{item}"));
                }
            }
        }
        for c in candidates {
            // The longest prefix that is a module.
            let parts: Vec<&str> = c.split("::").collect();
            for n in (1..=parts.len()).rev() {
                let m = parts[..n].join("::");
                if known.contains(&m) {
                    out.insert(m);
                    break;
                }
            }
        }
    }
    out
}

fn layer(module: &str) -> Option<usize> {
    let top = module.split("::").next()?;
    LAYERS.iter().position(|l| *l == top)
}

#[test]
fn imports_point_down_the_layers_and_form_no_circle() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    sources(&root, &root, &mut files);
    let known: BTreeSet<String> = files.iter().map(|(m, _)| m.clone()).collect();
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut wrong = Vec::new();
    for (module, text) in &files {
        let deps: BTreeSet<String> = imports(text, &known)
            .into_iter()
            .filter(|d| d != module && !module.starts_with(&format!("{d}::")))
            .collect();
        for d in &deps {
            if let (Some(a), Some(b)) = (layer(module), layer(d)) {
                if b > a {
                    wrong.push(format!("{module} imports {d} (a higher layer)"));
                }
            }
        }
        graph.insert(module.clone(), deps);
    }
    assert!(
        wrong.is_empty(),
        "imports against the layers:\n{}",
        wrong.join("\n")
    );
    // Layers must be real folders: every layer has modules.
    for l in LAYERS {
        assert!(
            known.iter().any(|m| m.starts_with(l)),
            "layer {l} has no modules"
        );
    }
    // No circle: depth-first search for a back edge (folder modules (mod.rs)
    // only declare their children, so parent -> child edges are ignored).
    fn visit(
        m: &str,
        graph: &BTreeMap<String, BTreeSet<String>>,
        state: &mut BTreeMap<String, u8>,
        stack: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        match state.get(m) {
            Some(1) => {
                let at = stack.iter().position(|s| s == m).unwrap_or(0);
                let mut cycle = stack[at..].to_vec();
                cycle.push(m.to_owned());
                return Some(cycle);
            }
            Some(2) => return None,
            _ => {}
        }
        state.insert(m.to_owned(), 1);
        stack.push(m.to_owned());
        for d in graph.get(m).into_iter().flatten() {
            if d.starts_with(&format!("{m}::")) {
                continue;
            }
            if let Some(c) = visit(d, graph, state, stack) {
                return Some(c);
            }
        }
        stack.pop();
        state.insert(m.to_owned(), 2);
        None
    }
    let mut state = BTreeMap::new();
    for m in graph.keys() {
        if let Some(cycle) = visit(m, &graph, &mut state, &mut Vec::new()) {
            panic!(
                "modules import each other in a circle: {}",
                cycle.join(" -> ")
            );
        }
    }
}

#[test]
fn the_checker_sees_an_import_against_the_grain() {
    let known: BTreeSet<String> = [
        "shm::queue",
        "hier::plan",
        "hier",
        "shm",
        "ompi::ffi",
        "ompi",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let found = imports(
        "use crate::hier::plan::{self as p, HierPlan};\nuse crate::ompi::{ffi, call};",
        &known,
    );
    assert!(
        found.contains("hier::plan") && found.contains("ompi::ffi"),
        "{found:?}"
    );
    assert!(layer("hier::plan") > layer("shm::queue"));
}
