//! Groups of processes on every level of the hierarchy, built as in the
//! coll/tcl design (Kurnosov et al., section 2.2).
//!
//! Building starts at the lowest selected level.  At each level the
//! processes still climbing (all of them at the lowest level, afterwards the
//! leaders of the previous level's groups) are partitioned by the unit they
//! use at that level (the L2 cache, L3 cache, NUMA node or socket of their
//! node, the node, the switch); each group's leader is its lowest rank, and
//! only the leaders climb to the next level.  A level at which no group has
//! two or more members adds nothing and is not active: below the first
//! active level that means nobody shares the unit, above it that the level
//! partitions exactly like the previous active one (NUMA node and socket on
//! a machine with one NUMA node per socket count as one level, as in the
//! paper; such levels, when every process's unit is known there, are
//! remembered as [`LevelGroups::merged`]).  When more
//! than one leader is left after the last selected level, one more level,
//! [`Level::Top`], joins them; so the hierarchy always ends in a single group
//! whose leader is rank 0.
//!
//! A process whose unit is unknown at a level (not bound, bound to several
//! objects, no switch path) is alone at that level: it climbs as its own
//! leader.  Unit ids of intra-node levels include the node, so processes on
//! different nodes are never merged below the node level.
//!
//! Cost: O(L·P) expected (one hash lookup per climbing process and level).

use std::collections::HashMap;
use std::fmt::Write as _;

use crate::hier::topology::{Level, Locality, TopologyError, TopologyFile};

/// What the builder knows about one process of the communicator.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ProcInfo {
    /// Node (host) name; processes with equal names share a node.
    pub node: String,
    /// Placement inside the node; `None` when the process is not bound.
    pub locality: Option<Locality>,
    /// Switches above the node, level 1 first (from a topology file).
    pub switches: Option<Vec<String>>,
}

impl ProcInfo {
    /// A process on `node` with an optional locality and no switch path.
    pub fn new(node: impl Into<String>, locality: Option<Locality>) -> ProcInfo {
        ProcInfo {
            node: node.into(),
            locality,
            switches: None,
        }
    }
}

/// Looks every process's node up in `file` and sets its switch path.  On the
/// first node the file does not list, returns that error (it names the node)
/// and leaves `procs` unchanged: the caller then builds without network
/// levels.
pub fn attach_switch_paths(
    procs: &mut [ProcInfo],
    file: &TopologyFile,
) -> Result<(), TopologyError> {
    let mut paths: HashMap<&str, Vec<String>> = HashMap::new();
    for p in procs.iter() {
        if !paths.contains_key(p.node.as_str()) {
            let path = file.switch_path(&p.node)?.to_vec();
            paths.insert(p.node.as_str(), path);
        }
    }
    let resolved: Vec<Vec<String>> = procs
        .iter()
        .map(|p| paths[p.node.as_str()].clone())
        .collect();
    for (p, path) in procs.iter_mut().zip(resolved) {
        p.switches = Some(path);
    }
    Ok(())
}

/// Marker for "does not take part at this level".
const NONE: u32 = u32::MAX;

/// The groups of one active level.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LevelGroups {
    level: Level,
    merged: Vec<Level>,
    /// Member ranks ascending; the first is the leader.  Ordered by leader.
    groups: Vec<Vec<usize>>,
    /// Per rank: index into `groups`, or `NONE`.
    slot: Vec<u32>,
}

impl LevelGroups {
    /// The level.
    pub fn level(&self) -> Level {
        self.level
    }

    /// Selected levels directly above this one that turned out to group
    /// exactly like it (so they are not active themselves).
    pub fn merged(&self) -> &[Level] {
        &self.merged
    }

    /// Every group of the level (including single-member ones), ordered by
    /// leader; members ascending, leader first.  Together they hold exactly
    /// the processes taking part at this level.
    pub fn groups(&self) -> &[Vec<usize>] {
        &self.groups
    }

    /// The group `rank` belongs to at this level, if it takes part.
    pub fn group_of(&self, rank: usize) -> Option<&[usize]> {
        match self.slot.get(rank) {
            Some(&s) if s != NONE => Some(&self.groups[s as usize]),
            _ => None,
        }
    }
}

/// The groups of a communicator on all active levels.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Hierarchy {
    size: usize,
    levels: Vec<LevelGroups>,
}

/// Unit id of a process at one level; only compared within that level.
type UnitKey = (u32, u32);

impl Hierarchy {
    /// Builds the groups of the processes `procs` (index = rank) on the
    /// levels `levels` (any order; duplicates and `Top` are ignored).
    pub fn build(procs: &[ProcInfo], levels: &[Level]) -> Hierarchy {
        let size = procs.len();
        let mut wanted: Vec<Level> = levels
            .iter()
            .copied()
            .filter(|l| *l != Level::Top)
            .collect();
        wanted.sort();
        wanted.dedup();

        // Intern node and switch names.
        let mut node_ids: HashMap<&str, u32> = HashMap::new();
        let node_of: Vec<u32> = procs
            .iter()
            .map(|p| {
                let next = node_ids.len() as u32;
                *node_ids.entry(p.node.as_str()).or_insert(next)
            })
            .collect();
        let mut switch_ids: HashMap<&str, u32> = HashMap::new();
        let switch_of: Vec<Vec<u32>> = procs
            .iter()
            .map(|p| {
                p.switches
                    .iter()
                    .flatten()
                    .map(|s| {
                        let next = switch_ids.len() as u32;
                        *switch_ids.entry(s.as_str()).or_insert(next)
                    })
                    .collect()
            })
            .collect();

        let key = |level: Level, rank: usize| -> Option<UnitKey> {
            match level {
                Level::Node => Some((node_of[rank], 0)),
                Level::Switch(k) => {
                    let column = usize::from(k).checked_sub(1)?;
                    switch_of[rank].get(column).map(|&s| (0, s))
                }
                Level::Top => Some((0, 0)),
                intra => procs[rank]
                    .locality
                    .as_ref()
                    .and_then(|loc| loc.id(intra))
                    .map(|id| (node_of[rank], id)),
            }
        };

        let mut out: Vec<LevelGroups> = Vec::new();
        let mut climbing: Vec<usize> = (0..size).collect();
        let mut index: HashMap<UnitKey, u32> = HashMap::new();
        let top = if size > 0 { vec![Level::Top] } else { vec![] };
        for level in wanted.into_iter().chain(top) {
            if level == Level::Top && climbing.len() < 2 {
                break;
            }
            index.clear();
            let mut groups: Vec<Vec<usize>> = Vec::new();
            let mut slot = vec![NONE; size];
            let mut all_known = true;
            // `climbing` is ascending, so members are pushed in ascending
            // order and groups are created in order of their leaders.
            for &rank in &climbing {
                let g = match key(level, rank) {
                    Some(k) => *index.entry(k).or_insert_with(|| {
                        groups.push(Vec::new());
                        (groups.len() - 1) as u32
                    }),
                    None => {
                        all_known = false;
                        groups.push(Vec::new());
                        (groups.len() - 1) as u32
                    }
                };
                groups[g as usize].push(rank);
                slot[rank] = g;
            }
            if groups.iter().all(|g| g.len() < 2) {
                // Not active.  When every unit was known the level groups
                // exactly like the previous active one: say so.
                if let (Some(last), true) = (out.last_mut(), all_known) {
                    last.merged.push(level);
                }
                continue;
            }
            climbing = groups.iter().map(|g| g[0]).collect();
            out.push(LevelGroups {
                level,
                merged: Vec::new(),
                groups,
                slot,
            });
        }
        Hierarchy { size, levels: out }
    }

    /// Number of processes.
    pub fn size(&self) -> usize {
        self.size
    }

    /// The active levels, bottom-up.
    pub fn active_levels(&self) -> Vec<Level> {
        self.levels.iter().map(|l| l.level).collect()
    }

    /// All active levels with their groups, bottom-up.
    pub fn levels(&self) -> &[LevelGroups] {
        &self.levels
    }

    /// The groups of one level, if it is active.
    pub fn level(&self, level: Level) -> Option<&LevelGroups> {
        self.levels.iter().find(|l| l.level == level)
    }

    /// The group of `rank` at `level`; `None` when the level is not active or
    /// `rank` does not take part there (it is not a leader below).
    pub fn group(&self, level: Level, rank: usize) -> Option<&[usize]> {
        self.level(level)?.group_of(rank)
    }

    /// The leader of `rank`'s group at `level` (see [`Hierarchy::group`]).
    pub fn leader(&self, level: Level, rank: usize) -> Option<usize> {
        self.group(level, rank).map(|g| g[0])
    }

    /// The groups `rank` exchanges data in, bottom-up: at every active level
    /// its group, up to and including the first level where it is not the
    /// leader.  Levels where it is alone are left out (nothing to do there).
    pub fn groups_of(&self, rank: usize) -> Vec<(Level, &[usize])> {
        let mut chain = Vec::new();
        for lg in &self.levels {
            let Some(group) = lg.group_of(rank) else {
                break;
            };
            if group.len() > 1 {
                chain.push((lg.level, group));
            }
            if group[0] != rank {
                break;
            }
        }
        chain
    }

    /// Who stands for each rank at each active level: `reps[i][r]` is the
    /// member of level i's groups that carries rank r's data there (r itself
    /// at the lowest level, then the leader of the group below, and so on).
    pub fn representatives(&self) -> Vec<Vec<usize>> {
        let mut reps = vec![(0..self.size).collect::<Vec<usize>>()];
        for lg in &self.levels {
            let below = reps.last().expect("one level at least");
            let up = below
                .iter()
                .map(|&r| lg.group_of(r).map_or(r, |g| g[0]))
                .collect();
            reps.push(up);
        }
        reps.pop();
        reps
    }

    /// The ranks each member of `group` (a group of active level `index`)
    /// carries there, ascending; `reps` from [`Hierarchy::representatives`].
    pub fn covered(reps: &[Vec<usize>], index: usize, group: &[usize]) -> Vec<Vec<usize>> {
        let mut out = vec![Vec::new(); group.len()];
        for (r, &rep) in reps[index].iter().enumerate() {
            if let Some(j) = group.iter().position(|&m| m == rep) {
                out[j].push(r);
            }
        }
        out
    }

    /// Whether every group, at every level, carries a contiguous range of
    /// ranks (true for the usual by-slot placement).  Then reducing in
    /// member order within each group, level by level, combines in MPI's
    /// canonical rank order, which non-commutative operations need.
    pub fn rank_ordered(&self) -> bool {
        let reps = self.representatives();
        self.levels.iter().enumerate().all(|(i, lg)| {
            // Ranks carried by each group of this level: min, max, count.
            let mut span: Vec<(usize, usize, usize)> = vec![(usize::MAX, 0, 0); lg.groups.len()];
            for (r, &rep) in reps[i].iter().enumerate() {
                if let Some(&s) = lg.slot.get(rep).filter(|&&s| s != NONE) {
                    let e = &mut span[s as usize];
                    *e = (e.0.min(r), e.1.max(r), e.2 + 1);
                }
            }
            span.iter().all(|&(lo, hi, n)| n == 0 || hi - lo + 1 == n)
        })
    }

    /// The single group of the highest active level; its leader (rank 0) is
    /// the global leader.  `None` for fewer than two processes.
    pub fn root_group(&self) -> Option<&[usize]> {
        let last = self.levels.last()?;
        debug_assert_eq!(last.groups.len(), 1);
        last.groups.first().map(Vec::as_slice)
    }

    /// The global leader (0 when there are processes).
    pub fn global_leader(&self) -> Option<usize> {
        match self.root_group() {
            Some(g) => Some(g[0]),
            None if self.size > 0 => Some(0),
            None => None,
        }
    }

    /// A summary line and one line per level and group:
    /// `node: [0 1 2 3] leader 0`.
    pub fn render_text(&self) -> String {
        let mut s = String::new();
        let names: Vec<String> = self
            .levels
            .iter()
            .map(|lg| {
                if lg.merged.is_empty() {
                    lg.level.to_string()
                } else {
                    let merged: Vec<String> = lg.merged.iter().map(|l| l.to_string()).collect();
                    format!("{}(={})", lg.level, merged.join(","))
                }
            })
            .collect();
        let _ = writeln!(
            s,
            "hierarchy: {} processes, {} active level(s): {}",
            self.size,
            self.levels.len(),
            if names.is_empty() {
                "none".to_string()
            } else {
                names.join(" ")
            }
        );
        for lg in &self.levels {
            for g in &lg.groups {
                let members: Vec<String> = g.iter().map(|r| r.to_string()).collect();
                // How the group moves data (see `plan`): shared memory within
                // a node, the PML across nodes.
                let transport = if lg.level.shares_memory() {
                    "shm"
                } else {
                    "pml"
                };
                let _ = writeln!(
                    s,
                    "{}: [{}] leader {} {transport}",
                    lg.level,
                    members.join(" "),
                    g[0]
                );
            }
        }
        s
    }

    /// A DOT digraph: one vertex per rank, an edge from every member of a
    /// group to its leader, labelled with the level.  The edges form a tree
    /// rooted at the global leader.
    pub fn render_dot(&self) -> String {
        let mut s = String::from("digraph hierarchy {\n  rankdir=BT;\n  node [shape=circle];\n");
        for r in 0..self.size {
            let _ = writeln!(s, "  r{r} [label=\"{r}\"];");
        }
        for lg in &self.levels {
            for g in &lg.groups {
                for &m in &g[1..] {
                    let _ = writeln!(s, "  r{m} -> r{} [label=\"{}\"];", g[0], lg.level);
                }
            }
        }
        s.push_str("}\n");
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hier::topology::{parse_topology_text, virtual_node_names, LevelSelection};

    fn loc(s: &str) -> Option<Locality> {
        Some(Locality::parse(s).unwrap())
    }

    fn range(a: usize, b: usize) -> Vec<usize> {
        (a..=b).collect()
    }

    /// The cluster of the paper's Fig. 1: 64 nodes, level-1 switches
    /// sw11..sw14 (16 nodes each), level-2 switches sw21 (sw11, sw12) and
    /// sw22 (sw13, sw14).
    fn fig1_topology(with_level2: bool) -> TopologyFile {
        let mut text = String::from("# <node-name> <switch-level-1> <switch-level-2>\n");
        for n in 1..=64 {
            let sw1 = 11 + (n - 1) / 16;
            let sw2 = if n <= 32 { "sw21" } else { "sw22" };
            if with_level2 {
                text += &format!("node{n:02} sw{sw1} {sw2}\n");
            } else {
                text += &format!("node{n:02} sw{sw1}\n");
            }
        }
        parse_topology_text("fig1", &text).unwrap()
    }

    /// 108 processes: 36 on each of nodes 1, 2 and 48, 18 per socket (each
    /// socket its own NUMA node and L3), one per core; ranks fill node 1
    /// (socket 0 then 1), node 2, node 48.
    fn fig1_procs() -> Vec<ProcInfo> {
        let mut procs = Vec::new();
        for node in ["node01", "node02", "node48"] {
            for core in 0..36 {
                let s = core / 18;
                let l = format!("SK{s}:L3{s}:L2{core}:L1{core}:CR{core}:NM{s}");
                procs.push(ProcInfo::new(node, loc(&l)));
            }
        }
        procs
    }

    fn chain(h: &Hierarchy, rank: usize) -> Vec<(Level, Vec<usize>)> {
        h.groups_of(rank)
            .into_iter()
            .map(|(l, g)| (l, g.to_vec()))
            .collect()
    }

    fn members(chain: &[(Level, Vec<usize>)]) -> Vec<Vec<usize>> {
        chain.iter().map(|(_, g)| g.clone()).collect()
    }

    fn check_fig1(h: &Hierarchy, bottom: Level) {
        assert_eq!(h.size(), 108);
        assert_eq!(
            h.active_levels(),
            vec![bottom, Level::Node, Level::Switch(1), Level::Top]
        );
        // Paper, section 2.2.
        let c0 = chain(h, 0);
        assert_eq!(
            members(&c0),
            vec![range(0, 17), vec![0, 18], vec![0, 36], vec![0, 72]]
        );
        assert_eq!(
            c0.iter().map(|(l, _)| *l).collect::<Vec<_>>(),
            vec![bottom, Level::Node, Level::Switch(1), Level::Top]
        );
        assert_eq!(members(&chain(h, 1)), vec![range(0, 17)]);
        assert_eq!(
            members(&chain(h, 36)),
            vec![range(36, 53), vec![36, 54], vec![0, 36]]
        );
        // Others implied by the figure.
        assert_eq!(members(&chain(h, 18)), vec![range(18, 35), vec![0, 18]]);
        assert_eq!(members(&chain(h, 54)), vec![range(54, 71), vec![36, 54]]);
        // 72 is alone under sw13: no switch1 group, straight to the top.
        let c72 = chain(h, 72);
        assert_eq!(
            c72.iter().map(|(l, _)| *l).collect::<Vec<_>>(),
            vec![bottom, Level::Node, Level::Top]
        );
        assert_eq!(
            members(&c72),
            vec![range(72, 89), vec![72, 90], vec![0, 72]]
        );
        assert_eq!(members(&chain(h, 107)), vec![range(90, 107)]);
        assert_eq!(h.group(Level::Switch(1), 72), Some(&[72][..]));
        assert_eq!(h.group(Level::Switch(1), 1), None);

        assert_eq!(h.root_group(), Some(&[0, 72][..]));
        assert_eq!(h.global_leader(), Some(0));
        assert_eq!(h.leader(bottom, 17), Some(0));
        assert_eq!(h.leader(bottom, 53), Some(36));
        assert_eq!(h.leader(Level::Node, 90), Some(72));
        assert_eq!(h.leader(Level::Node, 91), None);
        assert_eq!(h.leader(Level::Switch(1), 36), Some(0));
        assert_eq!(h.leader(Level::Top, 72), Some(0));
        assert_eq!(h.leader(Level::Socket, 0), None, "socket collapsed");
        assert_eq!(h.level(bottom).unwrap().groups().len(), 6);
        assert_eq!(
            h.level(Level::Switch(1)).unwrap().groups(),
            &[vec![0, 36], vec![72]]
        );
    }

    #[test]
    fn paper_fig1_numa_socket_node_switches() {
        let mut procs = fig1_procs();
        attach_switch_paths(&mut procs, &fig1_topology(true)).unwrap();
        let levels = LevelSelection::parse("numa,socket,node,switch")
            .unwrap()
            .resolve(2);
        let h = Hierarchy::build(&procs, &levels);
        check_fig1(&h, Level::Numa);
        assert_eq!(h.level(Level::Numa).unwrap().merged(), &[Level::Socket]);
        // switch2 groups the switch1 leaders {0} and {72} apart: nothing new.
        assert_eq!(
            h.level(Level::Switch(1)).unwrap().merged(),
            &[Level::Switch(2)]
        );
        assert!(h.level(Level::Node).unwrap().merged().is_empty());
    }

    #[test]
    fn paper_fig1_all_levels() {
        // L2 per core: nobody shares it; L3 per socket: groups like NUMA.
        let mut procs = fig1_procs();
        attach_switch_paths(&mut procs, &fig1_topology(true)).unwrap();
        let h = Hierarchy::build(&procs, &LevelSelection::all().resolve(2));
        check_fig1(&h, Level::L3);
        assert_eq!(
            h.level(Level::L3).unwrap().merged(),
            &[Level::Numa, Level::Socket]
        );
    }

    #[test]
    fn paper_fig1_level1_file_only() {
        // The paper's Fig. 2 lists level-1 switches only: the same groups.
        let mut procs = fig1_procs();
        let topo = fig1_topology(false);
        attach_switch_paths(&mut procs, &topo).unwrap();
        let levels = LevelSelection::all().resolve(topo.switch_levels());
        let h = Hierarchy::build(&procs, &levels);
        check_fig1(&h, Level::L3);
    }

    #[test]
    fn paper_fig1_without_topology_file() {
        let procs = fig1_procs();
        let h = Hierarchy::build(&procs, &LevelSelection::all().resolve(0));
        assert_eq!(h.active_levels(), vec![Level::L3, Level::Node, Level::Top]);
        assert_eq!(h.root_group(), Some(&[0, 36, 72][..]));
        assert_eq!(
            members(&chain(&h, 36)),
            vec![range(36, 53), vec![36, 54], vec![0, 36, 72]]
        );
    }

    #[test]
    fn paper_fig1_levels_disabled() {
        let mut procs = fig1_procs();
        attach_switch_paths(&mut procs, &fig1_topology(true)).unwrap();
        // Only node and switch levels: nodes of 36.
        let h = Hierarchy::build(&procs, &[Level::Node, Level::Switch(1)]);
        assert_eq!(
            h.active_levels(),
            vec![Level::Node, Level::Switch(1), Level::Top]
        );
        assert_eq!(
            members(&chain(&h, 0)),
            vec![range(0, 35), vec![0, 36], vec![0, 72]]
        );
        // Only sockets: everything else joins at the top.
        let h = Hierarchy::build(&procs, &[Level::Socket]);
        assert_eq!(h.active_levels(), vec![Level::Socket, Level::Top]);
        assert_eq!(h.root_group(), Some(&[0, 18, 36, 54, 72, 90][..]));
    }

    #[test]
    fn level_order_in_input_does_not_matter() {
        let mut procs = fig1_procs();
        attach_switch_paths(&mut procs, &fig1_topology(true)).unwrap();
        let a = Hierarchy::build(
            &procs,
            &[
                Level::Numa,
                Level::Socket,
                Level::Node,
                Level::Switch(1),
                Level::Switch(2),
            ],
        );
        let b = Hierarchy::build(
            &procs,
            &[
                Level::Top,
                Level::Switch(2),
                Level::Node,
                Level::Numa,
                Level::Switch(1),
                Level::Socket,
                Level::Node,
            ],
        );
        assert_eq!(a, b);
    }

    /// 2 nodes x 2 sockets x 4 cores, 8 ranks mapped by node then by socket
    /// (round robin): rank r on node r % 2, local index j = r / 2 on socket
    /// j % 2.
    #[test]
    fn scattered_rank_order() {
        let procs: Vec<ProcInfo> = (0..8)
            .map(|r| {
                let j = r / 2;
                let s = j % 2;
                let core = s * 4 + j / 2;
                ProcInfo::new(
                    format!("n{}", r % 2),
                    loc(&format!("NM{s}:SK{s}:L3{s}:L2{core}:CR{core}")),
                )
            })
            .collect();
        let h = Hierarchy::build(&procs, &LevelSelection::all().resolve(0));
        assert_eq!(h.active_levels(), vec![Level::L3, Level::Node, Level::Top]);
        assert_eq!(
            h.level(Level::L3).unwrap().groups(),
            &[vec![0, 4], vec![1, 5], vec![2, 6], vec![3, 7]]
        );
        assert_eq!(
            h.level(Level::Node).unwrap().groups(),
            &[vec![0, 2], vec![1, 3]]
        );
        assert_eq!(h.root_group(), Some(&[0, 1][..]));
        assert_eq!(
            members(&chain(&h, 0)),
            vec![vec![0, 4], vec![0, 2], vec![0, 1]]
        );
        assert_eq!(
            members(&chain(&h, 1)),
            vec![vec![1, 5], vec![1, 3], vec![0, 1]]
        );
        assert_eq!(members(&chain(&h, 3)), vec![vec![3, 7], vec![1, 3]]);
        assert_eq!(members(&chain(&h, 6)), vec![vec![2, 6]]);
    }

    /// Ranks round-robin over 3 nodes (map-by node), 12 ranks, unbound.
    #[test]
    fn round_robin_nodes_without_locality() {
        let procs: Vec<ProcInfo> = (0..12)
            .map(|r| ProcInfo::new(format!("host{}", r % 3), None))
            .collect();
        let h = Hierarchy::build(&procs, &LevelSelection::all().resolve(0));
        assert_eq!(h.active_levels(), vec![Level::Node, Level::Top]);
        assert_eq!(
            h.level(Level::Node).unwrap().groups(),
            &[vec![0, 3, 6, 9], vec![1, 4, 7, 10], vec![2, 5, 8, 11]]
        );
        assert_eq!(h.root_group(), Some(&[0, 1, 2][..]));
        assert_eq!(
            members(&chain(&h, 2)),
            vec![vec![2, 5, 8, 11], vec![0, 1, 2]]
        );
        assert_eq!(members(&chain(&h, 11)), vec![vec![2, 5, 8, 11]]);
    }

    #[test]
    fn virtual_nodes_of_two_with_five_processes() {
        let procs: Vec<ProcInfo> = virtual_node_names(5, 2)
            .into_iter()
            .map(|n| ProcInfo::new(n, None))
            .collect();
        let h = Hierarchy::build(&procs, &LevelSelection::all().resolve(0));
        assert_eq!(h.active_levels(), vec![Level::Node, Level::Top]);
        assert_eq!(
            h.level(Level::Node).unwrap().groups(),
            &[vec![0, 1], vec![2, 3], vec![4]]
        );
        assert_eq!(h.root_group(), Some(&[0, 2, 4][..]));
        assert_eq!(members(&chain(&h, 4)), vec![vec![0, 2, 4]]);
        assert_eq!(members(&chain(&h, 3)), vec![vec![2, 3]]);
        assert_eq!(members(&chain(&h, 0)), vec![vec![0, 1], vec![0, 2, 4]]);
        assert_eq!(h.leader(Level::Node, 4), Some(4));
    }

    #[test]
    fn virtual_nodes_with_switches_from_a_file() {
        // 8 ranks, virtual nodes of 2, two virtual nodes per switch.
        let topo = parse_topology_text("v", "vnode0 a\nvnode1 a\nvnode2 b\nvnode3 b\n").unwrap();
        let mut procs: Vec<ProcInfo> = virtual_node_names(8, 2)
            .into_iter()
            .map(|n| ProcInfo::new(n, None))
            .collect();
        attach_switch_paths(&mut procs, &topo).unwrap();
        let h = Hierarchy::build(&procs, &LevelSelection::all().resolve(1));
        assert_eq!(
            h.active_levels(),
            vec![Level::Node, Level::Switch(1), Level::Top]
        );
        assert_eq!(
            members(&chain(&h, 0)),
            vec![vec![0, 1], vec![0, 2], vec![0, 4]]
        );
        assert_eq!(members(&chain(&h, 6)), vec![vec![6, 7], vec![4, 6]]);
    }

    #[test]
    fn single_node_without_locality() {
        let procs: Vec<ProcInfo> = (0..4).map(|_| ProcInfo::new("host", None)).collect();
        let h = Hierarchy::build(&procs, &LevelSelection::all().resolve(0));
        assert_eq!(h.active_levels(), vec![Level::Node]);
        assert_eq!(h.root_group(), Some(&[0, 1, 2, 3][..]));
        assert_eq!(members(&chain(&h, 0)), vec![vec![0, 1, 2, 3]]);
        assert_eq!(members(&chain(&h, 3)), vec![vec![0, 1, 2, 3]]);
        // Empty locality strings mean the same.
        let procs: Vec<ProcInfo> = (0..4).map(|_| ProcInfo::new("host", loc(""))).collect();
        let h2 = Hierarchy::build(&procs, &LevelSelection::all().resolve(0));
        assert_eq!(h2.active_levels(), vec![Level::Node]);
        assert_eq!(
            h2.level(Level::Node).unwrap().merged(),
            h.level(Level::Node).unwrap().merged()
        );
    }

    #[test]
    fn single_node_without_node_level() {
        // Nothing selected but the node: flat group at the top.
        let procs: Vec<ProcInfo> = (0..3).map(|_| ProcInfo::new("host", None)).collect();
        let h = Hierarchy::build(&procs, &[]);
        assert_eq!(h.active_levels(), vec![Level::Top]);
        assert_eq!(h.root_group(), Some(&[0, 1, 2][..]));
    }

    #[test]
    fn partly_bound_processes() {
        // Ranks 0, 1, 4 bound to socket 0; 2 unbound; 3 bound to both
        // sockets; 5 bound to socket 1.
        let procs = vec![
            ProcInfo::new("h", loc("SK0:L30:L20:CR0")),
            ProcInfo::new("h", loc("SK0:L30:L21:CR1")),
            ProcInfo::new("h", None),
            ProcInfo::new("h", loc("SK0-1:L30-1:L20-7")),
            ProcInfo::new("h", loc("SK0:L30:L22:CR2")),
            ProcInfo::new("h", loc("SK1:L31:L24:CR4")),
        ];
        let h = Hierarchy::build(&procs, &[Level::L2, Level::Socket, Level::Node]);
        assert_eq!(h.active_levels(), vec![Level::Socket, Level::Node]);
        assert_eq!(
            h.level(Level::Socket).unwrap().groups(),
            &[vec![0, 1, 4], vec![2], vec![3], vec![5]]
        );
        assert_eq!(h.root_group(), Some(&[0, 2, 3, 5][..]));
        assert_eq!(members(&chain(&h, 3)), vec![vec![0, 2, 3, 5]]);
        assert_eq!(members(&chain(&h, 4)), vec![vec![0, 1, 4]]);
    }

    #[test]
    fn shared_l2_cache() {
        // Two hardware threads per core share its L2; cores share an L3.
        let procs: Vec<ProcInfo> = (0..8)
            .map(|r| ProcInfo::new("h", loc(&format!("SK0:L30:L2{}:CR{}:HT{r}", r / 2, r / 2))))
            .collect();
        let h = Hierarchy::build(&procs, &LevelSelection::all().resolve(0));
        assert_eq!(h.active_levels(), vec![Level::L2, Level::L3]);
        assert_eq!(
            h.level(Level::L3).unwrap().merged(),
            &[Level::Socket, Level::Node]
        );
        assert_eq!(members(&chain(&h, 0)), vec![vec![0, 1], vec![0, 2, 4, 6]]);
        assert_eq!(members(&chain(&h, 5)), vec![vec![4, 5]]);
        assert_eq!(members(&chain(&h, 4)), vec![vec![4, 5], vec![0, 2, 4, 6]]);
    }

    #[test]
    fn same_unit_ids_on_different_nodes_never_merge() {
        let procs: Vec<ProcInfo> = (0..4)
            .map(|r| ProcInfo::new(format!("n{}", r / 2), loc("SK0:L30:NM0")))
            .collect();
        // Without the node level the sockets stay apart; the top joins them.
        let h = Hierarchy::build(&procs, &[Level::Socket]);
        assert_eq!(
            h.level(Level::Socket).unwrap().groups(),
            &[vec![0, 1], vec![2, 3]]
        );
        assert_eq!(h.root_group(), Some(&[0, 2][..]));
    }

    #[test]
    fn unknown_node_in_the_topology_file() {
        let topo = parse_topology_text("topo.txt", "a s1\nb s1\n").unwrap();
        let mut procs = vec![
            ProcInfo::new("a", None),
            ProcInfo::new("c", None),
            ProcInfo::new("b", None),
        ];
        let before = procs.clone();
        let e = attach_switch_paths(&mut procs, &topo).unwrap_err();
        assert_eq!(e.to_string(), "topo.txt: node 'c' is not listed");
        assert_eq!(procs, before, "nothing attached on error");
        // The caller drops the network levels.
        let h = Hierarchy::build(&procs, &LevelSelection::all().resolve(0));
        assert_eq!(h.active_levels(), vec![Level::Top]);
        // Even with switch levels selected, no paths means no switch groups.
        let h = Hierarchy::build(&procs, &LevelSelection::all().resolve(1));
        assert_eq!(h.active_levels(), vec![Level::Top]);
    }

    #[test]
    fn tiny_communicators() {
        let h = Hierarchy::build(&[], &LevelSelection::all().resolve(0));
        assert_eq!(h.size(), 0);
        assert!(h.active_levels().is_empty());
        assert_eq!(h.root_group(), None);
        assert_eq!(h.global_leader(), None);
        assert!(h.groups_of(0).is_empty());

        let h = Hierarchy::build(
            &[ProcInfo::new("h", loc("SK0"))],
            &LevelSelection::all().resolve(0),
        );
        assert_eq!(h.size(), 1);
        assert!(h.active_levels().is_empty());
        assert_eq!(h.root_group(), None);
        assert_eq!(h.global_leader(), Some(0));
        assert!(h.groups_of(0).is_empty());
        assert_eq!(h.leader(Level::Node, 0), None);
    }

    /// Deterministic pseudo-random placements; checks the invariants the
    /// collectives rely on against the inputs directly.
    #[test]
    fn random_placements_invariants() {
        let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = |n: u64| {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            (state >> 33) % n
        };
        let topo =
            parse_topology_text("t", "n0 s0 t0\nn1 s0 t0\nn2 s1 t0\nn3 s2 t1\nn4 s2 t1\n").unwrap();
        for case in 0..300 {
            let p = 1 + next(40) as usize;
            let mut procs: Vec<ProcInfo> = (0..p)
                .map(|_| {
                    let node = format!("n{}", next(5));
                    let locality = match next(6) {
                        0 => None,
                        1 => loc(&format!("SK{}", next(2))),
                        2 => loc(&format!("SK{}:L30-1:L2{}", next(2), next(4))),
                        _ => {
                            let s = next(2);
                            let c = next(8);
                            loc(&format!(
                                "SK{s}:NM{}:L3{}:L2{}",
                                next(2),
                                s * 2 + c / 4,
                                s * 8 + c
                            ))
                        }
                    };
                    ProcInfo::new(node, locality)
                })
                .collect();
            attach_switch_paths(&mut procs, &topo).unwrap();
            let all = [
                Level::L2,
                Level::L3,
                Level::Numa,
                Level::Socket,
                Level::Node,
                Level::Switch(1),
                Level::Switch(2),
            ];
            let levels: Vec<Level> = all.iter().copied().filter(|_| next(3) != 0).collect();
            let h = Hierarchy::build(&procs, &levels);
            let unit = |level: Level, r: usize| -> Option<String> {
                let pr = &procs[r];
                match level {
                    Level::Node => Some(pr.node.clone()),
                    Level::Switch(k) => {
                        Some(pr.switches.as_ref().unwrap()[usize::from(k) - 1].clone())
                    }
                    Level::Top => Some(String::new()),
                    l => pr
                        .locality
                        .and_then(|x| x.id(l))
                        .map(|id| format!("{}/{id}", pr.node)),
                }
            };
            let mut climbing: Vec<usize> = (0..p).collect();
            let mut non_leader_in = vec![0usize; p];
            for lg in h.levels() {
                assert!(
                    lg.level() == Level::Top || levels.contains(&lg.level()),
                    "case {case}"
                );
                let mut seen: Vec<usize> = lg.groups().iter().flatten().copied().collect();
                seen.sort();
                assert_eq!(
                    seen, climbing,
                    "case {case}: groups partition the climbing ranks"
                );
                assert!(
                    lg.groups().iter().any(|g| g.len() > 1),
                    "case {case}: active"
                );
                let mut ids = Vec::new();
                for g in lg.groups() {
                    assert!(g.windows(2).all(|w| w[0] < w[1]), "case {case}: sorted");
                    let id = unit(lg.level(), g[0]);
                    if g.len() > 1 {
                        assert!(id.is_some());
                    }
                    for &m in g {
                        assert_eq!(unit(lg.level(), m), id, "case {case}: same unit");
                        assert_eq!(h.leader(lg.level(), m), Some(g[0]));
                    }
                    for &m in &g[1..] {
                        non_leader_in[m] += 1;
                    }
                    if id.is_some() {
                        ids.push(id);
                    }
                }
                let n = ids.len();
                ids.sort();
                ids.dedup();
                assert_eq!(ids.len(), n, "case {case}: one group per unit");
                climbing = lg.groups().iter().map(|g| g[0]).collect();
            }
            assert_eq!(climbing, vec![0], "case {case}: one global leader");
            assert_eq!(h.global_leader(), Some(0));
            for (r, &count) in non_leader_in.iter().enumerate() {
                assert_eq!(count, usize::from(r != 0), "case {case} rank {r}");
                let c = h.groups_of(r);
                if r == 0 {
                    assert_eq!(c.last().map(|x| x.1), h.root_group(), "case {case}");
                } else {
                    let (_, last) = c.last().unwrap();
                    assert_ne!(last[0], r, "case {case}: chain ends where r is not leader");
                }
            }
            if p >= 2 {
                assert_eq!(h.root_group().unwrap()[0], 0);
            }
        }
    }

    #[test]
    fn representatives_and_rank_order() {
        // By slot: nodes [0 1] [2 3] [4]: ordered; covered sets are intervals.
        let procs: Vec<ProcInfo> = virtual_node_names(5, 2)
            .into_iter()
            .map(|n| ProcInfo::new(n, None))
            .collect();
        let h = Hierarchy::build(&procs, &[Level::Node]);
        assert!(h.rank_ordered());
        let reps = h.representatives();
        assert_eq!(reps[1], vec![0, 0, 2, 2, 4]);
        let top = h.root_group().unwrap().to_vec();
        assert_eq!(
            Hierarchy::covered(&reps, 1, &top),
            vec![vec![0, 1], vec![2, 3], vec![4]]
        );
        // Round robin over two nodes: node A holds 0 2 4, node B 1 3.
        let procs: Vec<ProcInfo> = (0..5)
            .map(|r| ProcInfo::new(if r % 2 == 0 { "a" } else { "b" }, None))
            .collect();
        let h = Hierarchy::build(&procs, &[Level::Node]);
        assert!(!h.rank_ordered());
        let reps = h.representatives();
        let top = h.root_group().unwrap().to_vec();
        assert_eq!(top, vec![0, 1]);
        assert_eq!(
            Hierarchy::covered(&reps, 1, &top),
            vec![vec![0, 2, 4], vec![1, 3]]
        );
    }

    #[test]
    fn render_text_output() {
        let procs: Vec<ProcInfo> = virtual_node_names(5, 2)
            .into_iter()
            .map(|n| ProcInfo::new(n, loc("SK0:L30")))
            .collect();
        let h = Hierarchy::build(&procs, &LevelSelection::all().resolve(0));
        assert_eq!(
            h.render_text(),
            "hierarchy: 5 processes, 2 active level(s): l3(=socket,node) top\n\
             l3: [0 1] leader 0 shm\n\
             l3: [2 3] leader 2 shm\n\
             l3: [4] leader 4 shm\n\
             top: [0 2 4] leader 0 pml\n"
        );
        let h = Hierarchy::build(&procs[..1], &[Level::Node]);
        assert_eq!(
            h.render_text(),
            "hierarchy: 1 processes, 0 active level(s): none\n"
        );
    }

    #[test]
    fn render_dot_output() {
        let procs: Vec<ProcInfo> = virtual_node_names(5, 2)
            .into_iter()
            .map(|n| ProcInfo::new(n, None))
            .collect();
        let h = Hierarchy::build(&procs, &[Level::Node]);
        let dot = h.render_dot();
        assert_eq!(
            dot,
            "digraph hierarchy {\n  rankdir=BT;\n  node [shape=circle];\n\
             \x20 r0 [label=\"0\"];\n  r1 [label=\"1\"];\n  r2 [label=\"2\"];\n\
             \x20 r3 [label=\"3\"];\n  r4 [label=\"4\"];\n\
             \x20 r1 -> r0 [label=\"node\"];\n  r3 -> r2 [label=\"node\"];\n\
             \x20 r2 -> r0 [label=\"top\"];\n  r4 -> r0 [label=\"top\"];\n}\n"
        );
        // The paper's example: a tree, 107 edges.
        let mut procs = fig1_procs();
        attach_switch_paths(&mut procs, &fig1_topology(true)).unwrap();
        let h = Hierarchy::build(&procs, &LevelSelection::all().resolve(2));
        let dot = h.render_dot();
        assert_eq!(dot.matches(" -> ").count(), 107);
        assert!(dot.contains("r72 -> r0 [label=\"top\"];"));
        assert!(dot.contains("r36 -> r0 [label=\"switch1\"];"));
        assert!(dot.contains("r54 -> r36 [label=\"node\"];"));
        assert!(dot.contains("r53 -> r36 [label=\"l3\"];"));
        let text = h.render_text();
        assert!(text.starts_with(
            "hierarchy: 108 processes, 4 active level(s): l3(=numa,socket) node switch1(=switch2) top\n"
        ));
        assert!(text.contains("\nnode: [0 18] leader 0 shm\n"));
        assert!(text.contains("\nswitch1: [72] leader 72 pml\n"));
        assert!(text.ends_with("top: [0 72] leader 0 pml\n"));
    }
}
