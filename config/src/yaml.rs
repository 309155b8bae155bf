//! The one place YAML text is parsed.
//!
//! serde_yaml stops at the first error and forgets where a value stood, so the
//! configuration is read from parser events into a small tree of [`Node`]s that
//! remember their line and column. The builder walks that tree and reports every
//! problem with its position. Everything hostile input could use to hurt us is
//! bounded here: nesting depth, the number of nodes (alias bombs), and the
//! number of documents.

use std::collections::HashMap;

use yaml_rust2::parser::{Event, Parser};
use yaml_rust2::scanner::{Marker, TScalarStyle};

/// Deepest nesting accepted; the schema needs six levels.
pub const MAX_DEPTH: usize = 32;

/// Most nodes a document may hold once aliases are expanded.
pub const MAX_NODES: usize = 200_000;

/// A 1-based line and column in the source text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
pub struct Mark {
    /// 1-based line.
    pub line: u32,
    /// 1-based column, in characters.
    pub column: u32,
}

impl Mark {
    fn from_marker(m: &Marker) -> Self {
        Mark {
            line: u32::try_from(m.line()).unwrap_or(u32::MAX),
            column: u32::try_from(m.col().saturating_add(1)).unwrap_or(u32::MAX),
        }
    }
}

/// A value in the document and where it starts.
#[derive(Debug, Clone, PartialEq)]
pub struct Node {
    /// What the value is.
    pub value: Value,
    /// Where it starts.
    pub mark: Mark,
}

/// The shape of a YAML value, before any schema is applied.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// `~`, `null` or nothing at all.
    Null,
    /// A scalar's text. `plain` is false when it was quoted or tagged `!!str`,
    /// which makes `"19092"` a string rather than a number.
    Scalar {
        /// The scalar's text.
        text: String,
        /// Whether the scalar was written without quotes.
        plain: bool,
    },
    /// A sequence.
    Seq(Vec<Node>),
    /// A mapping with string keys, in document order, without duplicates.
    Map(Vec<Entry>),
}

/// One key and value of a mapping.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    /// The key.
    pub key: String,
    /// Where the key starts; errors about the key point here.
    pub key_mark: Mark,
    /// The value.
    pub value: Node,
}

impl Value {
    /// How the value is named in error messages ("expected a string, found a list").
    pub fn describe(&self) -> String {
        match self {
            Value::Null => "null".to_owned(),
            Value::Scalar { text, plain: false } => format!("the string {text:?}"),
            Value::Scalar { text, plain: true } => format!("{text:?}"),
            Value::Seq(_) => "a list".to_owned(),
            Value::Map(_) => "a mapping".to_owned(),
        }
    }
}

/// The document is not well-formed YAML, or exceeds a bound.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct SyntaxError {
    /// Where the problem was found.
    pub mark: Mark,
    /// What is wrong.
    pub message: String,
}

impl SyntaxError {
    fn at(mark: Mark, message: impl Into<String>) -> Self {
        SyntaxError {
            mark,
            message: message.into(),
        }
    }
}

/// A collection being built, with what is needed to finish it.
enum Frame {
    Seq {
        mark: Mark,
        anchor: usize,
        items: Vec<Node>,
    },
    Map {
        mark: Option<Mark>,
        start: Mark,
        anchor: usize,
        entries: Vec<Entry>,
        key: Option<(String, Mark)>,
    },
}

/// An anchored node kept for its aliases, with its size and height so that
/// expanding an alias can be bounded before it is copied.
struct Anchored {
    node: Node,
    nodes: usize,
    height: usize,
}

/// Parses one YAML document. An empty document (nothing but comments or blank
/// lines, or a lone `---`) gives `Ok(None)`.
pub fn parse(text: &str) -> Result<Option<Node>, SyntaxError> {
    Builder::default().run(text)
}

#[derive(Default)]
struct Builder {
    stack: Vec<Frame>,
    anchors: HashMap<usize, Anchored>,
    /// Values in the document so far, aliases expanded.
    nodes: usize,
    documents: usize,
    root: Option<Node>,
}

impl Builder {
    fn run(mut self, text: &str) -> Result<Option<Node>, SyntaxError> {
        let mut parser = Parser::new_from_str(text);
        loop {
            let (event, marker) = parser.next_token().map_err(|e| {
                let at = Mark::from_marker(e.marker());
                self.in_context(text, at, e.info())
            })?;
            let mark = Mark::from_marker(&marker);
            match event {
                Event::StreamEnd => break,
                Event::Nothing | Event::StreamStart | Event::DocumentEnd => {}
                Event::DocumentStart => {
                    self.documents += 1;
                    if self.documents > 1 {
                        return Err(SyntaxError::at(
                            mark,
                            "expected one YAML document, found more than one",
                        ));
                    }
                }
                Event::Scalar(text, style, anchor, tag) => {
                    let is_str_tag = tag
                        .as_ref()
                        .is_some_and(|t| t.handle == "tag:yaml.org,2002:" && t.suffix == "str");
                    let plain = style == TScalarStyle::Plain && !is_str_tag;
                    let value =
                        if plain && matches!(text.as_str(), "" | "~" | "null" | "Null" | "NULL") {
                            Value::Null
                        } else {
                            Value::Scalar { text, plain }
                        };
                    self.finish_node(Node { value, mark }, anchor, 1)?;
                }
                Event::Alias(id) => {
                    let Some(anchored) = self.anchors.get(&id) else {
                        return Err(SyntaxError::at(mark, "alias refers to an unknown anchor"));
                    };
                    if self.stack.len() + anchored.height > MAX_DEPTH {
                        return Err(too_deep(mark));
                    }
                    let nodes = anchored.nodes;
                    self.check_budget(nodes, mark)?;
                    let mut node = anchored.node.clone();
                    node.mark = mark;
                    self.finish_node(node, 0, nodes)?;
                }
                Event::SequenceStart(anchor, _) => {
                    self.open(mark)?;
                    self.stack.push(Frame::Seq {
                        mark,
                        anchor,
                        items: Vec::new(),
                    });
                }
                Event::MappingStart(anchor, _) => {
                    self.open(mark)?;
                    self.stack.push(Frame::Map {
                        mark: None,
                        start: mark,
                        anchor,
                        entries: Vec::new(),
                        key: None,
                    });
                }
                Event::SequenceEnd | Event::MappingEnd => self.close()?,
            }
        }
        Ok(self.root)
    }

    /// A syntax error found at `at`. Inside a flow collection (`[...]` or
    /// `{...}`) the scanner often only notices a missing `]` or `}` lines
    /// later, at the end of the file: the error then points at where the
    /// innermost open flow collection started and names both places, as
    /// libyaml does ("while parsing a flow sequence started at 4:23").
    fn in_context(&self, text: &str, at: Mark, info: &str) -> SyntaxError {
        let open = self.stack.iter().rev().find_map(|frame| {
            let start = match frame {
                Frame::Seq { mark, .. } => *mark,
                Frame::Map { start, .. } => *start,
            };
            match char_at(text, start) {
                Some(FLOW_SEQ) => Some((start, "flow sequence")),
                Some(FLOW_MAP) => Some((start, "flow mapping")),
                _ => None,
            }
        });
        match open {
            Some((start, what)) => SyntaxError::at(
                start,
                format!(
                    "{} at {}:{} (while parsing a {what} started at {}:{})",
                    info.strip_prefix(&format!("while parsing a {what}, "))
                        .unwrap_or(info),
                    at.line,
                    at.column,
                    start.line,
                    start.column
                ),
            ),
            None => SyntaxError::at(at, info),
        }
    }

    fn open(&mut self, mark: Mark) -> Result<(), SyntaxError> {
        if self.stack.len() >= MAX_DEPTH {
            return Err(too_deep(mark));
        }
        self.check_budget(1, mark)?;
        self.nodes += 1;
        Ok(())
    }

    /// Refuses to grow the document past [`MAX_NODES`] values.
    fn check_budget(&self, adding: usize, mark: Mark) -> Result<(), SyntaxError> {
        if self.nodes.saturating_add(adding) > MAX_NODES {
            return Err(SyntaxError::at(
                mark,
                format!("document has more than {MAX_NODES} values once aliases are expanded"),
            ));
        }
        Ok(())
    }

    fn close(&mut self) -> Result<(), SyntaxError> {
        let Some(frame) = self.stack.pop() else {
            return Ok(());
        };
        let (node, anchor) = match frame {
            Frame::Seq {
                mark,
                anchor,
                items,
            } => (
                Node {
                    value: Value::Seq(items),
                    mark,
                },
                anchor,
            ),
            Frame::Map {
                mark,
                start,
                anchor,
                entries,
                ..
            } => (
                Node {
                    value: Value::Map(entries),
                    mark: mark.unwrap_or(start),
                },
                anchor,
            ),
        };
        // Counted when it was opened.
        self.finish_node(node, anchor, 0)
    }

    /// Hands a finished node to its parent (or makes it the root), counting
    /// `added` values against the budget and remembering the node if it
    /// carries an anchor.
    fn finish_node(&mut self, node: Node, anchor: usize, added: usize) -> Result<(), SyntaxError> {
        self.check_budget(added, node.mark)?;
        self.nodes += added;
        if anchor != 0 {
            let (nodes, height) = measure(&node);
            self.anchors.insert(
                anchor,
                Anchored {
                    node: node.clone(),
                    nodes,
                    height,
                },
            );
        }
        match self.stack.last_mut() {
            None => self.root = Some(node),
            Some(Frame::Seq { items, .. }) => items.push(node),
            Some(Frame::Map {
                mark, entries, key, ..
            }) => match key.take() {
                Some((name, key_mark)) => entries.push(Entry {
                    key: name,
                    key_mark,
                    value: node,
                }),
                None => {
                    let Value::Scalar { text, .. } = node.value else {
                        return Err(SyntaxError::at(
                            node.mark,
                            "mapping keys must be plain strings",
                        ));
                    };
                    if let Some(first) = entries.iter().find(|e| e.key == text) {
                        return Err(SyntaxError::at(
                            node.mark,
                            format!(
                                "duplicate key {text:?} (first defined at line {})",
                                first.key_mark.line
                            ),
                        ));
                    }
                    mark.get_or_insert(node.mark);
                    *key = Some((text, node.mark));
                }
            },
        }
        Ok(())
    }
}

/// What opens a flow sequence and a flow mapping.
const FLOW_SEQ: char = '[';
const FLOW_MAP: char = '{';

/// The character at a 1-based line and column, if there is one.
fn char_at(text: &str, mark: Mark) -> Option<char> {
    let line = text
        .lines()
        .nth(usize::try_from(mark.line).ok()?.checked_sub(1)?)?;
    line.chars()
        .nth(usize::try_from(mark.column).ok()?.checked_sub(1)?)
}

fn too_deep(mark: Mark) -> SyntaxError {
    SyntaxError::at(
        mark,
        format!("values are nested deeper than {MAX_DEPTH} levels"),
    )
}

/// Number of nodes in a tree and its height, computed without recursion
/// beyond [`MAX_DEPTH`] (the builder guarantees the bound).
fn measure(node: &Node) -> (usize, usize) {
    match &node.value {
        Value::Null | Value::Scalar { .. } => (1, 0),
        Value::Seq(items) => items.iter().fold((1, 1), |(n, h), c| {
            let (cn, ch) = measure(c);
            (n.saturating_add(cn), h.max(ch + 1))
        }),
        Value::Map(entries) => entries.iter().fold((1, 1), |(n, h), e| {
            let (cn, ch) = measure(&e.value);
            (n.saturating_add(cn).saturating_add(1), h.max(ch + 1))
        }),
    }
}

#[cfg(test)]
mod tests;
