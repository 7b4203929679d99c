//! Sitemaps (sitemaps.org 0.9): `<urlset>` and `<sitemapindex>` XML, the same gzipped, plain
//! text (one URL a line), and RSS 2.0 and Atom feeds given as sitemaps. Pure: bytes in, the
//! listed locations out.
//!
//! The XML is read by `quick-xml`'s pull parser, which never reads a DTD and never expands an
//! entity a document declares: a reference other than the five XML ones and character
//! references is dropped and counted, so a "billion laughs" file costs what its bytes cost.
//! The protocol's limits hold for every file: at most [`MAX_URLS`] locations are taken, and at
//! most [`MAX_BYTES`] are read once uncompressed (a gzip bomb stops there).

use std::io::Read;

use quick_xml::events::{BytesStart, Event};
use quick_xml::Reader;

/// Most locations one sitemap file may list (sitemaps.org).
pub const MAX_URLS: usize = 50_000;
/// Most bytes one sitemap file may hold, uncompressed (sitemaps.org: 50 MiB).
pub const MAX_BYTES: usize = 50 << 20;

/// The `[discovery]` table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DiscoverySettings {
    /// Look for sitemaps: the `Sitemap:` lines of robots.txt and `/sitemap.xml` of each site
    /// in scope.
    pub sitemaps: bool,
}

impl Default for DiscoverySettings {
    fn default() -> Self {
        DiscoverySettings { sitemaps: true }
    }
}

/// What kind of file it was.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// `<urlset>`: pages.
    UrlSet,
    /// `<sitemapindex>`: more sitemaps.
    Index,
    /// An RSS 2.0 or Atom feed: its items' links are pages.
    Feed,
    /// Plain text, one absolute URL a line.
    Text,
    /// Nothing a sitemap can be (an XML file of another root, say).
    Unknown,
}

/// One listed location.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// The text of `<loc>` (or the feed item's link), trimmed; not yet resolved or checked.
    pub loc: String,
    /// `<lastmod>` (`<pubDate>` of an RSS item, `<updated>` of an Atom entry), as written.
    pub lastmod: Option<String>,
}

/// What one file lists.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sitemap {
    pub kind: Kind,
    pub entries: Vec<Entry>,
    /// Locations past [`MAX_URLS`], counted and not kept.
    pub left_out: usize,
    /// What went wrong, if anything: the entries read before it are still good.
    pub problem: Option<String>,
}

impl Sitemap {
    fn new(kind: Kind) -> Sitemap {
        Sitemap {
            kind,
            entries: Vec::new(),
            left_out: 0,
            problem: None,
        }
    }

    fn push(&mut self, entry: Entry) {
        if entry.loc.is_empty() {
            return;
        }
        if self.entries.len() < MAX_URLS {
            self.entries.push(entry);
        } else {
            self.left_out += 1;
        }
    }

    fn problem(&mut self, why: impl Into<String>) {
        self.problem.get_or_insert_with(|| why.into());
    }
}

/// Reads a sitemap's body (content-decoded already, or gzip as a `.xml.gz` file is). Never
/// fails: a broken file gives what was read before the break and says what broke.
pub fn parse(body: &[u8]) -> Sitemap {
    let (bytes, cut) = uncompressed(body);
    let mut sitemap = match bytes {
        Ok(bytes) => parse_plain(&bytes),
        Err(why) => {
            let mut s = Sitemap::new(Kind::Unknown);
            s.problem(why);
            return s;
        }
    };
    if cut {
        // The reason the rest is missing, over whatever the cut end looked like.
        sitemap.problem = Some(format!(
            "longer than {MAX_BYTES} bytes uncompressed: cut there"
        ));
    }
    sitemap
}

/// The body, gunzipped when it is gzip, cut at [`MAX_BYTES`] (and whether it was cut).
fn uncompressed(body: &[u8]) -> (Result<Vec<u8>, String>, bool) {
    let mut out = Vec::new();
    if !body.starts_with(&[0x1f, 0x8b]) {
        let take = body.len().min(MAX_BYTES);
        out.extend_from_slice(&body[..take]);
        return (Ok(out), body.len() > MAX_BYTES);
    }
    let limit = MAX_BYTES as u64 + 1;
    let read = flate2::read::MultiGzDecoder::new(body)
        .take(limit)
        .read_to_end(&mut out);
    let cut = out.len() > MAX_BYTES;
    out.truncate(MAX_BYTES);
    match read {
        Ok(_) => (Ok(out), cut),
        // A gzip stream cut short still gave its start.
        Err(_) if !out.is_empty() => (Ok(out), cut),
        Err(e) => (Err(format!("not gzip: {e}")), false),
    }
}

/// An uncompressed body: XML when its first character is `<`, else plain text.
fn parse_plain(bytes: &[u8]) -> Sitemap {
    let text = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    let first = text.iter().find(|b| !b.is_ascii_whitespace());
    if first == Some(&b'<') {
        parse_xml(text)
    } else {
        parse_text(text)
    }
}

/// A plain-text sitemap: each line that is an absolute http(s) URL.
fn parse_text(bytes: &[u8]) -> Sitemap {
    let mut sitemap = Sitemap::new(Kind::Text);
    let text = String::from_utf8_lossy(bytes);
    for line in text.lines().map(str::trim).filter(|l| !l.is_empty()) {
        if url::Url::parse(line).is_ok_and(|u| matches!(u.scheme(), "http" | "https")) {
            sitemap.push(Entry {
                loc: line.to_string(),
                lastmod: None,
            });
        }
    }
    if sitemap.entries.is_empty() && sitemap.left_out == 0 {
        sitemap.kind = Kind::Unknown;
        sitemap.problem("no URL in it");
    }
    sitemap
}

/// Which element's text is being read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Field {
    Loc,
    Lastmod,
}

/// The XML walk's state: the root's kind, the open elements' local names, the entry being
/// read and the text of the field being read.
struct XmlWalk {
    sitemap: Sitemap,
    stack: Vec<Vec<u8>>,
    entry: Option<Entry>,
    field: Option<Field>,
    text: String,
    unknown_entities: usize,
}

/// The element that holds one entry, by root kind and the root's local name.
fn entry_element(kind: Kind, root: &[u8]) -> &'static [u8] {
    match (kind, root) {
        (Kind::UrlSet, _) => b"url",
        (Kind::Index, _) => b"sitemap",
        (Kind::Feed, b"feed") => b"entry",
        _ => b"item",
    }
}

/// The root element's kind.
fn kind_of(root: &[u8]) -> Kind {
    match root {
        b"urlset" => Kind::UrlSet,
        b"sitemapindex" => Kind::Index,
        b"rss" | b"feed" | b"rdf" | b"RDF" => Kind::Feed,
        _ => Kind::Unknown,
    }
}

impl XmlWalk {
    fn root(&self) -> &[u8] {
        self.stack.first().map_or(&[], Vec::as_slice)
    }

    /// An element opens (`empty`: and closes at once, as Atom's `<link href=…/>`).
    fn open(&mut self, e: &BytesStart<'_>, empty: bool) {
        let name = e.local_name().as_ref().to_vec();
        if self.stack.is_empty() {
            self.sitemap.kind = kind_of(&name);
        }
        let kind = self.sitemap.kind;
        let holder = entry_element(kind, self.root());
        if kind != Kind::Unknown && name == holder && !empty {
            self.entry = Some(Entry {
                loc: String::new(),
                lastmod: None,
            });
        } else if self.entry.is_some() {
            self.field = match (kind, name.as_slice()) {
                (Kind::Feed, b"link") if self.root() == b"feed" => {
                    self.atom_link(e);
                    None
                }
                (Kind::Feed, b"link") => Some(Field::Loc),
                (Kind::Feed, b"pubDate" | b"updated") => Some(Field::Lastmod),
                (Kind::UrlSet | Kind::Index, b"loc") => Some(Field::Loc),
                (Kind::UrlSet | Kind::Index, b"lastmod") => Some(Field::Lastmod),
                _ => None,
            };
            self.text.clear();
        }
        if !empty {
            self.stack.push(name);
        }
    }

    /// An Atom entry's `<link>`: its `href`, the first one that is the entry itself (no
    /// `rel`, or `rel="alternate"`).
    fn atom_link(&mut self, e: &BytesStart<'_>) {
        let rel = e
            .try_get_attribute("rel")
            .ok()
            .flatten()
            .and_then(|a| a.unescape_value().ok().map(|v| v.into_owned()));
        if rel.as_deref().is_some_and(|r| r != "alternate") {
            return;
        }
        let href = e
            .try_get_attribute("href")
            .ok()
            .flatten()
            .and_then(|a| a.unescape_value().ok().map(|v| v.trim().to_string()));
        if let (Some(entry), Some(href)) = (self.entry.as_mut(), href) {
            if entry.loc.is_empty() {
                entry.loc = href;
            }
        }
    }

    fn close(&mut self) {
        let Some(name) = self.stack.pop() else {
            return;
        };
        let holder = entry_element(self.sitemap.kind, self.root());
        if let Some(field) = self.field.take() {
            let value = self.text.trim().to_string();
            if let Some(entry) = self.entry.as_mut() {
                match field {
                    Field::Loc if entry.loc.is_empty() => entry.loc = value,
                    Field::Lastmod if !value.is_empty() => entry.lastmod = Some(value),
                    _ => {}
                }
            }
        } else if name == holder {
            if let Some(entry) = self.entry.take() {
                self.sitemap.push(entry);
            }
        }
    }

    fn text(&mut self, piece: &str) {
        if self.field.is_some() && self.text.len() < crate::extract::MAX_LINK_VALUE {
            self.text.push_str(piece);
        }
    }

    /// `&name;` or `&#…;`: the five XML entities and character references are read; any
    /// other (a DTD's, never read) is dropped and counted.
    fn reference(&mut self, r: &quick_xml::events::BytesRef<'_>) {
        if let Ok(Some(c)) = r.resolve_char_ref() {
            let mut buf = [0; 4];
            self.text(c.encode_utf8(&mut buf));
            return;
        }
        let known = match r.decode().as_deref() {
            Ok("amp") => "&",
            Ok("lt") => "<",
            Ok("gt") => ">",
            Ok("quot") => "\"",
            Ok("apos") => "'",
            _ => {
                self.unknown_entities += 1;
                return;
            }
        };
        self.text(known);
    }
}

/// An XML sitemap, index or feed.
fn parse_xml(bytes: &[u8]) -> Sitemap {
    let mut reader = Reader::from_reader(bytes);
    reader.config_mut().check_end_names = false;
    let mut walk = XmlWalk {
        sitemap: Sitemap::new(Kind::Unknown),
        stack: Vec::new(),
        entry: None,
        field: None,
        text: String::new(),
        unknown_entities: 0,
    };
    loop {
        match reader.read_event() {
            Ok(Event::Start(e)) => walk.open(&e, false),
            Ok(Event::Empty(e)) => walk.open(&e, true),
            Ok(Event::End(_)) => walk.close(),
            Ok(Event::Text(t)) => walk.text(&t.decode().unwrap_or_default()),
            Ok(Event::CData(t)) => walk.text(&t.decode().unwrap_or_default()),
            Ok(Event::GeneralRef(r)) => walk.reference(&r),
            Ok(Event::Eof) => {
                if let Some(open) = walk.stack.last() {
                    let open = String::from_utf8_lossy(open).into_owned();
                    walk.sitemap
                        .problem(format!("the file ends inside <{open}>"));
                }
                break;
            }
            // Declarations, DTDs (never read), comments, processing instructions.
            Ok(_) => {}
            Err(e) => {
                let at = reader.buffer_position();
                walk.sitemap.problem(format!("bad XML at byte {at}: {e}"));
                break;
            }
        }
        if walk.sitemap.kind == Kind::Unknown && !walk.stack.is_empty() {
            break;
        }
    }
    let mut sitemap = walk.sitemap;
    if sitemap.kind == Kind::Unknown {
        let root = String::from_utf8_lossy(walk.stack.first().map_or(&[], Vec::as_slice));
        sitemap.problem(format!("not a sitemap (root element {root:?})"));
    }
    if walk.unknown_entities > 0 {
        sitemap.problem(format!(
            "{} references to undeclared or DTD entities, not expanded",
            walk.unknown_entities
        ));
    }
    sitemap
}

#[cfg(test)]
#[path = "sitemap_tests.rs"]
mod tests;
