//! `archiver about`: the page webmasters read when they find our User-Agent in their logs.
//!
//! Every crawler in Heritrix's tradition publishes one. It is written from the profile itself
//! (delays, backoff, refusals, robots.txt group, what is kept), so it cannot drift from what
//! the crawler really does with that profile.

use crate::config::Profile;
use crate::politeness::{BudgetKind, MIN_DELAY_FLOOR};

/// The output format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Markdown,
    Html,
}

/// A piece of the page. Inline text may hold `code` spans and [text](url) links.
enum Block {
    Title(String),
    Heading(String),
    Para(String),
    List(Vec<String>),
    Code(String),
}

/// The page for a profile, in the given format.
pub fn page(p: &Profile, format: Format) -> String {
    let blocks = blocks(p);
    match format {
        Format::Markdown => markdown(&blocks),
        Format::Html => html(&blocks, &title(p)),
    }
}

/// The contact URL inside a User-Agent: the first http(s) URL, without closing punctuation.
pub fn contact_url(user_agent: &str) -> Option<&str> {
    let start = user_agent
        .find("https://")
        .or_else(|| user_agent.find("http://"))?;
    let rest = &user_agent[start..];
    let end = rest.find([')', ' ', ';', '"']).unwrap_or(rest.len());
    Some(&rest[..end])
}

fn title(p: &Profile) -> String {
    format!("About the {} web crawler", p.agent_token)
}

fn secs(d: std::time::Duration) -> String {
    let s = d.as_secs_f64();
    if s.fract() == 0.0 {
        format!("{s:.0} s")
    } else {
        format!("{s} s")
    }
}

fn blocks(p: &Profile) -> Vec<Block> {
    let contact = contact_url(&p.user_agent).unwrap_or("");
    let who = if p.operator.is_empty() {
        "its operator".to_string()
    } else {
        p.operator.clone()
    };
    let mut b = vec![
        Block::Title(title(p)),
        Block::Para(format!(
            "If you see this User-Agent in your server's logs, it is an archival web crawler run \
             by {who}:"
        )),
        Block::Code(p.user_agent.clone()),
        Block::Para(format!(
            "It preserves public web pages as they were, for a web archive, in the WARC format \
             web archives use. This page is meant to be published at [{contact}]({contact}), the \
             address in the User-Agent, and was written by `archiver about` from the very \
             settings the crawler runs with."
        )),
        Block::Heading("Who runs it".into()),
    ];
    let mut who_list = vec![format!("Contact: [{contact}]({contact})")];
    if !p.operator.is_empty() {
        who_list.insert(0, format!("Operator: {}", p.operator));
    }
    who_list.push(format!("Crawl: `{}`", p.name));
    b.push(Block::List(who_list));
    b.extend(pace(p));
    b.extend(robots(p));
    b.extend(kept(p));
    b.extend(opting_out(p));
    b.extend(unrestricted(p));
    b
}

/// How fast it goes, and what makes it slow down or stop.
fn pace(p: &Profile) -> Vec<Block> {
    let pol = &p.politeness;
    let min = pol.min_delay.as_secs_f64();
    let floor = if min < MIN_DELAY_FLOOR {
        format!(
            "{} s ({} s is used only for servers on the crawler's own machine)",
            MIN_DELAY_FLOOR, min
        )
    } else {
        secs(pol.min_delay)
    };
    let per = match pol.budget {
        BudgetKind::Ip => "server address (host names on one IP address share it)",
        BudgetKind::Host => "host name",
    };
    vec![
        Block::Heading("How often it asks".into()),
        Block::List(vec![
            format!("One request at a time per {per}, never two at once."),
            format!(
                "Between the end of one answer and the next request to the same server: at \
                 least {floor}; {} times as long as the last answer took, when that is more (up \
                 to {}); or your robots.txt `Crawl-delay`, when that is more (up to {}).",
                pol.delay_factor,
                secs(pol.max_delay),
                secs(pol.max_crawl_delay)
            ),
            "A 429, a 5xx answer or a failed connection doubles the pause (up to 30 minutes); \
             each normal answer halves it again. A `Retry-After` header (seconds or a date, \
             up to 30 minutes) sets the pause itself."
                .to_string(),
            format!(
                "A URL that got a 429 or a 5xx is tried again later, at most {} more times.",
                pol.max_retries
            ),
            format!(
                "After {} refusals in a row (403, 429, a bot challenge or a captcha page) the \
                 crawler leaves the site alone for {} hours, twice as long each further time, and \
                 comes back slower (2×, 4×, … the delays).",
                pol.refusals.threshold,
                pol.refusals.away.as_secs_f64() / 3600.0
            ),
            "It sends no cookies, logs in nowhere, fills in no forms and only ever sends GET."
                .to_string(),
        ]),
    ]
}

/// The robots.txt group and meta tags it obeys.
fn robots(p: &Profile) -> Vec<Block> {
    let token = &p.robots_token;
    vec![
        Block::Heading("robots.txt".into()),
        Block::Para(format!(
            "It reads `/robots.txt` before anything else on a site and follows RFC 9309: the \
             group for `User-agent: {token}` if there is one, else the `*` group (`*` and `$` \
             wildcards, the longest match wins). It reads robots.txt again every 24 hours. To \
             keep it out of a folder and slow it down:"
        )),
        Block::Code(format!(
            "User-agent: {token}\nDisallow: /private/\nCrawl-delay: 10"
        )),
        Block::Para("To keep it out of the whole site:".into()),
        Block::Code(format!("User-agent: {token}\nDisallow: /")),
        Block::Para(
            "A robots.txt that cannot be fetched (5xx, no connection) means nothing is fetched \
             until it can be; a 404 means everything may be."
                .into(),
        ),
        Block::Heading("Meta robots tags".into()),
        Block::List(vec![
            format!(
                "`<meta name=\"robots\" content=\"noindex\">`, `noarchive` or `none` (also \
                 `<meta name=\"{}\" …>` and the `X-Robots-Tag` header): the page is discarded, \
                 nothing of it is kept.",
                p.agent_token
            ),
            "`nofollow` (or `none`): the links of the page are not followed.".into(),
        ]),
    ]
}

/// What is kept of what it fetches.
fn kept(p: &Profile) -> Vec<Block> {
    let mimes: Vec<String> = p.rules.keep_mime.iter().map(|m| format!("`{m}`")).collect();
    vec![
        Block::Heading("What it keeps".into()),
        Block::Para(format!(
            "Each answer it keeps is stored exactly as your server sent it (status line, \
             headers, body), with the request it sent, in WARC files. It keeps HTML pages and \
             these types: {}. It follows links within the sites it was asked to crawl, at most \
             {} links away from where it started.",
            if mimes.is_empty() {
                "none besides HTML".to_string()
            } else {
                mimes.join(", ")
            },
            p.scope.max_hops
        )),
    ]
}

fn opting_out(p: &Profile) -> Vec<Block> {
    let contact = contact_url(&p.user_agent).unwrap_or("");
    let mut items = vec![
        format!(
            "robots.txt, as above: the `{}` group or `*`.",
            p.robots_token
        ),
        format!(
            "Or write to [{contact}]({contact}): your site (a host, a domain, or a folder) goes \
             on the crawl's opt-out list. Nothing it covers is requested again — for a whole \
             host not even robots.txt — and what was already archived is removed from the WARC \
             files or hidden from replay."
        ),
    ];
    let entries = p.optout.entries().len();
    if entries > 0 {
        items.push(format!(
            "This crawl honours {entries} opt-out entries at the moment."
        ));
    }
    vec![Block::Heading("How to opt out".into()), Block::List(items)]
}

fn unrestricted(p: &Profile) -> Vec<Block> {
    let token = &p.robots_token;
    let text = if p.obey_robots {
        format!(
            "This crawl obeys robots.txt. Its operator may also make runs that do not (for \
             example legal deposit, when a law asks for it); such a run says so in its \
             User-Agent, `{token}-unrestricted/…`, keeps the same pace, still honours \
             `Crawl-delay` from the `{token}` group and meta robots tags, and records its \
             written reason in every WARC file."
        )
    } else {
        format!(
            "This run does NOT obey robots.txt Disallow rules, for this reason: {}. Its \
             User-Agent says so (`{}`). It keeps the same pace, still honours `Crawl-delay` from \
             the `{token}` group and meta robots tags, and records the reason in every WARC \
             file.",
            p.unrestricted_reason, p.agent_token
        )
    };
    vec![
        Block::Heading("Unrestricted runs".into()),
        Block::Para(text),
    ]
}

// ---- rendering ----------------------------------------------------------------------------

fn markdown(blocks: &[Block]) -> String {
    let mut out = String::new();
    for b in blocks {
        match b {
            Block::Title(t) => out.push_str(&format!("# {t}\n\n")),
            Block::Heading(t) => out.push_str(&format!("## {t}\n\n")),
            Block::Para(t) => out.push_str(&format!("{t}\n\n")),
            Block::List(items) => {
                for i in items {
                    out.push_str(&format!("- {i}\n"));
                }
                out.push('\n');
            }
            Block::Code(c) => out.push_str(&format!("```\n{c}\n```\n\n")),
        }
    }
    out
}

fn html(blocks: &[Block], title: &str) -> String {
    let mut out = format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <title>{}</title>\n<style>body{{font-family:sans-serif;max-width:46em;margin:2em \
         auto;padding:0 1em;line-height:1.5}}pre,code{{background:#f4f4f4}}pre{{padding:.6em}}\
         </style>\n</head>\n<body>\n",
        escape(title)
    );
    for b in blocks {
        match b {
            Block::Title(t) => out.push_str(&format!("<h1>{}</h1>\n", inline(t))),
            Block::Heading(t) => out.push_str(&format!("<h2>{}</h2>\n", inline(t))),
            Block::Para(t) => out.push_str(&format!("<p>{}</p>\n", inline(t))),
            Block::List(items) => {
                out.push_str("<ul>\n");
                for i in items {
                    out.push_str(&format!("<li>{}</li>\n", inline(i)));
                }
                out.push_str("</ul>\n");
            }
            Block::Code(c) => out.push_str(&format!("<pre>{}</pre>\n", escape(c))),
        }
    }
    out.push_str("</body>\n</html>\n");
    out
}

/// Inline markup to HTML: `code` spans and [text](url) links; everything else escaped.
fn inline(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while !rest.is_empty() {
        let code = rest.find('`');
        let link = rest.find('[');
        match (code, link) {
            (Some(c), l) if l.is_none_or(|l| c < l) => {
                out.push_str(&escape(&rest[..c]));
                let after = &rest[c + 1..];
                match after.find('`') {
                    Some(end) => {
                        out.push_str(&format!("<code>{}</code>", escape(&after[..end])));
                        rest = &after[end + 1..];
                    }
                    None => {
                        out.push_str(&escape(&rest[c..]));
                        rest = "";
                    }
                }
            }
            (_, Some(l)) => {
                out.push_str(&escape(&rest[..l]));
                let after = &rest[l + 1..];
                let parsed = after.split_once("](").and_then(|(label, tail)| {
                    let (url, tail) = tail.split_once(')')?;
                    Some((label, url, tail))
                });
                match parsed {
                    Some((label, url, tail)) if !label.contains('[') => {
                        out.push_str(&format!(
                            "<a href=\"{}\">{}</a>",
                            escape(url),
                            escape(label)
                        ));
                        rest = tail;
                    }
                    _ => {
                        out.push('[');
                        rest = after;
                    }
                }
            }
            _ => {
                out.push_str(&escape(rest));
                rest = "";
            }
        }
    }
    out
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn profile(extra: &str) -> Profile {
        let src = format!(
            "[crawl]\nname = \"t\"\nseeds = [\"http://127.0.0.1:8080/\"]\n[identity]\n\
             user_agent = \"archiver/0.1 (+https://example.org/bot)\"\noperator = \"The <Archive>\"\n\
             [politeness]\nmin_delay = 7.5\nmax_delay = 40.0\n{extra}"
        );
        Profile::parse(Path::new("/p/site.toml"), &src).unwrap()
    }

    #[test]
    fn the_page_says_what_the_profile_does() {
        let p = profile("");
        let md = page(&p, Format::Markdown);
        for want in [
            "archiver/0.1 (+https://example.org/bot)",
            "User-agent: archiver\nDisallow: /private/\nCrawl-delay: 10",
            "at least 7.5 s",
            "up to 40 s",
            "noindex",
            "nofollow",
            "published at [https://example.org/bot]",
            "The <Archive>",
            "archiver-unrestricted/",
        ] {
            assert!(md.contains(want), "{want:?} missing from:\n{md}");
        }
        let html = page(&p, Format::Html);
        assert!(html.starts_with("<!DOCTYPE html>"));
        assert!(html.contains("The &lt;Archive&gt;"), "escaped");
        assert!(html.contains("<a href=\"https://example.org/bot\">https://example.org/bot</a>"));
        assert!(html.contains("<code>Crawl-delay</code>"));
        assert!(!html.contains("<Archive>"));
    }

    #[test]
    fn an_unrestricted_run_says_so_and_why() {
        let p = profile("[robots]\nobey = false\nreason = \"legal deposit\"\n");
        let md = page(&p, Format::Markdown);
        assert!(md.contains("does NOT obey robots.txt"), "{md}");
        assert!(md.contains("legal deposit"));
        assert!(md.contains("archiver-unrestricted/0.1"));
    }

    #[test]
    fn contact_is_found_in_the_user_agent() {
        assert_eq!(
            contact_url("a/1 (+https://x.org/c; bot)"),
            Some("https://x.org/c")
        );
        assert_eq!(contact_url("a/1"), None);
        assert_eq!(inline("a [b"), "a [b");
        assert_eq!(inline("`x"), "`x");
    }
}
