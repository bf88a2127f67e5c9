//! YAML front matter, as Markdown files that describe a skill, a command or an agent begin:
//! a `---` line, YAML, a `---` line, then the body. Read strictly and without aliases (an
//! alias copies its anchored value where it stands: 9 levels of 9 aliases in 386 bytes expand
//! past 2 GiB, and a description needs none).

use yaml_rust2::Yaml;

/// A file's front matter and the body after it.
#[derive(Debug)]
pub(crate) struct FrontMatter {
    /// The YAML mapping (`Yaml::BadValue` for a key that is not there).
    pub(crate) fields: Yaml,
    /// What follows the closing `---` line.
    pub(crate) body: String,
}

impl FrontMatter {
    /// The text of `key`, trimmed; `None` when it is missing, empty or not a scalar.
    pub(crate) fn text(&self, key: &str) -> Option<String> {
        let value = &self.fields[key];
        let text = match value {
            Yaml::String(text) => text.clone(),
            Yaml::Integer(number) => number.to_string(),
            Yaml::Real(number) => number.clone(),
            Yaml::Boolean(flag) => flag.to_string(),
            _ => return None,
        };
        let text = text.trim();
        (!text.is_empty()).then(|| text.to_owned())
    }

    /// The keys it has, as written.
    pub(crate) fn keys(&self) -> Vec<String> {
        match &self.fields {
            Yaml::Hash(hash) => hash
                .keys()
                .map(|key| match key {
                    Yaml::String(key) => key.clone(),
                    other => format!("{other:?}"),
                })
                .collect(),
            _ => Vec::new(),
        }
    }
}

/// `text`'s front matter and body. Without a leading `---` line, `optional` files (commands,
/// whose front matter Claude Code makes optional) are all body; others are refused.
pub(crate) fn parse(text: &str, optional: bool) -> Result<FrontMatter, String> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let Some(rest) = text
        .strip_prefix("---\n")
        .or_else(|| text.strip_prefix("---\r\n"))
    else {
        if optional {
            return Ok(FrontMatter {
                fields: Yaml::Hash(Default::default()),
                body: text.to_owned(),
            });
        }
        return Err(
            "it does not start with a `---` line (YAML front matter with name and description)"
                .into(),
        );
    };
    let (yaml, body) = if let Some(body) = rest.strip_prefix("---") {
        ("", body)
    } else {
        let end = rest
            .find("\n---")
            .ok_or("its front matter has no closing `---` line")?;
        (&rest[..end], &rest[end + 4..])
    };
    // The rest of the closing line (`---` and its line end) is not the body's.
    let body = match body.find('\n') {
        Some(at) if body[..at].trim().is_empty() => &body[at + 1..],
        _ if body.trim().is_empty() => "",
        _ => body,
    };
    let docs = match yaml_docs(yaml) {
        Ok(docs) => docs,
        // Claude Code's own examples write `argument-hint: [pr-number] [priority]`, which
        // YAML refuses; Claude Code reads it as a line of text, and so does golato.
        Err(Refused::NotYaml(error)) => match plain_lines(yaml) {
            Some(fields) => vec![fields],
            None => return Err(format!("its front matter is not YAML ({error})")),
        },
        Err(Refused::Alias(line)) => {
            return Err(format!(
                "its front matter uses a YAML alias (line {line}), which golato does not expand; write the text itself"
            ))
        }
    };
    let fields = match docs.into_iter().next() {
        None => Yaml::Hash(Default::default()),
        Some(hash @ Yaml::Hash(_)) => hash,
        Some(_) => return Err("its front matter is not a mapping of keys to values".into()),
    };
    Ok(FrontMatter {
        fields,
        body: body.to_owned(),
    })
}

enum Refused {
    NotYaml(String),
    Alias(usize),
}

/// `yaml`'s documents, refused when it uses an alias (checked before anything is built).
fn yaml_docs(yaml: &str) -> Result<Vec<Yaml>, Refused> {
    let mut parser = yaml_rust2::parser::Parser::new_from_str(yaml);
    loop {
        match parser.next_token() {
            Ok((yaml_rust2::parser::Event::Alias(_), mark)) => {
                return Err(Refused::Alias(mark.line()))
            }
            Ok((yaml_rust2::parser::Event::StreamEnd, _)) => break,
            Ok(_) => {}
            Err(error) => return Err(Refused::NotYaml(error.to_string())),
        }
    }
    yaml_rust2::YamlLoader::load_from_str(yaml).map_err(|error| Refused::NotYaml(error.to_string()))
}

/// Front matter of `key: value` lines, each value its text as written: `None` unless every
/// line is one (or blank, or a comment).
fn plain_lines(yaml: &str) -> Option<Yaml> {
    let mut hash = yaml_rust2::yaml::Hash::new();
    for line in yaml.lines() {
        let line = line.trim_end_matches('\r');
        if line.trim().is_empty() || line.trim_start().starts_with('#') {
            continue;
        }
        if line.starts_with(char::is_whitespace) {
            return None;
        }
        let (key, value) = line.split_once(':')?;
        if key.is_empty() || key.contains(char::is_whitespace) {
            return None;
        }
        hash.insert(
            Yaml::String(key.to_owned()),
            Yaml::String(value.trim().to_owned()),
        );
    }
    Some(Yaml::Hash(hash))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn front_matter_and_body_are_split_and_a_missing_one_is_all_body_where_optional() {
        let parsed = parse(
            "\u{feff}---\ndescription: Review a PR\nargument-hint: [pr-number]\n---\nReview #$1.\n",
            true,
        )
        .unwrap();
        assert_eq!(parsed.text("description").unwrap(), "Review a PR");
        assert_eq!(parsed.text("argument-hint"), None, "a YAML list is no text");
        assert_eq!(parsed.body, "Review #$1.\n");
        assert_eq!(parsed.keys(), ["description", "argument-hint"]);
        assert_eq!(parse("Just a body", true).unwrap().body, "Just a body");
        assert!(parse("Just a body", false).is_err());
        assert_eq!(parse("---\n---\nbody", true).unwrap().body, "body");
        assert!(parse("---\n- a list\n---\n", true)
            .unwrap_err()
            .contains("mapping"));
        assert!(parse("---\na: [\n  b\n---\n", true)
            .unwrap_err()
            .contains("not YAML"));
        // As Claude Code's documentation writes it: not YAML, read as text.
        let hint = parse(
            "---\nargument-hint: [pr-number] [priority]\ndescription: Fix it\n---\n",
            true,
        )
        .unwrap();
        assert_eq!(
            hint.text("argument-hint").unwrap(),
            "[pr-number] [priority]"
        );
        assert_eq!(hint.text("description").unwrap(), "Fix it");
    }
}
