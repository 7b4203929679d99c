//! TEMPORARY STUB: replaced by the real extractor.
use url::Url;
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Hop { Link, Embed, Redirect }
impl Hop { pub fn letter(self) -> char { match self { Hop::Link => 'L', Hop::Embed => 'E', Hop::Redirect => 'R' } } }
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outlink { pub url: Url, pub hop: Hop, pub context: &'static str }
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Directives { pub noindex: bool, pub nofollow: bool, pub noarchive: bool, pub none: bool }
impl Directives {
    pub fn merge(&mut self, o: Directives) { self.noindex |= o.noindex; self.nofollow |= o.nofollow; self.noarchive |= o.noarchive; self.none |= o.none; }
    pub fn discard_reason(&self) -> Option<&'static str> { if self.none { Some("none") } else if self.noindex { Some("noindex") } else if self.noarchive { Some("noarchive") } else { None } }
    pub fn follow_links(&self) -> bool { !(self.nofollow || self.none) }
}
#[derive(Debug, Default)]
pub struct Extracted { pub links: Vec<Outlink>, pub directives: Directives }
pub fn extract_html(html: &[u8], _charset: Option<&str>, page_url: &Url, _agent_token: &str) -> Extracted {
    let s = String::from_utf8_lossy(html);
    let mut links = Vec::new();
    for part in s.split("href=\"").skip(1) {
        if let Some(end) = part.find('"') { if let Ok(u) = page_url.join(&part[..end]) { links.push(Outlink { url: u, hop: Hop::Link, context: "a/@href" }); } }
    }
    Extracted { links, directives: Directives::default() }
}
pub fn x_robots_tag(_values: &[&str], _agent_token: &str) -> Directives { Directives::default() }
pub struct Decoded { pub bytes: Vec<u8>, pub capped: bool, pub error: Option<String> }
pub fn decode_body(_ce: Option<&str>, mut body: impl std::io::Read, cap: usize) -> Decoded {
    let mut v = Vec::new();
    let _ = std::io::Read::read_to_end(&mut std::io::Read::take(&mut body, cap as u64), &mut v);
    Decoded { bytes: v, capped: false, error: None }
}
