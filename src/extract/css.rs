//! CSS → the URLs a stylesheet makes the browser load: fonts, background images, imported
//! stylesheets.
//!
//! Stylesheets come from three places, all handled here: `text/css` responses, `<style>`
//! elements and `style="…"` attributes (the last two handed over by `crate::extract`). What a
//! stylesheet references is always a page requisite (hop `E`), as in Heritrix's `ExtractorCSS`.
//!
//! Tokenizing is done by `cssparser` (Servo's CSS tokenizer, already in the build through
//! `lol_html`): comments, strings with their escapes, `url(…)` with or without quotes and
//! broken tokens follow the CSS Syntax spec, which a regex cannot do (`/* url(a) */`,
//! `"\"url(b)"`, `url(c\)d)`). On top of the tokens this module looks for:
//!
//! - `url(x)`, `url("x")`, `url('x')` anywhere (property values, `src:` lists of `@font-face`,
//!   `@import url(…)`, `@namespace` is skipped as it names no resource);
//! - `@import "x"` (a bare string after `@import`);
//! - strings inside `image-set()` / `-webkit-image-set()` (`image-set("a.png" 1x, "b.png" 2x)`).
//!
//! `data:` URIs and empty references are skipped; relative references are resolved against the
//! stylesheet's URL (files) or the page's base URL (inline styles), which is what browsers do.

use std::collections::HashSet;

use cssparser::{Parser, ParserInput, Token};
use url::Url;

use crate::extract::{Hop, Outlink};

/// Most references taken from one stylesheet: a generated sheet with millions of `url()`s is
/// a trap, not a design; its first references are still archived.
pub const MAX_CSS_REFS: usize = 10_000;

/// Blocks nested deeper than this are skipped without looking inside: real stylesheets nest
/// a few levels (`@media { @supports { a { b: url() } } }`), and the walk recurses per level.
const MAX_DEPTH: usize = 32;

/// Where a reference was found (the `context` of its outlink).
pub const CTX_URL: &str = "css/url()";
pub const CTX_IMPORT: &str = "css/@import";
pub const CTX_IMAGE_SET: &str = "css/image-set()";

/// One reference as written in the stylesheet (escapes undone), not yet resolved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CssRef {
    pub value: String,
    pub context: &'static str,
}

/// The references of a stylesheet, in order, duplicates kept, at most `cap` of them.
/// Never fails: a broken stylesheet yields what was found before and after the broken part,
/// as a browser's error recovery would.
pub fn css_refs(css: &str, cap: usize) -> Vec<CssRef> {
    let mut input = ParserInput::new(css);
    let mut parser = Parser::new(&mut input);
    let mut refs = Vec::new();
    walk(&mut parser, &mut refs, cap, 0, false);
    refs
}

/// Outlinks of a stylesheet's text, all embeds, resolved against `base`: http(s) only,
/// fragments dropped, first occurrence wins, `data:` skipped.
pub fn css_links(css: &str, base: &Url) -> Vec<Outlink> {
    let mut links = Vec::new();
    let mut seen = HashSet::new();
    add_links(css, base, &mut links, &mut seen);
    links
}

/// Adds the outlinks of `css` to `links`, skipping URLs in `seen` (shared with the page's
/// other links when the stylesheet is inline).
pub fn add_links(css: &str, base: &Url, links: &mut Vec<Outlink>, seen: &mut HashSet<Url>) {
    for r in css_refs(css, MAX_CSS_REFS) {
        if let Some(url) = resolve(base, &r.value) {
            if seen.insert(url.clone()) {
                links.push(Outlink {
                    url,
                    hop: Hop::Embed,
                    context: r.context,
                });
            }
        }
    }
}

/// A stylesheet body as text: a UTF-8 BOM is dropped and invalid bytes replaced (URLs in
/// stylesheets are ASCII in practice; a legacy-encoded sheet keeps its ASCII URLs intact).
pub fn decode(bytes: &[u8]) -> std::borrow::Cow<'_, str> {
    String::from_utf8_lossy(bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes))
}

fn resolve(base: &Url, value: &str) -> Option<Url> {
    let value = value.trim();
    if value.is_empty() || value.starts_with('#') {
        return None; // `url(#filter)` points into the document itself
    }
    let mut url = base.join(value).ok()?;
    if !matches!(url.scheme(), "http" | "https") {
        return None; // data:, javascript:, about:…
    }
    url.set_fragment(None);
    Some(url)
}

/// Walks the tokens of one block level; `in_image_set` makes bare strings references.
fn walk(
    p: &mut Parser<'_, '_>,
    refs: &mut Vec<CssRef>,
    cap: usize,
    depth: usize,
    in_image_set: bool,
) {
    let mut after_import = false;
    while refs.len() < cap {
        let token = match p.next_including_whitespace() {
            Ok(t) => t.clone(),
            Err(_) => break,
        };
        let was_import = std::mem::take(&mut after_import);
        match token {
            Token::WhiteSpace(_) => after_import = was_import,
            Token::UnquotedUrl(u) => push(refs, &u, CTX_URL),
            Token::QuotedString(s) if was_import => push(refs, &s, CTX_IMPORT),
            Token::QuotedString(s) if in_image_set => push(refs, &s, CTX_IMAGE_SET),
            Token::AtKeyword(k) if k.eq_ignore_ascii_case("import") => after_import = true,
            Token::Function(name) if depth < MAX_DEPTH => {
                let image_set = name.eq_ignore_ascii_case("image-set")
                    || name.eq_ignore_ascii_case("-webkit-image-set");
                if name.eq_ignore_ascii_case("url") || name.eq_ignore_ascii_case("src") {
                    // `url( "x" )`: the quoted form is a function holding one string.
                    nested(p, |inner| {
                        if let Ok(Token::QuotedString(s)) = inner.next().cloned() {
                            push(refs, &s, CTX_URL);
                        }
                    });
                } else {
                    nested(p, |inner| walk(inner, refs, cap, depth + 1, image_set));
                }
            }
            Token::ParenthesisBlock | Token::SquareBracketBlock | Token::CurlyBracketBlock
                if depth < MAX_DEPTH =>
            {
                nested(p, |inner| walk(inner, refs, cap, depth + 1, false));
            }
            _ => {}
        }
    }
}

/// Runs `f` inside the block just opened; whatever it leaves unread is skipped.
fn nested<'i>(p: &mut Parser<'i, '_>, f: impl FnOnce(&mut Parser<'i, '_>)) {
    let _ = p.parse_nested_block(|inner| -> Result<(), cssparser::ParseError<'i, ()>> {
        f(inner);
        // Consume the rest, so the block counts as parsed whatever `f` read.
        while inner.next_including_whitespace_and_comments().is_ok() {}
        Ok(())
    });
}

fn push(refs: &mut Vec<CssRef>, value: &str, context: &'static str) {
    let value = value.trim();
    if !value.is_empty()
        && !value
            .get(..5)
            .is_some_and(|s| s.eq_ignore_ascii_case("data:"))
    {
        refs.push(CssRef {
            value: value.to_string(),
            context,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn values(css: &str) -> Vec<String> {
        css_refs(css, MAX_CSS_REFS)
            .into_iter()
            .map(|r| r.value)
            .collect()
    }

    #[test]
    fn url_forms_quoted_and_not() {
        let css = r#"a{background:url(a.png)} b{background:url( "b.png" )} c{background:URL('c.png')}
                     d{background-image:url(  d e.png  )}"#;
        assert_eq!(values(css), ["a.png", "b.png", "c.png"]);
        // `url(d e.png)` is a bad-url token (a space inside an unquoted url): skipped, as a
        // browser does.
    }

    #[test]
    fn imports_both_forms() {
        let css = "@import \"one.css\";\n@import url(two.css) screen;\n@IMPORT 'three.css' print;\n@import url(\"four.css\");";
        let refs = css_refs(css, 10);
        let got: Vec<(&str, &str)> = refs.iter().map(|r| (r.value.as_str(), r.context)).collect();
        assert_eq!(
            got,
            [
                ("one.css", CTX_IMPORT),
                ("two.css", CTX_URL),
                ("three.css", CTX_IMPORT),
                ("four.css", CTX_URL)
            ]
        );
    }

    #[test]
    fn font_face_src_lists_and_image_set() {
        let css = r#"@font-face { font-family: X; src: url(x.woff2) format("woff2"), url('x.woff') format("woff"), local("X"); }
            .h { background-image: image-set("h1.png" 1x, url(h2.png) 2x);
                 background: -webkit-image-set('w1.png' 1x, 'w2.png' 2x); }"#;
        assert_eq!(
            values(css),
            ["x.woff2", "x.woff", "h1.png", "h2.png", "w1.png", "w2.png"]
        );
    }

    #[test]
    fn comments_strings_escapes_and_data_ignored() {
        let css = r#"/* url(commented.png) @import "no.css"; */
            a { content: "url(in-string.png)"; background: url(data:image/png;base64,AAAA) }
            b { background: url("DATA:image/gif,x") }
            c { background: url(esc\)aped.png) }
            d { background: url("q\"uote.png") }
            e { filter: url(#blur) }"#;
        assert_eq!(values(css), ["esc)aped.png", "q\"uote.png", "#blur"]);
    }

    #[test]
    fn nested_rules_and_broken_css() {
        let css =
            "@media screen { @supports (display:grid) { a { background: url(deep.png) } } }\n\
                   b { background: url(ok.png); color: ; }} ) ] c { background: url(after.png) }\n\
                   d { background: url(\"unterminated.png)";
        // A string left open at the end of the sheet ends there (CSS Syntax: EOF closes it).
        assert_eq!(
            values(css),
            ["deep.png", "ok.png", "after.png", "unterminated.png)"]
        );
    }

    #[test]
    fn deep_nesting_and_caps_are_bounded() {
        let deep = format!("{}url(x.png){}", "(".repeat(100_000), ")".repeat(100_000));
        assert!(values(&deep).is_empty());
        let many = "a{background:url(p.png)}".repeat(50);
        assert_eq!(css_refs(&many, 7).len(), 7);
    }

    #[test]
    fn links_resolve_against_the_base_and_dedupe() {
        let base = Url::parse("http://s.test/css/site.css").unwrap();
        let css =
            "@import 'more.css'; a{background:url(../img/a.png#x)} b{background:url(/img/a.png)} \
                   c{background:url(//cdn.test/f.woff2)} d{background:url(javascript:alert(1))}";
        let got: Vec<(String, Hop, &str)> = css_links(css, &base)
            .into_iter()
            .map(|l| (l.url.to_string(), l.hop, l.context))
            .collect();
        assert_eq!(
            got,
            [
                (
                    "http://s.test/css/more.css".to_string(),
                    Hop::Embed,
                    CTX_IMPORT
                ),
                ("http://s.test/img/a.png".to_string(), Hop::Embed, CTX_URL),
                ("http://cdn.test/f.woff2".to_string(), Hop::Embed, CTX_URL),
            ]
        );
    }

    #[test]
    fn bom_and_invalid_bytes_decode() {
        assert_eq!(decode(b"\xEF\xBB\xBFa{}"), "a{}");
        assert!(decode(b"a{background:url(x.png)}\xff").contains("url(x.png)"));
    }
}
