//! A bash command line read with bash's own grammar (tree-sitter-bash) into the commands it
//! runs, so a rule judges each on its own: `git status && rm -rf ~` is two commands, and
//! `echo $(rm -rf ~)`, `f() { rm -rf ~; }`, `coproc rm -rf ~` and `bash -lc 'rm -rf ~'` all run
//! `rm -rf ~`.
//!
//! Two questions get two answers, because a wrong answer costs differently:
//!
//! - **What may a deny or ask rule see?** As much as can be found: every command anywhere in
//!   the tree, each program also by its base name (`/bin/rm`), every word after a wrapper
//!   (`timeout -s KILL 5 rm`, `env --chdir . rm`) as a possible start of the command it runs,
//!   the lines of `bash -c`, `eval`, `env -S`, `watch`, and `find -exec`. Seeing too much only
//!   asks.
//! - **May an allow rule allow the line?** Only a *plain* one: words (quoted without
//!   expansions), `;`, `&&`, `||`, `|`, newlines, comments, here-documents without expansions,
//!   and redirections of descriptors or to `/dev/null`. Anything else (`$x`, `$(…)`, `$'…'`,
//!   assignments, functions, `if`, subshells, `&`, a redirection to a file, a parse error) and
//!   the line is asked. Each command is matched as written (`./git` is that file, not git),
//!   and past the few wrappers whose every option is known (`timeout 5 git status`).

mod programs;
mod words;

use std::cell::RefCell;

use tree_sitter::{Node, Parser, Tree};

use words::Word;

/// How deep `bash -c` and `eval` lines may nest before the line stops being plain.
pub(crate) const MAX_DEPTH: usize = 8;

/// How many bytes of command text one line's forms may hold: a line built to multiply them
/// (`env env env … rm`) stops being read there, and is not plain.
const MAX_FORM_BYTES: usize = 1 << 20;

/// The longest line given to the grammar.
const MAX_PARSED: usize = 32 * 1024;

/// The longest misread line whose pieces are given to the grammar again.
const MAX_REPARSED: usize = 4 * 1024;

/// One way of naming a command, as a rule's pattern is matched against it: its words, unquoted,
/// joined by single spaces (`git status`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Form {
    /// The words.
    pub(crate) text: String,
    /// Whether an allow rule may allow the command by this form (a deny or ask rule looks at
    /// every form).
    pub(crate) allowable: bool,
}

/// One simple command and the forms it is judged by.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct Command {
    /// As written first.
    pub(crate) forms: Vec<Form>,
    /// Found only by reading what may not run as a command (a script's name and arguments
    /// after `bash`, a word rejoined across a line continuation): a deny or ask rule sees it,
    /// an allow rule need not allow it.
    pub(crate) seen_only: bool,
}

/// The commands a command line runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Commands {
    /// Every command found, outer ones before the ones they hold.
    pub(crate) commands: Vec<Command>,
    /// Whether the line is plain (see the module's documentation): only then may an allow rule
    /// allow it.
    pub(crate) plain: bool,
}

/// Reads `line` into its commands.
pub(crate) fn commands(line: &str) -> Commands {
    let mut reader = Reader {
        found: Commands {
            commands: Vec::new(),
            plain: true,
        },
        bytes: 0,
        seen_only: false,
    };
    reader.line(line, 0);
    // bash joins a line continuation before it reads words (`r\<newline>m f` runs rm): what
    // the grammar read as two words is seen joined too.
    if line.contains("\\\n") && line.len() <= MAX_PARSED {
        reader.seen_only(|reader| reader.line(&line.replace("\\\n", ""), 1));
    }
    reader.found
}

thread_local! {
    /// A parser per thread: making one costs more than a short line's parse.
    static PARSER: RefCell<Option<Parser>> = const { RefCell::new(None) };
}

fn parse(line: &str) -> Option<Tree> {
    PARSER.with(|cell| {
        let mut parser = cell.try_borrow_mut().ok()?;
        if parser.is_none() {
            let mut made = Parser::new();
            made.set_language(&tree_sitter_bash::LANGUAGE.into()).ok()?;
            *parser = Some(made);
        }
        parser.as_mut()?.parse(line, None)
    })
}

/// Named nodes a plain line may hold.
const PLAIN: &[&str] = &[
    "program",
    "list",
    "pipeline",
    "command",
    "command_name",
    "word",
    "number",
    "raw_string",
    "string",
    "string_content",
    "concatenation",
    "comment",
    "redirected_statement",
    "file_descriptor",
    "heredoc_redirect",
    "heredoc_start",
    "heredoc_body",
    "heredoc_content",
    "heredoc_end",
    "herestring_redirect",
];

/// bash's reserved words: never a command's name.
const RESERVED: &[&str] = &[
    "if", "then", "else", "elif", "fi", "case", "esac", "for", "select", "while", "until", "do",
    "done", "in", "function", "{", "}", "!", "[[", "]]",
];

/// Operators between the commands of a plain line.
const SEPARATORS: &[&str] = &[";", "&&", "||", "|", "|&", "\n"];

struct Reader {
    found: Commands,
    /// Bytes of form text so far.
    bytes: usize,
    /// Whether the commands read now are seen only ([`Command::seen_only`]).
    seen_only: bool,
}

impl Reader {
    /// Runs `read` with the commands it finds marked seen only.
    fn seen_only(&mut self, read: impl FnOnce(&mut Reader)) {
        let before = std::mem::replace(&mut self.seen_only, true);
        read(self);
        self.seen_only = before;
    }

    /// Reads a whole command line, `depth` lines deep.
    fn line(&mut self, line: &str, depth: usize) {
        if depth > MAX_DEPTH || self.bytes > MAX_FORM_BYTES {
            self.found.plain = false;
            return;
        }
        // tree-sitter's error recovery grows faster than the line (a 34 KB line it cannot
        // read takes 150 ms, 340 KB 1.5 s): a longer line is read crudely, and not plain.
        if line.len() > MAX_PARSED {
            self.found.plain = false;
            self.fragments(line, depth);
            return;
        }
        let Some(tree) = parse(line) else {
            self.found.plain = false;
            self.fragments(line, depth);
            return;
        };
        let root = tree.root_node();
        let mut misread = root.has_error();
        // Iterative, with the parents' kinds kept here: a line of fifty thousand nested
        // parentheses must take neither the stack nor quadratic time (`Node::parent` walks
        // down from the root).
        let mut cursor = root.walk();
        let mut parents: Vec<&'static str> = Vec::new();
        loop {
            let node = cursor.node();
            self.judge(node, parents.last().copied().unwrap_or_default(), line);
            match node.kind() {
                "command" => misread |= self.command(node, line, depth),
                // tree-sitter-bash glues what follows `<<EOF` on its line into the delimiter
                // (`EOF;`) or hangs it on the here-document as words (`<<EOF; rm f` inside a
                // `case` arm): bash runs it as commands, so the line is read again in pieces.
                "heredoc_start" => misread |= !plain_delimiter(words::source(node, line)),
                "heredoc_redirect" => misread |= heredoc_words(node).next().is_some(),
                "declaration_command" | "unset_command" => {
                    let text = words::source(node, line).to_owned();
                    self.push_command(vec![Form {
                        text,
                        allowable: false,
                    }]);
                }
                _ => {}
            }
            if cursor.goto_first_child() {
                parents.push(node.kind());
                continue;
            }
            loop {
                if cursor.goto_next_sibling() {
                    break;
                }
                if !cursor.goto_parent() {
                    if misread {
                        self.found.plain = false;
                        self.fragments(line, depth);
                    }
                    return;
                }
                parents.pop();
            }
        }
    }

    /// What a deny or ask rule sees of a line the grammar could not read whole (bash reads
    /// some that tree-sitter-bash does not, such as `cat <<EOF; rm f`): its text with `$'…'`
    /// decoded, quotes and backslashes dropped, cut at every operator, each word of each piece
    /// taken as a possible start of a command.
    fn fragments(&mut self, line: &str, depth: usize) {
        let crude: String = words::decode_ansi_c(&line.replace("\\\n", ""))
            .chars()
            .filter(|c| !matches!(c, '\'' | '"' | '\\'))
            .collect();
        for piece in crude.split(|c: char| ";&|\n(){}`<>$".contains(c)) {
            let words: Vec<String> = piece
                .split_whitespace()
                .skip_while(|word| RESERVED.contains(word))
                .map(str::to_owned)
                .collect();
            // Quotes are gone, so which words belong together is unknown: any word may start
            // a command (`bash -c 'env -u X rm f'` is `bash -c env -u X rm f` here).
            let mut forms = Vec::new();
            for at in 0..words.len() {
                if !words[at].starts_with('-') {
                    self.seen(&words[at..], depth, false, &mut forms);
                }
            }
            if !forms.is_empty() {
                self.push_command(forms);
            }
            if self.bytes > MAX_FORM_BYTES {
                return;
            }
        }
        // And each piece of the line as written, cut at its operators, read again by the
        // grammar: what the misreading hid (`cat <<EOF; eval "$'\x72'm f"`) is read whole.
        if line.len() > MAX_REPARSED {
            return;
        }
        for piece in line.split([';', '&', '|', '\n']) {
            if piece.len() < line.len() && !piece.trim().is_empty() {
                self.line(piece, depth + 1);
            }
        }
    }

    /// Whether `node` keeps the line plain.
    fn judge(&mut self, node: Node<'_>, parent: &str, line: &str) {
        let plain = if node.is_missing() || node.is_error() {
            false
        } else if node.is_named() {
            match node.kind() {
                "file_redirect" => plain_redirect(node, line),
                kind => PLAIN.contains(&kind),
            }
        } else {
            let token = node.kind();
            match parent {
                "program" | "list" | "pipeline" | "heredoc_redirect" => {
                    SEPARATORS.contains(&token) || matches!(token, "<<" | "<<-")
                }
                "string" => token == "\"",
                "file_redirect" | "herestring_redirect" => true,
                _ => false,
            }
        };
        if !plain {
            self.found.plain = false;
        }
    }

    /// A simple command: its words, then its forms. Returns whether the grammar misread the
    /// line around it: a reserved word in a command's place (tree-sitter-bash takes
    /// `coproc if true; then rm f; fi` for commands named `coproc` and `then`).
    fn command(&mut self, node: Node<'_>, line: &str, depth: usize) -> bool {
        let mut assigned = false;
        let mut words = Vec::new();
        // What the command reads on its standard input from the line itself: a shell runs it.
        let mut fed = Vec::new();
        let mut cursor = node.walk();
        for child in node.named_children(&mut cursor) {
            match child.kind() {
                "variable_assignment" => assigned = true,
                "heredoc_redirect" | "herestring_redirect" => fed.push(child),
                "file_redirect" | "comment" => {}
                _ => words.push(words::value(child, line)),
            }
        }
        // The grammar may hang a here-document on the statement around a list
        // (`git status && bash <<EOF`): any such statement's is taken as fed to this command.
        let mut around = node.parent();
        while let Some(parent) = around {
            match parent.kind() {
                "list" | "pipeline" => around = parent.parent(),
                "redirected_statement" => {
                    let mut cursor = parent.walk();
                    let redirects: Vec<Node<'_>> = parent
                        .named_children(&mut cursor)
                        .filter(|child| {
                            matches!(child.kind(), "heredoc_redirect" | "herestring_redirect")
                        })
                        .collect();
                    // `cat <<EOF a b` runs `cat a b`: the words are this command's when the
                    // statement is its own.
                    if parent.id() == node.parent().map_or(0, |own| own.id()) {
                        for heredoc in &redirects {
                            words.extend(
                                heredoc_words(*heredoc).map(|word| words::value(word, line)),
                            );
                        }
                    }
                    fed.extend(redirects);
                    break;
                }
                _ => break,
            }
        }
        let reserved = words
            .iter()
            .take_while(|word| RESERVED.contains(&word.text.as_str()))
            .count();
        words.drain(..reserved);
        // `coproc` and `time` are reserved words too, which the grammar takes for commands:
        // what follows them is misread when it is a compound command.
        let compound_after = matches!(
            words.first().map(|word| word.text.as_str()),
            Some("coproc" | "time")
        ) && words
            .get(1)
            .is_some_and(|word| RESERVED.contains(&word.text.as_str()));
        let misread = reserved > 0 || compound_after;
        if words.is_empty() {
            return misread;
        }
        let mut forms = Vec::new();
        allowable_forms(&words, assigned, &mut forms);
        let texts: Vec<String> = words.into_iter().map(|word| word.text).collect();
        self.seen(&texts, depth, true, &mut forms);
        self.push_command(forms);
        // `bash <<EOF … EOF`, `sh <<< 'rm f'`: the shell runs what it is fed.
        if texts
            .first()
            .is_some_and(|program| programs::reads_lines_on_stdin(program))
        {
            for input in fed {
                self.line(&fed_text(input, line), depth + 1);
            }
        }
        misread
    }

    /// Adds the forms only a deny or ask rule sees of the command `texts`, and reads the lines
    /// it runs. `wrapped`: whether each word after a wrapper is taken as the start of a
    /// command (false when `texts` is itself such a start: its outer wrapper took them all).
    fn seen(&mut self, texts: &[String], depth: usize, wrapped: bool, forms: &mut Vec<Form>) {
        // Assignments before a command (seen in pieces of a misread line) are not its program.
        let assignments = texts
            .iter()
            .take_while(|word| programs::is_assignment(word))
            .count();
        let texts = &texts[assignments..];
        let Some(program) = texts.first() else {
            return;
        };
        if self.bytes > MAX_FORM_BYTES {
            self.found.plain = false;
            return;
        }
        let joined = texts.join(" ");
        let base = programs::base_name(program);
        if base != program {
            self.add_form(forms, format!("{base}{}", &joined[program.len()..]));
        }
        self.add_form(forms, joined);
        if wrapped && programs::is_wrapper(program) {
            for at in 1..texts.len() {
                let word = &texts[at];
                if !word.starts_with('-') && !programs::is_assignment(word) {
                    self.seen(&texts[at..], depth, false, forms);
                    if base == "xargs" {
                        // xargs adds words of its input: `xargs rm` runs `rm f`.
                        self.add_form(forms, format!("{} …", texts[at..].join(" ")));
                    }
                }
            }
        }
        for range in programs::find_exec(texts) {
            self.seen(&texts[range], depth + 1, true, forms);
        }
        if let Some(runs) = programs::runs_lines(program) {
            if base == "eval" {
                self.line(&texts[1..].join(" "), depth + 1);
                return;
            }
            let lines = programs::shell_lines(texts);
            for (at, word) in texts.iter().enumerate().skip(1) {
                // A wrapper's plain words are already the starts of commands above.
                if runs == programs::Lines::Spaced && !word.contains(char::is_whitespace) {
                    continue;
                }
                // `-c LINE`, `-S LINE`, `--split-string=LINE`, `'rm f'`, `-S'rm f'`.
                let line = match word.strip_prefix('-') {
                    None => word.as_str(),
                    Some(_) if !word.contains(char::is_whitespace) => continue,
                    Some(_) => match word.split_once('=') {
                        Some((_, value)) => value,
                        None => word.get(2..).unwrap_or_default(),
                    },
                };
                // A script's name and arguments (`bash x.sh a`) are read too, in case, but
                // need no allow of their own.
                match lines.as_ref().is_none_or(|lines| lines.contains(&at)) {
                    true => self.line(line, depth + 1),
                    false => self.seen_only(|reader| reader.line(line, depth + 1)),
                }
            }
        }
    }

    /// Adds a form only a deny or ask rule sees, once.
    fn add_form(&mut self, forms: &mut Vec<Form>, text: String) {
        if !forms.iter().any(|form| form.text == text) {
            self.bytes += text.len();
            forms.push(Form {
                text,
                allowable: false,
            });
        }
    }

    fn push_command(&mut self, forms: Vec<Form>) {
        self.bytes += forms.iter().map(|form| form.text.len()).sum::<usize>();
        self.found.commands.push(Command {
            forms,
            seen_only: self.seen_only,
        });
    }
}

/// The forms an allow rule may match `words` by: as written, and past each wrapper that
/// changes nothing (`timeout 5 git status` is also `git status`). Not allowable when a word's
/// value depends on the run, an assignment comes first, the program is a pattern, or the
/// program's own options run commands (`git -c`).
fn allowable_forms(words: &[Word], assigned: bool, forms: &mut Vec<Form>) {
    let known = !assigned && words.iter().all(|word| word.known);
    let texts: Vec<String> = words.iter().map(|word| word.text.clone()).collect();
    let mut start = 0;
    while let Some(rest) = texts.get(start..).filter(|rest| !rest.is_empty()) {
        let program_globbed = words.get(start).is_some_and(|word| word.globbed);
        forms.push(Form {
            text: rest.join(" "),
            allowable: known && !program_globbed && !programs::runs_its_own(rest),
        });
        match programs::transparent(rest) {
            Some(offset) => start += offset,
            None => break,
        }
    }
}

/// Whether a here-document's delimiter, as the grammar took it, is one word bash would take
/// whole: an operator or a blank in it means the grammar read past where bash stops.
fn plain_delimiter(delimiter: &str) -> bool {
    !delimiter.is_empty()
        && !delimiter.contains(|c: char| ";&|()<>".contains(c) || c.is_whitespace())
}

/// The words the grammar hangs on a here-document after its delimiter (`cat <<EOF a b`):
/// bash gives them to the command, or runs them after an operator the grammar lost.
fn heredoc_words<'tree>(heredoc: Node<'tree>) -> impl Iterator<Item = Node<'tree>> {
    let mut cursor = heredoc.walk();
    let children: Vec<Node<'tree>> = heredoc.named_children(&mut cursor).collect();
    children.into_iter().filter(|child| {
        !matches!(
            child.kind(),
            "heredoc_start"
                | "heredoc_body"
                | "heredoc_end"
                | "command"
                | "pipeline"
                | "list"
                | "redirected_statement"
                | "file_redirect"
                | "comment"
        )
    })
}

/// The text a here-document (its body) or a here-string (its word's value) feeds a command.
fn fed_text(input: Node<'_>, line: &str) -> String {
    let mut cursor = input.walk();
    let children: Vec<Node<'_>> = input.named_children(&mut cursor).collect();
    match input.kind() {
        "heredoc_redirect" => children
            .iter()
            .filter(|child| child.kind() == "heredoc_body")
            .map(|body| words::source(*body, line))
            .collect::<Vec<_>>()
            .join("\n"),
        _ => children
            .last()
            .map(|word| words::value(*word, line).text)
            .unwrap_or_default(),
    }
}

/// A redirection a plain line may hold: of a descriptor (`2>&1`, `<&-`), or to `/dev/null`.
/// Anything else writes or reads a file the rule never named.
fn plain_redirect(node: Node<'_>, line: &str) -> bool {
    let mut operator = "";
    let mut destinations = Vec::new();
    let mut cursor = node.walk();
    for child in node.children(&mut cursor) {
        match (child.is_named(), child.kind()) {
            (false, token) => operator = token,
            (true, "file_descriptor") => {}
            (true, _) => destinations.push(child),
        }
    }
    match (operator, destinations.as_slice()) {
        ("<&-" | ">&-", []) => true,
        (">&" | "<&", [destination]) => {
            destination.kind() == "number" || words::source(*destination, line) == "-"
        }
        (_, [destination]) => {
            destination.kind() == "word" && words::source(*destination, line) == "/dev/null"
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests;
