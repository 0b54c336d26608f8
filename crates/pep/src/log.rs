//! Structured logging to stderr, one logfmt line per event:
//! `ts=1718000000.123 level=info msg=conn_closed id=7 client=... bytes_up=...`.
//!
//! A tiny hand-written logger rather than a logging framework: the proxy logs a handful of event
//! kinds, and logfmt lines are easy to grep and to parse from `tcplab emulate`. The `Logger` is a
//! small `Copy` value handed to every task (no global state). Each line is written with a single
//! `write_all` on a locked stderr so lines from different tasks never interleave.

use std::fmt::{self, Display, Write as _};
use std::io::Write as _;
use std::time::{SystemTime, UNIX_EPOCH};

/// Log level; a line is printed when its level is at most the configured one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    Error,
    Warn,
    Info,
    Debug,
}

impl Level {
    pub fn parse(s: &str) -> Option<Level> {
        match s.to_ascii_lowercase().as_str() {
            "error" => Some(Level::Error),
            "warn" | "warning" => Some(Level::Warn),
            "info" => Some(Level::Info),
            "debug" | "trace" => Some(Level::Debug),
            _ => None,
        }
    }

    fn as_str(self) -> &'static str {
        match self {
            Level::Error => "error",
            Level::Warn => "warn",
            Level::Info => "info",
            Level::Debug => "debug",
        }
    }
}

/// Writes logfmt lines to stderr at or below `level`.
#[derive(Debug, Clone, Copy)]
pub struct Logger {
    pub level: Level,
}

/// Writes `v` as a logfmt value, quoting it when needed.
fn push_value(out: &mut String, v: &str) {
    let needs_quotes = v.is_empty() || v.chars().any(|c| c == ' ' || c == '=' || c == '"');
    if needs_quotes {
        out.push('"');
        for c in v.chars() {
            if c == '"' || c == '\\' {
                out.push('\\');
            }
            out.push(c);
        }
        out.push('"');
    } else {
        out.push_str(v);
    }
}

/// Formats one logfmt line (without the trailing newline).
pub fn format_line(level: Level, msg: &str, fields: &[(&str, &dyn Display)]) -> String {
    let ts = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0);
    let mut line = String::with_capacity(128);
    let _ = write!(line, "ts={ts:.3} level={} msg=", level.as_str());
    push_value(&mut line, msg);
    let mut buf = String::new();
    for (k, v) in fields {
        buf.clear();
        let _ = write!(buf, "{v}");
        line.push(' ');
        line.push_str(k);
        line.push('=');
        push_value(&mut line, &buf);
    }
    line
}

impl Logger {
    pub fn enabled(&self, level: Level) -> bool {
        level <= self.level
    }

    /// Logs one event with its key/value fields.
    pub fn log(&self, level: Level, msg: &str, fields: &[(&str, &dyn Display)]) {
        if !self.enabled(level) {
            return;
        }
        let mut line = format_line(level, msg, fields);
        line.push('\n');
        // A closed stderr must not bring the proxy down.
        let _ = std::io::stderr().lock().write_all(line.as_bytes());
    }

    /// Logs at `info` whatever the configured level: the few lines a caller needs (where the
    /// proxy listens, why and how it stopped).
    pub fn always(&self, msg: &str, fields: &[(&str, &dyn Display)]) {
        let mut line = format_line(Level::Info, msg, fields);
        line.push('\n');
        let _ = std::io::stderr().lock().write_all(line.as_bytes());
    }

    pub fn error(&self, msg: &str, fields: &[(&str, &dyn Display)]) {
        self.log(Level::Error, msg, fields)
    }
    pub fn warn(&self, msg: &str, fields: &[(&str, &dyn Display)]) {
        self.log(Level::Warn, msg, fields)
    }
    pub fn info(&self, msg: &str, fields: &[(&str, &dyn Display)]) {
        self.log(Level::Info, msg, fields)
    }
    pub fn debug(&self, msg: &str, fields: &[(&str, &dyn Display)]) {
        self.log(Level::Debug, msg, fields)
    }
}

/// Displays an `Option` as its value or `-`.
pub struct Opt<'a, T: Display>(pub &'a Option<T>);

impl<T: Display> Display for Opt<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Some(v) => v.fmt(f),
            None => f.write_str("-"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn format_line_quotes_values_with_spaces() {
        let line = format_line(
            Level::Info,
            "conn_closed",
            &[("id", &7), ("err", &"Connection reset by peer")],
        );
        assert!(line.contains(" level=info msg=conn_closed id=7 err=\"Connection reset by peer\""));
    }

    #[test]
    fn levels_order_from_error_to_debug() {
        let l = Logger { level: Level::Warn };
        assert!(l.enabled(Level::Error) && l.enabled(Level::Warn));
        assert!(!l.enabled(Level::Info) && !l.enabled(Level::Debug));
    }
}
