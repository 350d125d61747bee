//! What hierarchical (topology-aware) collectives know about where processes
//! run: the levels of the hierarchy, the intra-node placement of a process
//! (its Open MPI/PMIx locality string) and the network levels read from a
//! topology file (the coll/tcl design, Kurnosov et al., section 2.1).
//!
//! Pure Rust, no MPI: the caller gathers the strings and names, this module
//! turns them into values the group builder ([`crate::hier::groups`]) uses.
//!
//! * [`Level`]: L2, L3, NUMA node, socket, node, switch levels 1, 2, ...
//!   (lowest first), plus the implicit [`Level::Top`] that joins whatever is
//!   left at the end.
//! * [`LevelSelection`]: the `hierarchy_levels` parameter
//!   (`"l2,l3,numa,socket,node,switch"`).
//! * [`Locality`]: a parsed `pmix.locstr` (`SK1:L31:L218:L118:CR18:NM1`).
//! * [`TopologyFile`]: `<node> <switch-level-1> [<switch-level-2> ...]` lines.
//! * [`virtual_node_names`]: pretend every k consecutive ranks are a node.

use std::collections::HashMap;
use std::fmt;
use std::path::Path;
use std::str::FromStr;

/// A level of the hierarchy; the derived order is bottom-up
/// (`L2 < L3 < Numa < Socket < Node < Switch(1) < Switch(2) < ... < Top`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Level {
    /// Processes sharing an L2 cache.
    L2,
    /// Processes sharing an L3 cache.
    L3,
    /// Processes on one NUMA node.
    Numa,
    /// Processes on one processor package.
    Socket,
    /// Processes on one compute node (same node name).
    Node,
    /// Nodes under one switch of the given level (1 = the switch the node is
    /// plugged into, the first column of the topology file).
    Switch(u8),
    /// Not selectable: the single group joining the leaders left over after
    /// every selected level (the paper's top group, G4 in its Fig. 1).
    Top,
}

impl Level {
    /// True for the levels read from the locality string (below `Node`).
    pub fn is_below_node(self) -> bool {
        matches!(self, Level::L2 | Level::L3 | Level::Numa | Level::Socket)
    }

    /// True for the levels whose groups always lie within one node, so
    /// their members can share memory: those below `Node`, and `Node`.
    pub fn shares_memory(self) -> bool {
        self.is_below_node() || self == Level::Node
    }

    /// True for `Switch(_)`.
    pub fn is_network(self) -> bool {
        matches!(self, Level::Switch(_))
    }
}

impl fmt::Display for Level {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Level::L2 => f.write_str("l2"),
            Level::L3 => f.write_str("l3"),
            Level::Numa => f.write_str("numa"),
            Level::Socket => f.write_str("socket"),
            Level::Node => f.write_str("node"),
            Level::Switch(k) => write!(f, "switch{k}"),
            Level::Top => f.write_str("top"),
        }
    }
}

// ---------------------------------------------------------------------------
// hierarchy_levels

/// A bad token in a `hierarchy_levels` value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LevelParseError {
    /// The offending token, as written.
    pub token: String,
    /// Why it was refused.
    pub reason: String,
}

impl fmt::Display for LevelParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "'{}': {}", self.token, self.reason)
    }
}

impl std::error::Error for LevelParseError {}

/// The levels enabled by the `hierarchy_levels` parameter.  `switch` alone
/// stands for every switch level the topology file has, which is only known
/// later: [`LevelSelection::resolve`] turns the selection into levels.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LevelSelection {
    /// Intra-node levels, `Node` and explicitly numbered switch levels;
    /// sorted, no duplicates.
    fixed: Vec<Level>,
    /// `switch` was given: every switch level of the file.
    all_switches: bool,
}

const LEVEL_NAMES_HELP: &str =
    "expected l2, l3, numa, socket, node, switch or switchN (N = 1..255)";

impl LevelSelection {
    /// Every level: `l2,l3,numa,socket,node,switch`.
    pub fn all() -> LevelSelection {
        LevelSelection {
            fixed: vec![
                Level::L2,
                Level::L3,
                Level::Numa,
                Level::Socket,
                Level::Node,
            ],
            all_switches: true,
        }
    }

    /// Parses a comma-separated, case-insensitive list such as
    /// `"l2,l3,numa,socket,node,switch"` or `"numa, node, switch1"`.  Order
    /// and repetitions do not matter (levels are always built bottom-up);
    /// empty items are skipped; `""` and `"none"` select nothing (then the
    /// hierarchy is a single flat group).  `package` is accepted for
    /// `socket`.
    pub fn parse(text: &str) -> Result<LevelSelection, LevelParseError> {
        let mut sel = LevelSelection::default();
        let trimmed = text.trim();
        if trimmed.eq_ignore_ascii_case("none") {
            return Ok(sel);
        }
        for raw in trimmed.split(',') {
            let token = raw.trim();
            if token.is_empty() {
                continue;
            }
            let lower = token.to_ascii_lowercase();
            let level = match lower.as_str() {
                "l2" => Level::L2,
                "l3" => Level::L3,
                "numa" => Level::Numa,
                "socket" | "package" => Level::Socket,
                "node" => Level::Node,
                "switch" => {
                    sel.all_switches = true;
                    continue;
                }
                other => match other.strip_prefix("switch") {
                    Some(num) if !num.is_empty() && num.bytes().all(|b| b.is_ascii_digit()) => {
                        match num.parse::<u8>() {
                            Ok(k) if k >= 1 => Level::Switch(k),
                            _ => {
                                return Err(LevelParseError {
                                    token: token.to_string(),
                                    reason: "switch levels are numbered 1..255".to_string(),
                                })
                            }
                        }
                    }
                    _ => {
                        return Err(LevelParseError {
                            token: token.to_string(),
                            reason: format!("unknown level ({LEVEL_NAMES_HELP})"),
                        })
                    }
                },
            };
            sel.fixed.push(level);
        }
        sel.fixed.sort();
        sel.fixed.dedup();
        Ok(sel)
    }

    /// Whether `level` is selected (a `Switch(k)` is when `switch` was given
    /// or `switchk` was; `Top` always is).
    pub fn contains(&self, level: Level) -> bool {
        match level {
            Level::Top => true,
            Level::Switch(_) if self.all_switches => true,
            _ => self.fixed.contains(&level),
        }
    }

    /// True when nothing is selected.
    pub fn is_empty(&self) -> bool {
        self.fixed.is_empty() && !self.all_switches
    }

    /// The selected levels, bottom-up, for a topology file with
    /// `switch_levels` switch columns (0 without a file).  Numbered switch
    /// levels the file does not have are left out (see
    /// [`LevelSelection::unavailable`]).
    pub fn resolve(&self, switch_levels: usize) -> Vec<Level> {
        let mut out: Vec<Level> = self
            .fixed
            .iter()
            .copied()
            .filter(|l| match l {
                Level::Switch(k) => usize::from(*k) <= switch_levels,
                _ => true,
            })
            .collect();
        if self.all_switches {
            let top = switch_levels.min(usize::from(u8::MAX));
            out.extend((1..=top).map(|k| Level::Switch(k as u8)));
        }
        out.sort();
        out.dedup();
        out
    }

    /// Numbered switch levels that were asked for but that a file with
    /// `switch_levels` columns does not have (for a warning).
    pub fn unavailable(&self, switch_levels: usize) -> Vec<Level> {
        self.fixed
            .iter()
            .copied()
            .filter(|l| matches!(l, Level::Switch(k) if usize::from(*k) > switch_levels))
            .collect()
    }
}

impl FromStr for LevelSelection {
    type Err = LevelParseError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        LevelSelection::parse(s)
    }
}

impl fmt::Display for LevelSelection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut items: Vec<String> = self
            .fixed
            .iter()
            .filter(|l| !(self.all_switches && l.is_network()))
            .map(|l| l.to_string())
            .collect();
        if self.all_switches {
            items.push("switch".to_string());
        }
        if items.is_empty() {
            f.write_str("none")
        } else {
            f.write_str(&items.join(","))
        }
    }
}

// ---------------------------------------------------------------------------
// Locality strings

/// A malformed locality string.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LocalityError {
    /// The whole string.
    pub input: String,
    /// What is wrong with it.
    pub reason: String,
}

impl fmt::Display for LocalityError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "locality string '{}': {}", self.input, self.reason)
    }
}

impl std::error::Error for LocalityError {}

/// Where a process is bound inside its node, from a `pmix.locstr` value.
/// Every field is the hwloc logical index (unique on the node) of the one
/// object of that kind the process is bound to; `None` when the string has
/// no such field or when the process is bound to several objects of that
/// kind (then it shares nothing with anybody at that level).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Locality {
    /// `SK`: processor package.
    pub socket: Option<u32>,
    /// `NM`: NUMA node.
    pub numa: Option<u32>,
    /// `L3`: L3 cache.
    pub l3: Option<u32>,
    /// `L2`: L2 cache.
    pub l2: Option<u32>,
    /// `L1`: L1 cache.
    pub l1: Option<u32>,
    /// `CR`: core.
    pub core: Option<u32>,
    /// `HT`: hardware thread.
    pub hwthread: Option<u32>,
}

/// What one field says: one object, or several.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Ids {
    One(u32),
    Many,
}

/// Parses an hwloc list such as `3`, `0-1`, `0,2`, `4-7,9`.
fn parse_id_list(list: &str) -> Result<Ids, String> {
    if list.is_empty() {
        return Err("no id".to_string());
    }
    let mut first: Option<u32> = None;
    let mut many = false;
    for part in list.split(',') {
        let (lo, hi) = match part.split_once('-') {
            Some((lo, hi)) => (lo, Some(hi)),
            None => (part, None),
        };
        let number = |s: &str| -> Result<u32, String> {
            if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
                return Err(format!("bad id '{part}'"));
            }
            s.parse::<u32>().map_err(|_| format!("bad id '{part}'"))
        };
        let lo = number(lo)?;
        match hi {
            // hwloc writes an infinite range as "N-".
            Some("") => many = true,
            Some(hi) => {
                let hi = number(hi)?;
                if hi < lo {
                    return Err(format!("bad range '{part}'"));
                }
                if hi > lo {
                    many = true;
                }
            }
            None => {}
        }
        match first {
            None => first = Some(lo),
            Some(f) if f != lo => many = true,
            Some(_) => {}
        }
    }
    Ok(match first {
        Some(id) if !many => Ids::One(id),
        _ => Ids::Many,
    })
}

impl Locality {
    /// Parses a locality string: `:`-separated fields, each a two-character
    /// tag (`SK`, `NM`, `L3`, `L2`, `L1`, `CR`, `HT`) followed by an hwloc
    /// id list.  Fields may come in any order or be absent; unknown tags are
    /// ignored; a field listing several ids (`L20-1`, `CR0,2`) — or repeated
    /// with different ids — leaves that level unknown.  An empty string (an
    /// unbound process) gives the all-`None` locality.
    pub fn parse(text: &str) -> Result<Locality, LocalityError> {
        let mut loc = Locality::default();
        let text = text.trim();
        if text.is_empty() {
            return Ok(loc);
        }
        let err = |reason: String| LocalityError {
            input: text.to_string(),
            reason,
        };
        // Per field: not seen yet / one id / unknown.
        let mut seen: [Option<Ids>; 7] = [None; 7];
        for field in text.split(':') {
            let field = field.trim();
            if field.is_empty() {
                continue;
            }
            if field.len() < 2 || !field.is_char_boundary(2) {
                return Err(err(format!("field '{field}' is malformed")));
            }
            let (tag, list) = field.split_at(2);
            let slot = match tag.to_ascii_uppercase().as_str() {
                "SK" => 0,
                "NM" => 1,
                "L3" => 2,
                "L2" => 3,
                "L1" => 4,
                "CR" => 5,
                "HT" => 6,
                _ => continue,
            };
            let ids = parse_id_list(list).map_err(|r| err(format!("field '{field}': {r}")))?;
            seen[slot] = Some(match (seen[slot], ids) {
                (None, ids) => ids,
                (Some(Ids::One(a)), Ids::One(b)) if a == b => Ids::One(a),
                _ => Ids::Many,
            });
        }
        let one = |s: Option<Ids>| match s {
            Some(Ids::One(id)) => Some(id),
            _ => None,
        };
        loc.socket = one(seen[0]);
        loc.numa = one(seen[1]);
        loc.l3 = one(seen[2]);
        loc.l2 = one(seen[3]);
        loc.l1 = one(seen[4]);
        loc.core = one(seen[5]);
        loc.hwthread = one(seen[6]);
        Ok(loc)
    }

    /// The object id at an intra-node level (`None` for the other levels).
    pub fn id(&self, level: Level) -> Option<u32> {
        match level {
            Level::L2 => self.l2,
            Level::L3 => self.l3,
            Level::Numa => self.numa,
            Level::Socket => self.socket,
            _ => None,
        }
    }

    /// True when no intra-node level is known (an unbound process).
    pub fn is_unknown(&self) -> bool {
        self.socket.is_none() && self.numa.is_none() && self.l3.is_none() && self.l2.is_none()
    }
}

impl FromStr for Locality {
    type Err = LocalityError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Locality::parse(s)
    }
}

// ---------------------------------------------------------------------------
// Topology file

/// An error reading a topology file or looking a node up in it; displays as
/// `<file>:<line>: <reason>` (`<file>: <reason>` when no line applies).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TopologyError {
    /// The file (or the name given to [`parse_topology_text`]).
    pub file: String,
    /// 1-based line number, when the error is about one line.
    pub line: Option<usize>,
    /// What is wrong.
    pub reason: String,
}

impl fmt::Display for TopologyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line {
            Some(line) => write!(f, "{}:{}: {}", self.file, line, self.reason),
            None => write!(f, "{}: {}", self.file, self.reason),
        }
    }
}

impl std::error::Error for TopologyError {}

/// The network levels of a cluster: for every node, the switches it hangs
/// under, level 1 first.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TopologyFile {
    source: String,
    switch_levels: usize,
    /// (node, switch path, line) in file order.
    entries: Vec<(String, Vec<String>, usize)>,
    by_name: HashMap<String, usize>,
    /// Lower-cased short host name (up to the first '.') -> entry; `None`
    /// when two entries share it.
    by_short: HashMap<String, Option<usize>>,
}

fn short_name(name: &str) -> String {
    name.split('.').next().unwrap_or(name).to_ascii_lowercase()
}

/// Reads and parses a topology file (see [`parse_topology_text`]).
pub fn parse_topology_file(path: impl AsRef<Path>) -> Result<TopologyFile, TopologyError> {
    let path = path.as_ref();
    let name = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|e| TopologyError {
        file: name.clone(),
        line: None,
        reason: format!("cannot read the topology file: {e}"),
    })?;
    parse_topology_text(&name, &text)
}

/// Parses topology text.  Format: one line per node,
/// `<node-name> <switch-level-1> [<switch-level-2> ...]`, fields separated by
/// white space; `#` starts a comment (whole line or trailing); blank lines
/// are allowed.  Every node line must give the same number of switch levels
/// (at least one) and no node may be listed twice.  `name` is used in the
/// error messages.
pub fn parse_topology_text(name: &str, text: &str) -> Result<TopologyFile, TopologyError> {
    let err = |line: usize, reason: String| TopologyError {
        file: name.to_string(),
        line: Some(line),
        reason,
    };
    let mut entries: Vec<(String, Vec<String>, usize)> = Vec::new();
    let mut by_name: HashMap<String, usize> = HashMap::new();
    let mut switch_levels = 0usize;
    for (index, raw) in text.lines().enumerate() {
        let line = index + 1;
        let content = match raw.find('#') {
            Some(at) => &raw[..at],
            None => raw,
        };
        let mut fields = content.split_whitespace();
        let Some(node) = fields.next() else {
            continue;
        };
        let path: Vec<String> = fields.map(str::to_string).collect();
        if path.is_empty() {
            return Err(err(line, format!("node '{node}' has no switch")));
        }
        if let Some(&first) = by_name.get(node) {
            return Err(err(
                line,
                format!(
                    "node '{node}' is listed twice (first on line {})",
                    entries[first].2
                ),
            ));
        }
        if entries.is_empty() {
            if path.len() > usize::from(u8::MAX) {
                return Err(err(
                    line,
                    format!("{} switch levels (at most 255)", path.len()),
                ));
            }
            switch_levels = path.len();
        } else if path.len() != switch_levels {
            return Err(err(
                line,
                format!(
                    "node '{node}' has {} switch level(s), line {} has {}",
                    path.len(),
                    entries[0].2,
                    switch_levels
                ),
            ));
        }
        by_name.insert(node.to_string(), entries.len());
        entries.push((node.to_string(), path, line));
    }
    if entries.is_empty() {
        return Err(TopologyError {
            file: name.to_string(),
            line: None,
            reason: "no node is listed".to_string(),
        });
    }
    let mut by_short: HashMap<String, Option<usize>> = HashMap::new();
    for (i, (node, _, _)) in entries.iter().enumerate() {
        by_short
            .entry(short_name(node))
            .and_modify(|e| *e = None)
            .or_insert(Some(i));
    }
    Ok(TopologyFile {
        source: name.to_string(),
        switch_levels,
        entries,
        by_name,
        by_short,
    })
}

impl TopologyFile {
    /// Where the topology came from (file path or given name).
    pub fn source(&self) -> &str {
        &self.source
    }

    /// Number of switch levels (columns after the node name).
    pub fn switch_levels(&self) -> usize {
        self.switch_levels
    }

    /// Number of nodes listed.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Never true for a parsed file (an empty one is an error).
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The nodes, in file order.
    pub fn nodes(&self) -> impl Iterator<Item = &str> {
        self.entries.iter().map(|(n, _, _)| n.as_str())
    }

    /// The switch path of `node` (level 1 first).  The name is looked up as
    /// written; failing that, by its short host name (up to the first `.`,
    /// case-insensitive) when exactly one listed node has that short name,
    /// so `node01.cluster` finds `node01` and vice versa.  A node the file
    /// does not list is an error naming it.
    pub fn switch_path(&self, node: &str) -> Result<&[String], TopologyError> {
        if let Some(&i) = self.by_name.get(node) {
            return Ok(&self.entries[i].1);
        }
        match self.by_short.get(&short_name(node)) {
            Some(Some(i)) => Ok(&self.entries[*i].1),
            Some(None) => Err(TopologyError {
                file: self.source.clone(),
                line: None,
                reason: format!("node '{node}' is not listed (its short name is ambiguous)"),
            }),
            None => Err(TopologyError {
                file: self.source.clone(),
                line: None,
                reason: format!("node '{node}' is not listed"),
            }),
        }
    }
}

// ---------------------------------------------------------------------------
// Virtual nodes

/// Node names for `p` ranks when every `k` consecutive ranks pretend to be a
/// node: `vnode0` for ranks 0..k, `vnode1` for k..2k, ... (`k = 0` is taken
/// as 1).  For trying the network levels on one machine.
pub fn virtual_node_names(p: usize, k: usize) -> Vec<String> {
    let k = k.max(1);
    (0..p).map(|r| format!("vnode{}", r / k)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn level_order_and_names() {
        let mut levels = [
            Level::Top,
            Level::Switch(2),
            Level::Node,
            Level::Switch(1),
            Level::Socket,
            Level::Numa,
            Level::L3,
            Level::L2,
        ];
        levels.sort();
        let names: Vec<String> = levels.iter().map(|l| l.to_string()).collect();
        assert_eq!(
            names,
            ["l2", "l3", "numa", "socket", "node", "switch1", "switch2", "top"]
        );
        assert!(Level::Socket.is_below_node());
        assert!(!Level::Node.is_below_node());
        assert!(Level::Node.shares_memory() && Level::Numa.shares_memory());
        assert!(!Level::Top.shares_memory() && !Level::Switch(1).shares_memory());
        assert!(Level::Switch(3).is_network());
        assert!(!Level::Top.is_network());
    }

    #[test]
    fn level_list_full() {
        let sel = LevelSelection::parse("l2,l3,numa,socket,node,switch").unwrap();
        assert_eq!(sel, LevelSelection::all());
        assert_eq!(
            sel.resolve(2),
            vec![
                Level::L2,
                Level::L3,
                Level::Numa,
                Level::Socket,
                Level::Node,
                Level::Switch(1),
                Level::Switch(2)
            ]
        );
        assert_eq!(sel.resolve(0).last(), Some(&Level::Node));
        assert_eq!(sel.to_string(), "l2,l3,numa,socket,node,switch");
    }

    #[test]
    fn level_list_case_spaces_order_duplicates() {
        let sel: LevelSelection = " Node , NUMA,,numa , Package ".parse().unwrap();
        assert_eq!(
            sel.resolve(3),
            vec![Level::Numa, Level::Socket, Level::Node]
        );
        assert!(sel.contains(Level::Socket));
        assert!(!sel.contains(Level::L2));
        assert!(!sel.contains(Level::Switch(1)));
        assert!(sel.contains(Level::Top));
    }

    #[test]
    fn level_list_specific_switches() {
        let sel = LevelSelection::parse("numa,SWITCH2,switch5").unwrap();
        assert_eq!(sel.resolve(3), vec![Level::Numa, Level::Switch(2)]);
        assert_eq!(sel.unavailable(3), vec![Level::Switch(5)]);
        assert_eq!(sel.resolve(0), vec![Level::Numa]);
        assert_eq!(sel.unavailable(0), vec![Level::Switch(2), Level::Switch(5)]);
        assert!(sel.contains(Level::Switch(2)));
        assert!(!sel.contains(Level::Switch(1)));
        assert_eq!(sel.to_string(), "numa,switch2,switch5");
        // "switch" covers the numbered ones.
        let sel = LevelSelection::parse("switch1,switch").unwrap();
        assert_eq!(sel.resolve(2), vec![Level::Switch(1), Level::Switch(2)]);
        assert_eq!(sel.unavailable(0), vec![Level::Switch(1)]);
        assert_eq!(sel.to_string(), "switch");
    }

    #[test]
    fn level_list_empty_and_none() {
        for text in ["", "  ", "none", "NONE", ","] {
            let sel = LevelSelection::parse(text).unwrap();
            assert!(sel.is_empty(), "{text:?}");
            assert!(sel.resolve(4).is_empty());
            assert_eq!(sel.to_string(), "none");
        }
    }

    #[test]
    fn level_list_errors_name_the_token() {
        let e = LevelSelection::parse("l2,Numa,sockets,node").unwrap_err();
        assert_eq!(e.token, "sockets");
        assert!(e.to_string().contains("'sockets'"), "{e}");
        assert!(e.to_string().contains("unknown level"), "{e}");
        for bad in [
            "switch0",
            "switch256",
            "switch-1",
            "switchx",
            "l1",
            "top",
            "none",
        ] {
            let e = LevelSelection::parse(&format!("node,{bad}")).unwrap_err();
            assert_eq!(e.token, bad);
        }
        let e = LevelSelection::parse("switch0").unwrap_err();
        assert!(e.reason.contains("1..255"), "{e}");
        assert_eq!(
            LevelSelection::parse("switch255")
                .unwrap()
                .resolve(255)
                .last(),
            Some(&Level::Switch(255))
        );
    }

    #[test]
    fn locality_paper_string() {
        let loc = Locality::parse("SK1:L31:L218:L118:CR18:NM1").unwrap();
        assert_eq!(
            loc,
            Locality {
                socket: Some(1),
                numa: Some(1),
                l3: Some(1),
                l2: Some(18),
                l1: Some(18),
                core: Some(18),
                hwthread: None,
            }
        );
        assert_eq!(loc.id(Level::L2), Some(18));
        assert_eq!(loc.id(Level::L3), Some(1));
        assert_eq!(loc.id(Level::Numa), Some(1));
        assert_eq!(loc.id(Level::Socket), Some(1));
        assert_eq!(loc.id(Level::Node), None);
        assert!(!loc.is_unknown());
    }

    #[test]
    fn locality_open_mpi_string() {
        let loc: Locality = "NM0:SK0:L30:L20:L10:CR0:HT0".parse().unwrap();
        assert_eq!(loc.numa, Some(0));
        assert_eq!(loc.hwthread, Some(0));
        // hwloc 2 leaves NUMA out of the string.
        let loc = Locality::parse("SK3:L37:L221:L121:CR21:HT42").unwrap();
        assert_eq!(loc.numa, None);
        assert_eq!(loc.socket, Some(3));
        assert_eq!(loc.l3, Some(7));
        assert_eq!(loc.l2, Some(21));
        assert_eq!(loc.hwthread, Some(42));
    }

    #[test]
    fn locality_several_objects_is_not_unique() {
        // Bound to a whole package: one socket, one L3, several cores.
        let loc = Locality::parse("SK0:L30:L20-17:L10-17:CR0-17:HT0-35:NM0").unwrap();
        assert_eq!(loc.socket, Some(0));
        assert_eq!(loc.l3, Some(0));
        assert_eq!(loc.numa, Some(0));
        assert_eq!(loc.l2, None);
        assert_eq!(loc.core, None);
        assert_eq!(loc.hwthread, None);
        let loc = Locality::parse("SK0-1:L30,2:L24:CR4,4:NM1-1").unwrap();
        assert_eq!(loc.socket, None);
        assert_eq!(loc.l3, None);
        assert_eq!(loc.l2, Some(4));
        assert_eq!(loc.core, Some(4), "the same id twice is one object");
        assert_eq!(loc.numa, Some(1), "a one-element range is one object");
        // Infinite hwloc range.
        assert_eq!(Locality::parse("SK2-").unwrap().socket, None);
    }

    #[test]
    fn locality_missing_fields_and_empty() {
        let loc = Locality::parse("SK1").unwrap();
        assert_eq!(loc.socket, Some(1));
        assert_eq!((loc.l3, loc.l2, loc.numa), (None, None, None));
        for empty in ["", "   ", ":"] {
            let loc = Locality::parse(empty).unwrap();
            assert_eq!(loc, Locality::default());
            assert!(loc.is_unknown());
        }
        // Only core-level fields: no intra-node level is known.
        assert!(Locality::parse("CR3:HT3").unwrap().is_unknown());
    }

    #[test]
    fn locality_repeated_field() {
        // hwloc 1 may print two L1 levels (data and instruction).
        let loc = Locality::parse("SK0:L10:L10").unwrap();
        assert_eq!(loc.l1, Some(0));
        let loc = Locality::parse("SK0:L20:L21").unwrap();
        assert_eq!(loc.l2, None);
        assert_eq!(loc.socket, Some(0));
    }

    #[test]
    fn locality_unknown_tags_ignored_lowercase_accepted() {
        let loc = Locality::parse("XX7:sk1:Foo:l32").unwrap();
        assert_eq!(loc.socket, Some(1));
        assert_eq!(loc.l3, Some(2));
    }

    #[test]
    fn locality_malformed() {
        for (bad, what) in [
            ("SK", "SK"),
            ("SK0:L3", "L3"),
            ("SKx", "SKx"),
            ("SK0:L3a", "L3a"),
            ("L23-1", "L23-1"),
            ("CR1--2", "CR1--2"),
            ("NM,1", "NM,1"),
            ("S", "S"),
            ("SK99999999999", "SK99999999999"),
        ] {
            let e = Locality::parse(bad).unwrap_err();
            assert_eq!(e.input, bad);
            assert!(e.reason.contains(what), "{bad}: {e}");
            assert!(e.to_string().starts_with("locality string '"), "{e}");
        }
    }

    const FIG2: &str = "\
# <node-name> <switch-name>
node01 sw11
node02 sw11   # trailing comment

\tnode03\tsw11\t
node17 sw12
# node18 sw12 (commented out)
node48 sw13
node64 sw14
";

    #[test]
    fn topology_text_like_the_paper() {
        let topo = parse_topology_text("fig2", FIG2).unwrap();
        assert_eq!(topo.source(), "fig2");
        assert_eq!(topo.switch_levels(), 1);
        assert_eq!(topo.len(), 6);
        assert!(!topo.is_empty());
        assert_eq!(
            topo.nodes().collect::<Vec<_>>(),
            ["node01", "node02", "node03", "node17", "node48", "node64"]
        );
        assert_eq!(topo.switch_path("node02").unwrap(), ["sw11"]);
        assert_eq!(topo.switch_path("node03").unwrap(), ["sw11"]);
        assert_eq!(topo.switch_path("node48").unwrap(), ["sw13"]);
        let e = topo.switch_path("node18").unwrap_err();
        assert_eq!(e.line, None);
        assert_eq!(e.to_string(), "fig2: node 'node18' is not listed");
    }

    #[test]
    fn topology_two_levels() {
        let topo = parse_topology_text("t", "a s11 s21\nb s11 s21 # x\nc s12 s21\n#\nd s13 s22\n")
            .unwrap();
        assert_eq!(topo.switch_levels(), 2);
        assert_eq!(topo.switch_path("c").unwrap(), ["s12", "s21"]);
        assert_eq!(topo.switch_path("d").unwrap(), ["s13", "s22"]);
    }

    #[test]
    fn topology_short_names() {
        let topo = parse_topology_text("t", "node01 s1\nNode02.cluster.local s1\nx.a s2\nx.b s3\n")
            .unwrap();
        assert_eq!(topo.switch_path("node01.cluster").unwrap(), ["s1"]);
        assert_eq!(topo.switch_path("node02").unwrap(), ["s1"]);
        assert_eq!(topo.switch_path("x.a").unwrap(), ["s2"]);
        let e = topo.switch_path("x").unwrap_err();
        assert!(e.reason.contains("ambiguous"), "{e}");
        assert!(e.reason.contains("'x'"), "{e}");
    }

    fn parse_err(text: &str) -> TopologyError {
        parse_topology_text("topo.txt", text).unwrap_err()
    }

    #[test]
    fn topology_error_node_without_switch() {
        let e = parse_err("# header\nn1 s1\n\nn2   # no switch\nn3 s1\n");
        assert_eq!(e.file, "topo.txt");
        assert_eq!(e.line, Some(4));
        assert_eq!(e.to_string(), "topo.txt:4: node 'n2' has no switch");
    }

    #[test]
    fn topology_error_node_twice() {
        let e = parse_err("n1 s1\nn2 s1\n# c\nn1 s2\n");
        assert_eq!(e.line, Some(4));
        assert_eq!(
            e.to_string(),
            "topo.txt:4: node 'n1' is listed twice (first on line 1)"
        );
    }

    #[test]
    fn topology_error_inconsistent_columns() {
        let e = parse_err("\n# c\nn1 s11 s21\nn2 s11 s21\nn3 s12\n");
        assert_eq!(e.line, Some(5));
        assert_eq!(
            e.to_string(),
            "topo.txt:5: node 'n3' has 1 switch level(s), line 3 has 2"
        );
        let e = parse_err("n1 s11\nn2 s11 s21 s31\n");
        assert_eq!(e.line, Some(2));
        assert!(e.reason.contains("has 3 switch level(s)"), "{e}");
    }

    #[test]
    fn topology_error_empty() {
        let e = parse_err("# only comments\n\n   \n");
        assert_eq!(e.line, None);
        assert_eq!(e.to_string(), "topo.txt: no node is listed");
    }

    #[test]
    fn topology_file_read_and_unreadable() {
        let dir = std::env::temp_dir();
        let path = dir.join(format!("sharm-topology-test-{}.txt", std::process::id()));
        std::fs::write(&path, "n1 s1\nn2 s2 # comment\n").unwrap();
        let topo = parse_topology_file(&path).unwrap();
        std::fs::remove_file(&path).unwrap();
        assert_eq!(topo.source(), path.display().to_string());
        assert_eq!(topo.switch_path("n2").unwrap(), ["s2"]);

        std::fs::write(&path, "n1 s1\nn1 s2\n").unwrap();
        let e = parse_topology_file(&path).unwrap_err();
        std::fs::remove_file(&path).unwrap();
        assert_eq!(e.file, path.display().to_string());
        assert_eq!(e.line, Some(2));

        let missing = dir.join("sharm-no-such-dir-for-tests/topology.txt");
        let e = parse_topology_file(&missing).unwrap_err();
        assert_eq!(e.line, None);
        let shown = e.to_string();
        assert!(
            shown.starts_with(&format!("{}: cannot read", missing.display())),
            "{shown}"
        );
    }

    #[test]
    fn virtual_nodes() {
        assert_eq!(
            virtual_node_names(5, 2),
            ["vnode0", "vnode0", "vnode1", "vnode1", "vnode2"]
        );
        assert_eq!(virtual_node_names(3, 1), ["vnode0", "vnode1", "vnode2"]);
        assert_eq!(virtual_node_names(3, 0), ["vnode0", "vnode1", "vnode2"]);
        assert_eq!(virtual_node_names(3, 8), ["vnode0", "vnode0", "vnode0"]);
        assert!(virtual_node_names(0, 4).is_empty());
    }
}
