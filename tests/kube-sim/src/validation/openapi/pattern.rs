//! `pattern:` as kube-openapi checks it: Go's `regexp.MatchString` (RE2 syntax, a match
//! anywhere in the string unless anchored). kube-sim has no regex crate, so this is a small
//! RE2 matcher for the syntax CRD patterns use: literals and escapes, `.`, classes (ranges,
//! negation, `\d \w \s` and their negations, `[:alpha:]`-style names), `^ $ \A \z \b \B`,
//! groups (capturing, `(?:…)`, named), the flags `i`, `m`, `s` (`(?i)`, `(?i:…)`), alternation
//! and the quantifiers `* + ? {n} {n,} {n,m}` (lazy or not: only whether it matches counts).
//! Anything else (Unicode classes `\pL`, `\Q…\E`, octal escapes, ...) is reported as unknown
//! and the value accepted.
//!
//! Patterns compile to a Thompson NFA run Pike-VM style, so matching is linear in the text,
//! like Go's.

/// Whether `text` matches `pattern` somewhere; `None` when kube-sim does not know the syntax.
pub(super) fn matches(pattern: &str, text: &str) -> Option<bool> {
    let node = Parser::new(pattern).parse()?;
    let mut program = Program::default();
    program.emit_node(&node)?;
    program.push(Inst::Match)?;
    Some(program.search(text))
}

/// RE2's bound on `{n,m}` counts.
const MAX_REPEAT: u32 = 1000;
/// A larger program is not run (RE2 refuses oversized expressions too).
const MAX_PROGRAM: usize = 50_000;
/// Deeper nesting than this is not parsed.
const MAX_NESTING: usize = 200;

#[derive(Clone, Debug)]
struct Class {
    ranges: Vec<(char, char)>,
    negated: bool,
    /// Case-insensitive (`(?i)`).
    fold: bool,
}

impl Class {
    fn contains(&self, c: char) -> bool {
        let direct = |c: char| self.ranges.iter().any(|&(lo, hi)| lo <= c && c <= hi);
        let mut found = direct(c);
        if !found && self.fold {
            found = c.to_lowercase().chain(c.to_uppercase()).any(direct);
        }
        found != self.negated
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Look {
    TextStart,
    TextEnd,
    LineStart,
    LineEnd,
    WordBoundary,
    NotWordBoundary,
}

#[derive(Clone, Debug)]
enum Node {
    Empty,
    Class(Class),
    /// `.`: every character, or every one but `\n`.
    Any {
        newline: bool,
    },
    Look(Look),
    Concat(Vec<Node>),
    Alt(Vec<Node>),
    Repeat {
        node: Box<Node>,
        min: u32,
        max: Option<u32>,
    },
}

#[derive(Clone, Copy, Default)]
struct Flags {
    fold: bool,
    multi_line: bool,
    dot_newline: bool,
}

struct Parser {
    chars: Vec<char>,
    pos: usize,
    depth: usize,
}

fn digit() -> Vec<(char, char)> {
    vec![('0', '9')]
}
fn space() -> Vec<(char, char)> {
    vec![('\t', '\n'), ('\u{c}', '\r'), (' ', ' ')]
}
fn word() -> Vec<(char, char)> {
    vec![('0', '9'), ('A', 'Z'), ('_', '_'), ('a', 'z')]
}

/// The complement of possibly overlapping ranges (surrogates are no characters).
fn complement(ranges: Vec<(char, char)>) -> Vec<(char, char)> {
    let mut sorted: Vec<(u32, u32)> = ranges.into_iter().map(|(lo, hi)| (lo as u32, hi as u32)).collect();
    sorted.sort_unstable();
    let mut out = Vec::new();
    let mut push = |lo: u32, hi: u32| {
        let lo = if (0xD800..=0xDFFF).contains(&lo) { 0xE000 } else { lo };
        let hi = if (0xD800..=0xDFFF).contains(&hi) { 0xD7FF } else { hi };
        if lo <= hi
            && let (Some(lo), Some(hi)) = (char::from_u32(lo), char::from_u32(hi))
        {
            out.push((lo, hi));
        }
    };
    let mut next = 0u32;
    for (lo, hi) in sorted {
        if lo > next {
            push(next, lo - 1);
        }
        next = next.max(hi + 1);
    }
    push(next, char::MAX as u32);
    out
}

fn posix_class(name: &str) -> Option<Vec<(char, char)>> {
    Some(match name {
        "alnum" => vec![('0', '9'), ('A', 'Z'), ('a', 'z')],
        "alpha" => vec![('A', 'Z'), ('a', 'z')],
        "ascii" => vec![('\0', '\u{7f}')],
        "blank" => vec![('\t', '\t'), (' ', ' ')],
        "cntrl" => vec![('\0', '\u{1f}'), ('\u{7f}', '\u{7f}')],
        "digit" => digit(),
        "graph" => vec![('!', '~')],
        "lower" => vec![('a', 'z')],
        "print" => vec![(' ', '~')],
        "punct" => vec![('!', '/'), (':', '@'), ('[', '`'), ('{', '~')],
        "space" => vec![('\t', '\r'), (' ', ' ')],
        "upper" => vec![('A', 'Z')],
        "word" => word(),
        "xdigit" => vec![('0', '9'), ('A', 'F'), ('a', 'f')],
        _ => return None,
    })
}

impl Parser {
    fn new(pattern: &str) -> Self {
        Self { chars: pattern.chars().collect(), pos: 0, depth: 0 }
    }
    fn peek(&self) -> Option<char> {
        self.chars.get(self.pos).copied()
    }
    fn eat(&mut self, c: char) -> bool {
        if self.peek() == Some(c) {
            self.pos += 1;
            true
        } else {
            false
        }
    }
    fn next(&mut self) -> Option<char> {
        let c = self.peek()?;
        self.pos += 1;
        Some(c)
    }

    fn parse(mut self) -> Option<Node> {
        let node = self.alternation(&mut Flags::default())?;
        // A `)` without its `(` is an error upstream.
        (self.pos == self.chars.len()).then_some(node)
    }

    /// `concat ('|' concat)*`, up to a `)` or the end. Flags set by `(?i)` last to the end of
    /// the enclosing group.
    fn alternation(&mut self, flags: &mut Flags) -> Option<Node> {
        self.depth += 1;
        if self.depth > MAX_NESTING {
            return None;
        }
        let mut branches = vec![self.concat(flags)?];
        while self.eat('|') {
            branches.push(self.concat(flags)?);
        }
        self.depth -= 1;
        Some(if branches.len() == 1 { branches.pop().unwrap_or(Node::Empty) } else { Node::Alt(branches) })
    }

    fn concat(&mut self, flags: &mut Flags) -> Option<Node> {
        let mut items = Vec::new();
        while let Some(c) = self.peek() {
            if c == '|' || c == ')' {
                break;
            }
            let Some(atom) = self.atom(flags)? else { continue };
            let repeated = self.quantifiers(atom)?;
            items.push(repeated);
        }
        Some(Node::Concat(items))
    }

    /// A repetition of `atom`, if one follows (RE2 refuses a repeated repetition such as
    /// `a**`).
    fn quantifiers(&mut self, atom: Node) -> Option<Node> {
        let start = self.pos;
        let (min, max) = match self.peek() {
            Some('*') => (0, None),
            Some('+') => (1, None),
            Some('?') => (0, Some(1)),
            Some('{') => match self.counted() {
                Some(bounds) => bounds,
                None => {
                    self.pos = start;
                    return Some(atom);
                }
            },
            _ => return Some(atom),
        };
        if self.pos == start {
            self.pos += 1;
        }
        self.eat('?'); // lazy: the same set of matches
        if matches!(self.peek(), Some('*' | '+' | '?')) || (self.peek() == Some('{') && self.counted_ahead())
        {
            return None;
        }
        Some(Node::Repeat { node: Box::new(atom), min, max })
    }

    /// `{n}`, `{n,}`, `{n,m}` (consumed); `None` when it is no repetition (`{` is a literal).
    fn counted(&mut self) -> Option<(u32, Option<u32>)> {
        let start = self.pos;
        let parsed = (|| {
            self.next()?; // `{`
            let min = self.number()?;
            let max = if self.eat(',') {
                if self.peek() == Some('}') { None } else { Some(self.number()?) }
            } else {
                Some(min)
            };
            self.eat('}').then_some((min, max))
        })();
        if parsed.is_none() {
            self.pos = start;
        }
        parsed
    }

    fn counted_ahead(&mut self) -> bool {
        let start = self.pos;
        let found = self.counted().is_some();
        self.pos = start;
        found
    }

    fn number(&mut self) -> Option<u32> {
        let start = self.pos;
        while self.peek().is_some_and(|c| c.is_ascii_digit()) {
            self.pos += 1;
        }
        let text: String = self.chars[start..self.pos].iter().collect();
        text.parse().ok()
    }

    /// One atom; `Ok(None)`-like `Some(None)` for a flag group that only changes flags.
    fn atom(&mut self, flags: &mut Flags) -> Option<Option<Node>> {
        let c = self.next()?;
        let node = match c {
            '(' => return self.group(flags),
            '[' => Node::Class(self.class(flags)?),
            '.' => Node::Any { newline: flags.dot_newline },
            '^' => Node::Look(if flags.multi_line { Look::LineStart } else { Look::TextStart }),
            '$' => Node::Look(if flags.multi_line { Look::LineEnd } else { Look::TextEnd }),
            '\\' => self.escape(flags)?,
            // A quantifier with nothing to repeat is an error upstream.
            '*' | '+' | '?' => return None,
            c => self.literal(c, flags),
        };
        Some(Some(node))
    }

    fn literal(&self, c: char, flags: &Flags) -> Node {
        Node::Class(Class { ranges: vec![(c, c)], negated: false, fold: flags.fold })
    }

    fn group(&mut self, flags: &mut Flags) -> Option<Option<Node>> {
        let mut inner = *flags;
        if self.eat('?') {
            if self.eat('P') || self.peek() == Some('<') {
                // A named group: `(?P<name>…)` or `(?<name>…)`.
                if !self.eat('<') {
                    return None;
                }
                while self.next()? != '>' {}
            } else {
                // Flags: `(?i)` (the rest of this group) or `(?i:…)`.
                let mut negate = false;
                loop {
                    match self.next()? {
                        'i' => inner.fold = !negate,
                        'm' => inner.multi_line = !negate,
                        's' => inner.dot_newline = !negate,
                        'U' => {} // ungreedy: the same set of matches
                        '-' if !negate => negate = true,
                        ')' => {
                            *flags = inner;
                            return Some(None);
                        }
                        ':' => break,
                        _ => return None,
                    }
                }
            }
        }
        let node = self.alternation(&mut inner)?;
        self.eat(')').then_some(Some(node))
    }

    /// After `\`, outside a class.
    fn escape(&mut self, flags: &Flags) -> Option<Node> {
        let c = self.peek()?;
        Some(match c {
            'A' => {
                self.pos += 1;
                Node::Look(Look::TextStart)
            }
            'z' => {
                self.pos += 1;
                Node::Look(Look::TextEnd)
            }
            'b' => {
                self.pos += 1;
                Node::Look(Look::WordBoundary)
            }
            'B' => {
                self.pos += 1;
                Node::Look(Look::NotWordBoundary)
            }
            _ => {
                let (ranges, negated) = self.class_escape()?;
                Node::Class(Class { ranges, negated, fold: flags.fold })
            }
        })
    }

    /// An escape standing for characters (in a class or not): `\d`-style classes, control
    /// escapes, `\x`, punctuation. Returns the ranges and whether they are negated.
    fn class_escape(&mut self) -> Option<(Vec<(char, char)>, bool)> {
        let c = self.next()?;
        let single = |c: char| Some((vec![(c, c)], false));
        match c {
            'd' => Some((digit(), false)),
            'D' => Some((digit(), true)),
            's' => Some((space(), false)),
            'S' => Some((space(), true)),
            'w' => Some((word(), false)),
            'W' => Some((word(), true)),
            'a' => single('\u{7}'),
            'f' => single('\u{c}'),
            't' => single('\t'),
            'n' => single('\n'),
            'r' => single('\r'),
            'v' => single('\u{b}'),
            'x' => {
                let value = if self.eat('{') {
                    let start = self.pos;
                    while self.peek().is_some_and(|c| c.is_ascii_hexdigit()) {
                        self.pos += 1;
                    }
                    let hex: String = self.chars[start..self.pos].iter().collect();
                    if !self.eat('}') {
                        return None;
                    }
                    u32::from_str_radix(&hex, 16).ok()?
                } else {
                    let hex: String = [self.next()?, self.next()?].iter().collect();
                    u32::from_str_radix(&hex, 16).ok()?
                };
                single(char::from_u32(value)?)
            }
            // Any other ASCII character but a letter or digit stands for itself (`\_`, `\-`).
            c if c.is_ascii() && !c.is_ascii_alphanumeric() => single(c),
            _ => None,
        }
    }

    /// After `[`: `[^…]`, ranges, escapes, `[:name:]`; a `]` first is a literal.
    fn class(&mut self, flags: &Flags) -> Option<Class> {
        let negated = self.eat('^');
        let mut ranges = Vec::new();
        let mut first = true;
        loop {
            let c = self.peek()?;
            if c == ']' && !first {
                self.pos += 1;
                break;
            }
            first = false;
            if c == '[' && self.chars.get(self.pos + 1) == Some(&':') {
                let end = (self.pos + 2..self.chars.len().saturating_sub(1))
                    .find(|&i| self.chars[i] == ':' && self.chars[i + 1] == ']')?;
                let name: String = self.chars[self.pos + 2..end].iter().collect();
                self.pos = end + 2;
                match name.strip_prefix('^') {
                    Some(name) => ranges.extend(complement(posix_class(name)?)),
                    None => ranges.extend(posix_class(&name)?),
                }
                continue;
            }
            let lo = if c == '\\' {
                self.pos += 1;
                let (set, negated_set) = self.class_escape()?;
                match (set.as_slice(), negated_set) {
                    ([(a, b)], false) if a == b => *a,
                    _ => {
                        ranges.extend(if negated_set { complement(set) } else { set });
                        continue;
                    }
                }
            } else {
                self.pos += 1;
                c
            };
            // `a-z`; a `-` before the closing `]` is a literal.
            if self.peek() == Some('-') && self.chars.get(self.pos + 1).is_some_and(|&n| n != ']') {
                self.pos += 1;
                let hi = match self.next()? {
                    '\\' => match self.class_escape()? {
                        (set, false) if set.len() == 1 && set[0].0 == set[0].1 => set[0].0,
                        _ => return None,
                    },
                    h => h,
                };
                if hi < lo {
                    return None;
                }
                ranges.push((lo, hi));
            } else {
                ranges.push((lo, lo));
            }
        }
        Some(Class { ranges, negated, fold: flags.fold })
    }
}

#[derive(Clone, Debug)]
enum Inst {
    Class(Class),
    Any { newline: bool },
    Look(Look),
    Split(usize, usize),
    Jmp(usize),
    Match,
}

#[derive(Default)]
struct Program {
    insts: Vec<Inst>,
}

impl Program {
    fn push(&mut self, inst: Inst) -> Option<usize> {
        if self.insts.len() >= MAX_PROGRAM {
            return None;
        }
        self.insts.push(inst);
        Some(self.insts.len() - 1)
    }
    fn patch(&mut self, at: usize, inst: Inst) {
        if let Some(slot) = self.insts.get_mut(at) {
            *slot = inst;
        }
    }

    fn emit_node(&mut self, node: &Node) -> Option<()> {
        match node {
            Node::Empty => {}
            Node::Class(class) => {
                self.push(Inst::Class(class.clone()))?;
            }
            Node::Any { newline } => {
                self.push(Inst::Any { newline: *newline })?;
            }
            Node::Look(look) => {
                self.push(Inst::Look(*look))?;
            }
            Node::Concat(items) => {
                for item in items {
                    self.emit_node(item)?;
                }
            }
            Node::Alt(branches) => {
                // split L1, next; L1: branch; jmp end; next: split ...
                let mut jumps = Vec::new();
                for (i, branch) in branches.iter().enumerate() {
                    if i + 1 < branches.len() {
                        let split = self.push(Inst::Split(0, 0))?;
                        self.emit_node(branch)?;
                        jumps.push(self.push(Inst::Jmp(0))?);
                        let next = self.insts.len();
                        self.patch(split, Inst::Split(split + 1, next));
                    } else {
                        self.emit_node(branch)?;
                    }
                }
                let end = self.insts.len();
                for jump in jumps {
                    self.patch(jump, Inst::Jmp(end));
                }
            }
            Node::Repeat { node, min, max } => {
                if *min > MAX_REPEAT || max.is_some_and(|m| m > MAX_REPEAT || m < *min) {
                    return None;
                }
                for _ in 0..*min {
                    self.emit_node(node)?;
                }
                match max {
                    None => {
                        // L: split body, end; body; jmp L
                        let split = self.push(Inst::Split(0, 0))?;
                        self.emit_node(node)?;
                        self.push(Inst::Jmp(split))?;
                        let end = self.insts.len();
                        self.patch(split, Inst::Split(split + 1, end));
                    }
                    Some(max) => {
                        // Each optional copy: split body, end.
                        let mut splits = Vec::new();
                        for _ in *min..*max {
                            splits.push(self.push(Inst::Split(0, 0))?);
                            self.emit_node(node)?;
                        }
                        let end = self.insts.len();
                        for split in splits {
                            self.patch(split, Inst::Split(split + 1, end));
                        }
                    }
                }
            }
        }
        Some(())
    }

    /// Whether the program matches anywhere in `text` (a new thread starts at every position).
    fn search(&self, text: &str) -> bool {
        let chars: Vec<char> = text.chars().collect();
        let mut current = Threads::new(self.insts.len());
        let mut next = Threads::new(self.insts.len());
        for pos in 0..=chars.len() {
            if self.add(&mut current, 0, pos, &chars) {
                return true;
            }
            let Some(&c) = chars.get(pos) else { break };
            for i in 0..current.list.len() {
                let pc = current.list[i];
                let advances = match &self.insts[pc] {
                    Inst::Class(class) => class.contains(c),
                    Inst::Any { newline } => *newline || c != '\n',
                    _ => false,
                };
                if advances && self.add(&mut next, pc + 1, pos + 1, &chars) {
                    return true;
                }
            }
            std::mem::swap(&mut current, &mut next);
            next.clear();
        }
        false
    }

    /// Adds the thread at `pc` and what it reaches without consuming; `true` on a match.
    fn add(&self, threads: &mut Threads, pc: usize, pos: usize, chars: &[char]) -> bool {
        let mut stack = vec![pc];
        while let Some(pc) = stack.pop() {
            if !threads.insert(pc) {
                continue;
            }
            match &self.insts[pc] {
                Inst::Match => return true,
                Inst::Jmp(to) => stack.push(*to),
                Inst::Split(a, b) => {
                    stack.push(*b);
                    stack.push(*a);
                }
                Inst::Look(look) => {
                    if holds(*look, pos, chars) {
                        stack.push(pc + 1);
                    }
                }
                Inst::Class(_) | Inst::Any { .. } => threads.list.push(pc),
            }
        }
        false
    }
}

fn holds(look: Look, pos: usize, chars: &[char]) -> bool {
    let before = pos.checked_sub(1).and_then(|p| chars.get(p)).copied();
    let after = chars.get(pos).copied();
    let is_word = |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_');
    match look {
        Look::TextStart => pos == 0,
        Look::TextEnd => pos == chars.len(),
        Look::LineStart => before.is_none_or(|c| c == '\n'),
        Look::LineEnd => after.is_none_or(|c| c == '\n'),
        Look::WordBoundary => is_word(before) != is_word(after),
        Look::NotWordBoundary => is_word(before) == is_word(after),
    }
}

/// The threads of one step: a sparse set of program counters, the consuming ones listed.
struct Threads {
    seen: Vec<bool>,
    touched: Vec<usize>,
    list: Vec<usize>,
}

impl Threads {
    fn new(size: usize) -> Self {
        Self { seen: vec![false; size], touched: Vec::new(), list: Vec::new() }
    }
    fn insert(&mut self, pc: usize) -> bool {
        match self.seen.get_mut(pc) {
            Some(seen) if !*seen => {
                *seen = true;
                self.touched.push(pc);
                true
            }
            _ => false,
        }
    }
    fn clear(&mut self) {
        for pc in self.touched.drain(..) {
            self.seen[pc] = false;
        }
        self.list.clear();
    }
}
