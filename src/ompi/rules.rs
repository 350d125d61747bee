//! Decision rules for `auto`: the `coll_sharm_<op>_rules` parameters.
//!
//! A rule text maps (process count, message size) ranges to an algorithm and,
//! optionally, to the k-nomial radix and the pipeline fragment of the call:
//!
//! ```text
//! rules   := block (';' block)*                     ("" = no rules)
//! block   := [np ':'] entry (',' entry)*
//! np      := 'np>=' N | 'np<=' N | 'np=' N | 'np=' N '-' [N]
//! entry   := size ['-' [size]] algorithm option*
//! size    := digits ['K' | 'M' | 'G']                (powers of 1024)
//! option  := 'radix=' N  |  'frag=' size
//! ```
//!
//! e.g. `np>=2: 0-2047 allgather, 2K-63K knomial radix=4, 64K- reduce_scatter_allgather; np>=9: 0- knomial`.
//! A call of `b` bytes on `p` processes takes the *last* block whose np
//! range holds p and that has an entry whose size range holds b (so general
//! blocks come first, specific ones after); within a block the first such
//! entry.  Sizes no entry covers keep the built-in rules; so does the
//! algorithm `auto`, which still applies the entry's options.
//!
//! Every process must decide alike, so rules are compiled into `RawRules`,
//! a fixed-size plain table that `Shared::establish` broadcasts from rank 0
//! with the other parameters; only rank 0's text counts.  A malformed text
//! is reported once per process (with the character position) and that
//! operation's rules are ignored as a whole.

use std::collections::BTreeSet;
use std::sync::{Mutex, OnceLock};

use crate::ompi::builtin_rules;
use crate::ompi::call::Coll;
use crate::ompi::params::{self, Algorithm};

/// The operations that take rules: parameter name, the collective whose
/// `*_algorithm` slot the choice replaces, and the algorithms it offers.
pub const RULED: [(&str, Coll, &[&str]); 8] = [
    ("barrier", Coll::Barrier, &["linear", "knomial"]),
    ("bcast", Coll::Bcast, &["linear", "knomial"]),
    ("reduce", Coll::Reduce, &["linear", "knomial"]),
    (
        "allreduce",
        Coll::Allreduce,
        &["linear", "knomial", "allgather", "reduce_scatter_allgather"],
    ),
    ("alltoall", Coll::Alltoall, &["linear", "pairwise"]),
    ("allgather", Coll::Allgather, &["linear", "gather_bcast"]),
    (
        "reduce_scatter",
        Coll::ReduceScatter,
        &["linear", "reduce_then_scatter"],
    ),
    ("scan", Coll::Scan, &["linear", "chain"]),
];

/// Entries the broadcast table holds over all operations (40 bytes each).
pub const MAX_RULES: usize = 128;

/// One compiled entry (plain data: it travels as bytes).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RawRule {
    /// `Coll as u8`.
    pub coll: u8,
    /// The `ALGORITHMS` value (0 = auto).
    pub algorithm: u8,
    /// 0: the `coll_sharm_knomial_radix` parameter.
    pub radix: u8,
    pad: u8,
    /// Block and entry number in the text, from 1 (for the trace line).
    pub block: u16,
    pub entry: u16,
    /// Pipeline fragment in bytes; 0: the built-in cut.
    pub frag: u32,
    pub np_lo: u32,
    pub np_hi: u32,
    pub lo: u64,
    pub hi: u64,
}

/// The compiled rules of all operations, in lookup order (for each
/// operation, blocks from last to first, entries in text order).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct RawRules {
    pub count: u32,
    pad: u32,
    pub entries: [RawRule; MAX_RULES],
}

impl Default for RawRules {
    fn default() -> Self {
        RawRules {
            count: 0,
            pad: 0,
            entries: [RawRule::default(); MAX_RULES],
        }
    }
}

/// What a rule says about one call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ruled {
    pub algorithm: Algorithm,
    pub radix: Option<usize>,
    pub frag: Option<usize>,
    pub block: u16,
    pub entry: u16,
}

impl RawRules {
    /// The rule for `coll` with `p` processes and `bytes` bytes, if any.
    pub fn lookup(&self, coll: Coll, p: usize, bytes: u64) -> Option<Ruled> {
        let n = (self.count as usize).min(MAX_RULES);
        let p = p as u64;
        self.entries[..n]
            .iter()
            .find(|r| {
                r.coll == coll as u8
                    && (r.np_lo as u64..=r.np_hi as u64).contains(&p)
                    && (r.lo..=r.hi).contains(&bytes)
            })
            .map(|r| Ruled {
                algorithm: params::decode_algorithm(r.algorithm as i32),
                radix: (r.radix >= 2).then_some(r.radix as usize),
                frag: (r.frag > 0).then_some(r.frag as usize),
                block: r.block,
                entry: r.entry,
            })
    }

    /// Whether a rule for `coll` with `p` processes speaks for some size
    /// from `lo` to `hi` bytes.
    pub fn covers(&self, coll: Coll, p: usize, lo: u64, hi: u64) -> bool {
        let n = (self.count as usize).min(MAX_RULES);
        let p = p as u64;
        self.entries[..n].iter().any(|r| {
            r.coll == coll as u8
                && (r.np_lo as u64..=r.np_hi as u64).contains(&p)
                && r.lo <= hi
                && lo <= r.hi
        })
    }

    /// Whether any rule exists for `coll`.
    pub fn any(&self, coll: Coll) -> bool {
        let n = (self.count as usize).min(MAX_RULES);
        self.entries[..n].iter().any(|r| r.coll == coll as u8)
    }

    /// This process's `coll_sharm_<op>_rules`, compiled.
    pub fn current() -> RawRules {
        let texts: Vec<String> = RULED
            .iter()
            .map(|(name, _, _)| crate::ompi::ffi::rules_text(name))
            .collect();
        RawRules::compile(&texts)
    }

    /// The built-in rules (`builtin_rules`), compiled once.  The
    /// texts are compiled into the plugin, so every process has the same
    /// table without a broadcast.
    pub fn built_in() -> &'static RawRules {
        static TABLE: OnceLock<RawRules> = OnceLock::new();
        TABLE.get_or_init(|| {
            let texts: Vec<String> = RULED
                .iter()
                .map(|(name, _, _)| builtin_rules::text(name).to_string())
                .collect();
            RawRules::compile(&texts)
        })
    }

    /// The parameter name's operation part for `coll` ("allreduce").
    pub fn name(coll: Coll) -> Option<&'static str> {
        RULED.iter().find(|r| r.1 == coll).map(|r| r.0)
    }

    /// Compiles the texts of `coll_sharm_<op>_rules` (`texts[i]` for
    /// `RULED[i]`).  Malformed texts are reported (once per process per
    /// text) and skipped; the table keeps what fits.
    pub fn compile(texts: &[String]) -> RawRules {
        let mut table = RawRules::default();
        for ((name, coll, algs), text) in RULED.iter().zip(texts) {
            if text.trim().is_empty() {
                continue;
            }
            let compiled = parse(text, algs).and_then(|blocks| {
                let rules = flatten(*coll, &blocks);
                if table.count as usize + rules.len() > MAX_RULES {
                    Err(RuleError {
                        pos: 0,
                        what: format!(
                            "{} entries do not fit: all operations together may have {MAX_RULES}",
                            rules.len()
                        ),
                    })
                } else {
                    Ok(rules)
                }
            });
            match compiled {
                Ok(rules) => {
                    for r in rules {
                        table.entries[table.count as usize] = r;
                        table.count += 1;
                    }
                }
                Err(e) => report_once(name, text, &e),
            }
        }
        table
    }
}

static REPORTED: Mutex<BTreeSet<String>> = Mutex::new(BTreeSet::new());

/// Warns about a malformed rule text unless this process already did (a
/// process creates many segments; one message per mistake is enough).
fn report_once(name: &str, text: &str, e: &RuleError) {
    let key = format!("{name}\0{text}");
    let fresh = REPORTED
        .lock()
        .map(|mut seen| seen.insert(key))
        .unwrap_or(true);
    if fresh {
        tracing::warn!(
            "coll_sharm_{name}_rules ignored: {} at character {} of \"{text}\"",
            e.what,
            e.pos + 1
        );
    }
}

/// A parse error: what is wrong, at which byte of the text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuleError {
    pub pos: usize,
    pub what: String,
}

/// One parsed block: the np range and its entries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Block {
    pub np: (u32, u32),
    pub entries: Vec<Entry>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub lo: u64,
    pub hi: u64,
    /// `ALGORITHMS` value.
    pub algorithm: u8,
    pub radix: u8,
    pub frag: u32,
}

fn flatten(coll: Coll, blocks: &[Block]) -> Vec<RawRule> {
    let mut out = Vec::new();
    for (b, block) in blocks.iter().enumerate().rev() {
        for (e, entry) in block.entries.iter().enumerate() {
            out.push(RawRule {
                coll: coll as u8,
                algorithm: entry.algorithm,
                radix: entry.radix,
                pad: 0,
                block: (b + 1) as u16,
                entry: (e + 1) as u16,
                frag: entry.frag,
                np_lo: block.np.0,
                np_hi: block.np.1,
                lo: entry.lo,
                hi: entry.hi,
            });
        }
    }
    out
}

/// A cursor over the text: words are separated by blanks, ',', ';' and ':'.
struct Lexer<'a> {
    text: &'a str,
    at: usize,
}

impl<'a> Lexer<'a> {
    fn skip_blanks(&mut self) {
        let rest = &self.text[self.at..];
        self.at += rest.len() - rest.trim_start().len();
    }
    /// The next punctuation mark, if it is one of `marks` (consumed).
    fn mark(&mut self, marks: &str) -> Option<char> {
        self.skip_blanks();
        let c = self.text[self.at..].chars().next()?;
        if marks.contains(c) {
            self.at += c.len_utf8();
            Some(c)
        } else {
            None
        }
    }
    /// The next word and where it starts (None at a mark or the end).
    fn word(&mut self) -> Option<(usize, &'a str)> {
        self.skip_blanks();
        let start = self.at;
        let rest = &self.text[start..];
        let len = rest
            .find(|c: char| c.is_whitespace() || ",;:".contains(c))
            .unwrap_or(rest.len());
        if len == 0 {
            return None;
        }
        self.at += len;
        Some((start, &rest[..len]))
    }
    fn peek_word(&mut self) -> Option<&'a str> {
        let at = self.at;
        let w = self.word().map(|(_, w)| w);
        self.at = at;
        w
    }
    fn at_end(&mut self) -> bool {
        self.skip_blanks();
        self.at == self.text.len()
    }
    fn err<T>(&self, pos: usize, what: impl Into<String>) -> Result<T, RuleError> {
        Err(RuleError {
            pos,
            what: what.into(),
        })
    }
}

/// `digits[K|M|G]`, powers of 1024.
fn size_value(s: &str) -> Option<u64> {
    let (digits, scale) = match s.as_bytes().last()? {
        b'k' | b'K' => (&s[..s.len() - 1], 1u64 << 10),
        b'm' | b'M' => (&s[..s.len() - 1], 1 << 20),
        b'g' | b'G' => (&s[..s.len() - 1], 1 << 30),
        _ => (s, 1),
    };
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse::<u64>().ok()?.checked_mul(scale)
}

fn count_value(s: &str) -> Option<u32> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

/// Parses a whole rule text for an operation offering `algs`.
pub fn parse(text: &str, algs: &[&str]) -> Result<Vec<Block>, RuleError> {
    let mut lx = Lexer { text, at: 0 };
    let mut blocks = Vec::new();
    loop {
        blocks.push(parse_block(&mut lx, algs)?);
        if lx.at_end() {
            return Ok(blocks);
        }
        if lx.mark(";").is_none() {
            return lx.err(lx.at, "expected ';' or ',' after an entry");
        }
        if lx.at_end() {
            // A trailing ';' is harmless.
            return Ok(blocks);
        }
    }
}

fn parse_block(lx: &mut Lexer, algs: &[&str]) -> Result<Block, RuleError> {
    let mut np = (1, u32::MAX);
    if lx.peek_word().is_some_and(|w| w.starts_with("np")) {
        let (at, w) = lx.word().expect("peeked");
        np = parse_np(w).ok_or(RuleError {
            pos: at,
            what: format!("bad process range '{w}' (np>=N, np<=N, np=N or np=N-M)"),
        })?;
        if lx.mark(":").is_none() {
            return lx.err(lx.at, "expected ':' after the process range");
        }
    }
    let mut entries = Vec::new();
    loop {
        entries.push(parse_entry(lx, algs)?);
        if lx.mark(",").is_none() {
            return Ok(Block { np, entries });
        }
    }
}

fn parse_np(w: &str) -> Option<(u32, u32)> {
    let range = if let Some(n) = w.strip_prefix("np>=") {
        (count_value(n)?, u32::MAX)
    } else if let Some(n) = w.strip_prefix("np<=") {
        (1, count_value(n)?)
    } else {
        let v = w.strip_prefix("np=")?;
        match v.split_once('-') {
            None => (count_value(v)?, count_value(v)?),
            Some((a, "")) => (count_value(a)?, u32::MAX),
            Some((a, b)) => (count_value(a)?, count_value(b)?),
        }
    };
    (range.0 <= range.1).then_some(range)
}

fn parse_entry(lx: &mut Lexer, algs: &[&str]) -> Result<Entry, RuleError> {
    let Some((at, range)) = lx.word() else {
        return lx.err(lx.at, "expected a size range such as 0-2047 or 64K-");
    };
    let bad_range = || RuleError {
        pos: at,
        what: format!("bad size range '{range}' (e.g. 0-2047, 2K-64K, 1M-, 8)"),
    };
    let (lo, hi) = match range.split_once('-') {
        None => {
            let v = size_value(range).ok_or_else(bad_range)?;
            (v, v)
        }
        Some((a, "")) => (size_value(a).ok_or_else(bad_range)?, u64::MAX),
        Some((a, b)) => (
            size_value(a).ok_or_else(bad_range)?,
            size_value(b).ok_or_else(bad_range)?,
        ),
    };
    if lo > hi {
        return Err(bad_range());
    }
    let Some((at, name)) = lx.word() else {
        return lx.err(lx.at, format!("expected an algorithm after '{range}'"));
    };
    if name != "auto" && !algs.contains(&name) {
        return lx.err(
            at,
            format!("unknown algorithm '{name}' (auto, {})", algs.join(", ")),
        );
    }
    let algorithm = params::algorithm_value(name).expect("listed names are in ALGORITHMS") as u8;
    let mut entry = Entry {
        lo,
        hi,
        algorithm,
        radix: 0,
        frag: 0,
    };
    while let Some(w) = lx.peek_word() {
        if !w.contains('=') {
            break;
        }
        let (at, w) = lx.word().expect("peeked");
        let (key, value) = w.split_once('=').expect("contains '='");
        match key {
            "radix" => match count_value(value) {
                Some(k @ 2..=255) => entry.radix = k as u8,
                _ => return lx.err(at, format!("bad radix '{value}' (2-255)")),
            },
            "frag" => match size_value(value) {
                Some(f @ 64..=0x4000_0000) => entry.frag = f as u32,
                _ => return lx.err(at, format!("bad fragment '{value}' (64 bytes - 1G)")),
            },
            _ => return lx.err(at, format!("unknown option '{key}' (radix=, frag=)")),
        }
    }
    Ok(entry)
}

#[cfg(test)]
mod tests {
    use super::*;

    const ALLREDUCE: &[&str] = &["linear", "knomial", "allgather", "reduce_scatter_allgather"];

    fn texts(op: &str, text: &str) -> Vec<String> {
        RULED
            .iter()
            .map(|(n, _, _)| if *n == op { text.into() } else { String::new() })
            .collect()
    }

    /// `covers` finds a rule whose sizes overlap the range, for its process
    /// counts only, and agrees with `lookup` size by size.
    #[test]
    fn covers_is_lookup_over_a_range() {
        let rules = RawRules::compile(&texts("bcast", "np<=4: 100-200 knomial; np>=8: 0- linear"));
        assert!(rules.covers(Coll::Bcast, 2, 1, 100));
        assert!(rules.covers(Coll::Bcast, 2, 150, 150));
        assert!(rules.covers(Coll::Bcast, 2, 200, 8192));
        assert!(!rules.covers(Coll::Bcast, 2, 1, 99));
        assert!(!rules.covers(Coll::Bcast, 2, 201, 8192));
        assert!(!rules.covers(Coll::Bcast, 5, 1, 8192), "no block for np=5");
        assert!(rules.covers(Coll::Bcast, 8, 1, 1));
        assert!(!rules.covers(Coll::Reduce, 2, 0, u64::MAX));
        for p in [2, 5, 8] {
            for (lo, hi) in [(1, 99), (1, 100), (150, 150), (201, 300)] {
                let any = (lo..=hi).any(|b| rules.lookup(Coll::Bcast, p, b).is_some());
                assert_eq!(rules.covers(Coll::Bcast, p, lo, hi), any, "p={p} {lo}-{hi}");
            }
        }
    }

    /// The built-in texts (src/ompi/built-in-rules.conf) parse, and every
    /// entry fits the table.
    #[test]
    fn built_in_rules_parse() {
        let mut entries = 0;
        for (name, coll, algs) in RULED {
            let text = builtin_rules::text(name);
            if text.is_empty() {
                continue;
            }
            match parse(text, algs) {
                Ok(blocks) => entries += flatten(coll, &blocks).len(),
                Err(e) => panic!("built-in {name} rules: {} at {}", e.what, e.pos + 1),
            }
        }
        assert_eq!(RawRules::built_in().count as usize, entries);
    }

    #[test]
    fn example_parses_and_later_blocks_win() {
        let t = RawRules::compile(&texts(
            "allreduce",
            "np>=2: 0-2047 allgather, 2048-65535 knomial radix=4, 64K- reduce_scatter_allgather; np>=9: 0- linear frag=32K",
        ));
        assert_eq!(t.count, 4);
        let at = |p, b| t.lookup(Coll::Allreduce, p, b).map(|r| r.algorithm);
        assert_eq!(at(2, 0), Some(Algorithm::Allgather));
        assert_eq!(at(8, 2047), Some(Algorithm::Allgather));
        assert_eq!(at(8, 2048), Some(Algorithm::Knomial));
        assert_eq!(at(4, 65536), Some(Algorithm::ReduceScatterAllgather));
        assert_eq!(at(9, 8), Some(Algorithm::Linear));
        assert_eq!(at(1, 8), None, "np=1 is outside np>=2");
        let r = t.lookup(Coll::Allreduce, 4, 4096).unwrap();
        assert_eq!((r.radix, r.frag, r.block, r.entry), (Some(4), None, 1, 2));
        let r = t.lookup(Coll::Allreduce, 16, 1 << 30).unwrap();
        assert_eq!((r.radix, r.frag, r.block), (None, Some(32768), 2));
        // Other operations are untouched.
        assert_eq!(t.lookup(Coll::Reduce, 4, 4096), None);
        assert!(t.any(Coll::Allreduce) && !t.any(Coll::Bcast));
    }

    #[test]
    fn np_forms_sizes_and_gaps() {
        let b = parse(
            "np=3-5: 8 linear; np=6: 1K-2K knomial; np<=2: 0-1G linear; np=9-: 1M- auto radix=3",
            &["linear", "knomial"],
        )
        .unwrap();
        let nps: Vec<_> = b.iter().map(|b| b.np).collect();
        assert_eq!(nps, [(3, 5), (6, 6), (1, 2), (9, u32::MAX)]);
        assert_eq!((b[0].entries[0].lo, b[0].entries[0].hi), (8, 8));
        assert_eq!((b[1].entries[0].lo, b[1].entries[0].hi), (1024, 2048));
        assert_eq!(b[2].entries[0].hi, 1 << 30);
        assert_eq!(b[3].entries[0].algorithm, 0, "auto");
        assert_eq!(b[3].entries[0].radix, 3);
        let t = RawRules::compile(&texts("bcast", "np=3-5: 8 linear; 1K-2K knomial"));
        // A size between two entries keeps the built-in rule.
        assert_eq!(t.lookup(Coll::Bcast, 4, 9), None);
        assert_eq!(
            t.lookup(Coll::Bcast, 4, 8).unwrap().algorithm,
            Algorithm::Linear
        );
        assert_eq!(
            t.lookup(Coll::Bcast, 4, 1500).unwrap().algorithm,
            Algorithm::Knomial
        );
        // Blanks are optional around marks; a trailing ';' is allowed.
        assert!(parse("np>=2:0-7 linear,8- knomial;", &["linear", "knomial"]).is_ok());
    }

    #[test]
    fn mistakes_are_located() {
        let err = |text: &str| parse(text, ALLREDUCE).unwrap_err();
        let e = err("np>=2: 0-2047 allgathr");
        assert_eq!(e.pos, 14);
        assert!(e.what.contains("unknown algorithm 'allgathr'"), "{e:?}");
        assert_eq!(err("np>2: 0- linear").pos, 0);
        assert_eq!(err("np>=2 0- linear").pos, 6);
        assert_eq!(err("0-1x linear").pos, 0);
        assert_eq!(err("9-3 linear").pos, 0);
        assert_eq!(err("0- linear radix=1").pos, 10);
        assert_eq!(err("0- linear slots=4").pos, 10);
        assert_eq!(err("0- linear frag=12").pos, 10);
        assert_eq!(err("0- linear 8- knomial").pos, 10);
        assert_eq!(err("0- linear,").pos, 10);
        assert_eq!(err("").pos, 0);
        // An algorithm of another operation.
        assert!(parse("0- chain", ALLREDUCE).is_err());
    }

    #[test]
    fn a_malformed_text_drops_only_its_operation() {
        let mut t = texts("reduce", "0- knomal");
        t[1] = "0- knomial".into(); // bcast
        let table = RawRules::compile(&t);
        assert!(!table.any(Coll::Reduce));
        assert_eq!(
            table.lookup(Coll::Bcast, 2, 5).unwrap().algorithm,
            Algorithm::Knomial
        );
    }

    #[test]
    fn the_table_is_bounded() {
        let many: Vec<String> = (0..100).map(|i| format!("{i} linear")).collect();
        let mut t = texts("bcast", &many.join(", "));
        t[2] = many.join(", "); // reduce: 100 more do not fit
        let table = RawRules::compile(&t);
        assert_eq!(table.count, 100);
        assert!(table.any(Coll::Bcast) && !table.any(Coll::Reduce));
    }
}
